"""The box's money (ncui/sim/money.py): dollars from integer micro-credits, exactly, and the box's own, never
ncui's client money (an independent oracle)."""

from __future__ import annotations

import ast
from decimal import Decimal
from pathlib import Path

import ncui.sim
from ncui.sim.money import dollars, to_cent, ucredits, usd


def test_figures_are_to_the_cent_half_even_from_the_integer() -> None:
    assert usd(0) == "$0.00"
    assert usd(1_234_567_890) == "$1,234.57"
    assert usd(320_000_000) == "$320.00"
    # a half cent: half-even on the integer (a float's repr decides 339.185 one way and 116.235 the other)
    assert usd(339_185_000) == "$339.18" and usd(116_235_000) == "$116.24"
    assert usd(15_000) == "$0.02" and usd(5_000) == "$0.00" and usd(5_001) == "$0.01"
    assert usd(-1_500_000) == "$-1.50"


def test_dollars_read_and_written_exactly() -> None:
    assert ucredits(4.10) == 4_100_000 != int(4.10 * 1e6)
    assert ucredits(250) == 250_000_000 and ucredits(60.74) == 60_740_000
    assert dollars(4_105_000) == Decimal("4.105")
    assert to_cent(3_604_999.7) == 3_600_000 and to_cent(3_605_000.2) == 3_610_000


def test_the_box_never_imports_the_clients_money() -> None:
    root = Path(ncui.sim.__file__).parent
    hits = []
    for f in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.ImportFrom):
                depth = len(f.relative_to(root).parts)  # ncui/sim/x.py: 1; ncui/sim/kube/x.py: 2
                mod = node.module or ""
                if (node.level == depth + 1 and mod.split(".")[0] == "money") or mod == "ncui.money":
                    hits.append(f"{f.relative_to(root)}:{node.lineno}")
                if node.level == depth + 1 and not mod and any(a.name == "money" for a in node.names):
                    hits.append(f"{f.relative_to(root)}:{node.lineno}")
            elif isinstance(node, ast.Import) and any(a.name == "ncui.money" for a in node.names):
                hits.append(f"{f.relative_to(root)}:{node.lineno}")
    assert not hits, hits
