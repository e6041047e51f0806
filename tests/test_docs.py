"""docs/architecture.md is a map of the code as it is: every file or folder it names in backticks exists, and
its table of views is the App's (a module renamed or gone, a view added, fails here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
NAMED = re.compile(r"`([A-Za-z_][\w./-]*?(?:\.py|\.tcss|\.md|/))(?::[^`]*)?`")


def _where(name: str) -> list[Path]:
    """Where a name the doc gives can be: from the repository, from ncui/, or inside one of ncui's folders (the
    doc says `client.py` under ncui/api's heading)."""
    places = [ROOT / name, ROOT / "ncui" / name]
    places += [d / name for d in (ROOT / "ncui").rglob("*") if d.is_dir() and "__pycache__" not in d.parts]
    return [p for p in places if p.exists()]


def test_every_file_the_architecture_page_names_exists():
    text = DOC.read_text(encoding="utf-8")
    names = sorted({m.group(1) for m in NAMED.finditer(text)})
    assert len(names) > 30, names  # (the page names the code it maps)
    gone = [n for n in names if not _where(n)]
    assert not gone, f"docs/architecture.md names files that are not in the repository: {gone}"


def test_the_architecture_page_lists_every_view():
    from ncui.app import VIEWS

    text = DOC.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d) \| ([A-Z][a-z]+):", text, re.M)
    assert [(int(k), t) for k, t in rows] == [(i + 1, title) for i, (_, title, _, _) in enumerate(VIEWS)], rows
    words = {5: "five", 6: "six", 7: "seven"}
    assert f"the {words[len(VIEWS)]} views" in text
