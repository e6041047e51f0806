"""Textual stays in the UI layer: api/, kube/, remote/, sim/ and the store never import it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ncui

ROOT = Path(ncui.__file__).parent
LOWER = [
    "ncui.api.client",
    "ncui.api.models",
    "ncui.sim.app",
    "ncui.sim.server",
    "ncui.sim.world",
    "ncui.config",
    "ncui.remote.node",
    "ncui.logfollow",
    "ncui.lifecycle",
    "ncui.flows.fresh",
    "ncui.meters",
]


def test_lower_layers_do_not_import_textual():
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in LOWER)
        + "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"textual imported below the UI: {out.stdout}"


def test_no_textual_in_lower_layer_sources():
    offenders = []
    for sub in ["api", "kube", "remote", "sim", "flows"]:
        for f in (ROOT / sub).rglob("*.py"):
            for line in f.read_text().splitlines():
                s = line.strip()
                if s.startswith(("import textual", "from textual")):
                    offenders.append(f"{f.relative_to(ROOT)}: {s}")
    store = ROOT / "store.py"
    if store.exists() and "textual" in store.read_text():
        offenders.append("store.py")
    assert offenders == []
