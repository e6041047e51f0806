"""The layers, over ncui's full import graph: every module under ncui/, imports inside functions included.

Each ``.py`` file is parsed with ``ast`` (never imported: a module that is not loaded by a test is checked too);
relative imports are resolved against the module's package; ``importlib.import_module("x")`` and
``__import__("x")`` with a literal name count as imports; only what sits under ``if TYPE_CHECKING:`` (for the
type checker alone) is left out. The rules (docs/architecture.md, issue 22):

- Only the UI — ``ncui/app.py``, ``ncui/cli.py``, ``ncui/__main__.py``, ``ncui/screens/**``, ``ncui/widgets/**`` —
  imports ``textual`` (or ``textual_plotext``), ``ncui.screens`` or ``ncui.widgets``; nothing else imports the UI
  modules either (so no module outside the UI reaches Textual through one of them).
- The views (``ncui/screens/**``, ``ncui/widgets/**``) never import the box (``ncui.sim``).
- The box (``ncui/sim/**``) never imports ncui's client side, but for the imports listed in ``SIM_TO_CLIENT``
  (today's): a new one fails. Of ncui's Kubernetes client (``ncui/kube/**``) it imports nothing at all, with no
  exception (issue 23: the box's tables, kinds and engines are its own; the kubeconfig it serves may still name
  the ``ncui.kube.signin`` plugin, a command string, not an import).
- No import loop (``../shared/tools/import_cycles.py``'s count, computed here the same way).
- History is told (issue 22): every client ncui builds is given ``history=``, and no new code calls the history
  module's transitional global (``HISTORY_GLOBAL_CALLERS``: what the flows move still converts).

The checks are written once over a package's folder (``graph``) and tried first on a small package made for the
test, so a check that stopped seeing an import fails here rather than passing quietly.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import ncui

ROOT = Path(ncui.__file__).parent

UI_TOP = ("app", "cli", "__main__")  # ncui/app.py, cli.py, __main__.py
VIEWS = ("screens", "widgets")
THIRD_PARTY_UI = ("textual", "textual_plotext")

# The box's imports of ncui's client side as they are today (none may be added; none may be of ``kube``):
# (the box's module, the client-side module it imports).
SIM_TO_CLIENT = {
    ("sim.app", "api.models"),
}


# ---- the graph ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    importer: str  # the importing module (``ncui.limits``)
    path: Path
    line: int
    text: str  # the statement as written
    names: tuple[str, ...]  # every dotted name it may load: ``from a.b import c`` → ``a.b``, ``a.b.c``
    targets: tuple[str, ...]  # the package's own modules it loads (as import_cycles.py resolves them)

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root.parent)}:{self.line} `{self.text}`"


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Every module of the package at ``root``: dotted name → (file, is a package's __init__)."""
    mods: dict[str, tuple[Path, bool]] = {}
    for f in sorted(root.rglob("*.py")):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (f, is_pkg)
    return mods


def _typing_only(tree: ast.AST) -> set[int]:
    """The nodes under ``if TYPE_CHECKING:`` / ``if typing.TYPE_CHECKING:`` (their ``else`` runs: not these)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                for sub in node.body:
                    skip.update(id(x) for x in ast.walk(sub))
    return skip


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _longest_module(name: str, mods: dict[str, tuple[Path, bool]]) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, path: Path, is_pkg: bool, mods: dict[str, tuple[Path, bool]]) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))  # (a file that does not parse fails the test)
    skip = _typing_only(tree)
    out: list[Import] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        names: list[str] = []
        targets: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
            targets = [t for n in names if (t := _longest_module(n, mods))]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                assert node.level - 1 < len(base), f"{path}:{node.lineno}: a relative import above the package"
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names = [prefix] + [f"{prefix}.{a.name}" for a in node.names if a.name != "*"]
            for a in node.names:
                whole = f"{prefix}.{a.name}"
                t = whole if whole in mods else _longest_module(prefix, mods)
                if t:
                    targets.append(t)
        elif (
            isinstance(node, ast.Call)
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__"))
            )
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
        ):
            names = [node.args[0].value]
            targets = [t for n in names if (t := _longest_module(n, mods))]
        else:
            continue
        targets = [t for t in dict.fromkeys(targets) if t != module]
        out.append(Import(module, path, node.lineno, ast.unparse(node), tuple(names), tuple(targets)))
    return out


def graph(root: Path) -> list[Import]:
    """Every import of every module of the package at ``root``."""
    mods = _modules(root)
    return [imp for m, (f, is_pkg) in mods.items() for imp in imports_of(m, f, is_pkg, mods)]


# ---- the rules ----------------------------------------------------------------------------------------------


def ui_offences(root: Path, imports: list[Import]) -> list[str]:
    """Imports of Textual or of the UI by a module outside the UI."""
    pkg = root.name
    ui = [f"{pkg}.{t}" for t in UI_TOP + VIEWS]
    banned = [*THIRD_PARTY_UI, *ui]
    out = []
    for imp in imports:
        if any(_within(imp.importer, u) for u in ui):
            continue
        hit = sorted({b for n in imp.names for b in banned if _within(n, b)})
        if hit:
            out.append(
                f"{imp.where(root)} imports {', '.join(hit)}: only {pkg}/app.py, cli.py, __main__.py, screens/ and "
                "widgets/ may import textual, textual_plotext or the UI modules"
            )
    return out


def view_offences(root: Path, imports: list[Import]) -> list[str]:
    """Imports of the box by a view."""
    pkg = root.name
    views = [f"{pkg}.{v}" for v in VIEWS]
    return [
        f"{imp.where(root)} imports the box ({pkg}.sim): a view never does (it talks to the service as a client)"
        for imp in imports
        if any(_within(imp.importer, v) for v in views) and any(_within(n, f"{pkg}.sim") for n in imp.names)
    ]


def sim_offences(root: Path, imports: list[Import], allowed: set[tuple[str, str]]) -> list[str]:
    """Imports of the client side by the box, but for ``allowed`` ((box module, client module), names without
    the package's)."""
    pkg = root.name
    out = []
    for imp in imports:
        if not _within(imp.importer, f"{pkg}.sim"):
            continue
        for t in imp.targets:
            if t == pkg or _within(t, f"{pkg}.sim"):  # (the package's __init__: its version, nothing of the client)
                continue
            pair = (imp.importer.removeprefix(pkg + "."), t.removeprefix(pkg + "."))
            if pair not in allowed:
                out.append(
                    f"{imp.where(root)} imports {t}: the box never uses ncui's client side to say what a server "
                    "would (today's exceptions: SIM_TO_CLIENT)"
                )
    return out


def sim_kube_offences(root: Path, imports: list[Import]) -> list[str]:
    """Imports of ncui's Kubernetes client (``<pkg>.kube``, any module under it) by the box: none is allowed."""
    pkg = root.name
    return [
        f"{imp.where(root)} imports {', '.join(hit)}: the box works out what an API server says from the object "
        f"alone, never with {pkg}/kube/ (its status strings, kinds, chat requests are the client's, under test)"
        for imp in imports
        if _within(imp.importer, f"{pkg}.sim")
        and (
            hit := sorted({t for t in imp.targets if _within(t, f"{pkg}.kube")})
            or sorted({n for n in imp.names if _within(n, f"{pkg}.kube")})
        )
    ]


def loops(imports: list[Import]) -> list[list[str]]:
    """The import loops: each strongly connected set of two or more modules (Tarjan's), sorted."""
    edges: dict[str, set[str]] = {}
    for imp in imports:
        edges.setdefault(imp.importer, set()).update(imp.targets)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10_000))
    try:
        for v in sorted(edges):
            if v not in index:
                strong(v)
    finally:
        sys.setrecursionlimit(old)
    return sorted(found)


# ---- the checks tried on a package made for the test ----------------------------------------------------------


def _package(tmp: Path, files: dict[str, str]) -> Path:
    root = tmp / "pkg"
    for name, text in files.items():
        f = root / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_the_checks_see_every_way_of_importing(tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "app.py": "import textual.app\nfrom .screens import main\nimport pkg.sim.world\n",
            "limits.py": "def f():\n    import textual.widget\n",  # inside a function
            "store.py": "from pkg.widgets.field import *\n",
            "money.py": "async def g():\n    from .widgets import field\n",
            "config.py": "from . import widgets\n",
            "memory.py": "import importlib\n\ndef h():\n    return importlib.import_module('textual_plotext')\n",
            "report.py": "from .app import run\n",  # the UI, and through it Textual
            "typed.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import textual\nelse:\n    import json\n"
            ),
            "widgets/__init__.py": "",
            "widgets/field.py": "from textual.widget import Widget\nfrom ..sim import world\n",
            "screens/main.py": "from textual.screen import Screen\n\ndef f():\n    from pkg.sim.world import World\n",
            "sim/__init__.py": "from .. import __name__ as _n\n",
            "sim/world.py": "from ..store import x\nfrom ..money import y\nimport pkg.sim.app\n",
            "sim/app.py": "from ..limits import z\n",
        },
    )
    imports = graph(root)
    ui = ui_offences(root, imports)
    assert [u.split(" imports ")[0] for u in ui] == [
        "pkg/config.py:1 `from . import widgets`",
        "pkg/limits.py:2 `import textual.widget`",
        "pkg/memory.py:4 `importlib.import_module('textual_plotext')`",
        "pkg/money.py:2 `from .widgets import field`",
        "pkg/report.py:1 `from .app import run`",
        "pkg/store.py:1 `from pkg.widgets.field import *`",
    ], ui
    views = view_offences(root, imports)
    assert [v.split(" imports ")[0] for v in views] == [
        "pkg/screens/main.py:4 `from pkg.sim.world import World`",
        "pkg/widgets/field.py:2 `from ..sim import world`",
    ], views
    sim = sim_offences(root, imports, {("sim.world", "money")})
    assert [s.split(" imports ")[0] for s in sim] == [
        "pkg/sim/app.py:1 `from ..limits import z`",
        "pkg/sim/world.py:1 `from ..store import x`",
    ], sim
    assert sim_kube_offences(root, imports) == []
    (root / "kube").mkdir()
    (root / "kube" / "__init__.py").write_text("")
    (root / "kube" / "status.py").write_text("def pod_status(p): ...\n")
    (root / "sim" / "tables.py").write_text(
        "from ..kube.status import pod_status\n"
        "def row(p):\n    from pkg.kube import status\n"
        "def other():\n    import pkg.kube\n"
        "def later():\n    import importlib\n    return importlib.import_module('pkg.kube.status')\n"
        "KUBECONFIG_COMMAND = ['-m', 'pkg.kube.signin']\n"  # a command string names it: no import
    )
    (root / "kube" / "chat.py").write_text("import pkg.sim.world\n")  # (the client importing the box: not this rule)
    kube = sim_kube_offences(root, graph(root))
    assert [k.split(" imports ")[0] for k in kube] == [
        "pkg/sim/tables.py:1 `from ..kube.status import pod_status`",
        "pkg/sim/tables.py:3 `from pkg.kube import status`",
        "pkg/sim/tables.py:5 `import pkg.kube`",
        "pkg/sim/tables.py:8 `importlib.import_module('pkg.kube.status')`",
    ], kube
    (root / "store.py").write_text("import pkg.money\n")
    (root / "money.py").write_text("def f():\n    from . import store\n")  # a loop through a function's import
    assert loops(graph(root)) == [["pkg.money", "pkg.store"]]


# ---- the rules on ncui --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ncui_imports() -> list[Import]:
    imports = graph(ROOT)
    # the graph is ncui's whole one: a module's top-level and function-level imports both seen
    assert any(i.importer == "ncui.app" and "textual.app" in i.names for i in imports)
    assert any(i.importer == "ncui.backend" and "ncui.sim.server" in i.targets for i in imports)  # (in a function)
    return imports


def test_only_the_ui_imports_textual_or_the_ui(ncui_imports):
    offences = ui_offences(ROOT, ncui_imports)
    assert offences == [], "\n".join(offences)


def test_the_views_never_import_the_box(ncui_imports):
    offences = view_offences(ROOT, ncui_imports)
    assert offences == [], "\n".join(offences)


def test_the_box_imports_no_more_of_the_client_than_today(ncui_imports):
    offences = sim_offences(ROOT, ncui_imports, SIM_TO_CLIENT)
    assert offences == [], "\n".join(offences)


def test_the_box_never_imports_ncui_kube(ncui_imports):
    # (issue 23: the box's Kubernetes tables were ncui's own status code, so kubectl's READY/STATUS was checked
    # against itself; no exception is listed, and SIM_TO_CLIENT may not list one either)
    offences = sim_kube_offences(ROOT, ncui_imports)
    assert offences == [], "\n".join(offences)
    assert not [pair for pair in SIM_TO_CLIENT if _within(pair[1], "kube")], SIM_TO_CLIENT


def test_no_import_loop_outside_the_screens(ncui_imports):
    outside = [c for c in loops(ncui_imports) if not all(_within(m, "ncui.screens") for m in c)]
    assert outside == [], "import loops (imports inside functions count): " + "; ".join(map(", ".join, outside))


def test_no_import_loop_at_all(ncui_imports):
    found = loops(ncui_imports)
    assert found == [], "import loops (imports inside functions count): " + "; ".join(map(", ".join, found))


# ---- the history's transitional module global ---------------------------------------------------------------

# ncui/history.py's stateful module functions over the global ``_active`` (TRANSITIONAL, issue 22): the clients are
# given the History; these are what still call the global, in the App's mixins the flows move converts. None may
# be added; the lead deletes the global once this is empty.
HISTORY_GLOBAL = {"activate", "active", "note", "kubeconfig_for", "with_kubeconfig", "with_kubeconfigs"}
HISTORY_GLOBAL |= {"applied", "applied_step", "stopped"}
HISTORY_GLOBAL_CALLERS: set[tuple[str, str]] = set()  # (issue 22: the global is gone; none may come back)


def history_global_uses(root: Path, files: list[Path]) -> set[tuple[str, str]]:
    """(file, function) for each use of the package's history module's stateful functions in ``files``:
    ``history.note(…)`` through ``from .. import history`` (or ``import ncui.history as h``), or ``from
    ncui.history import note``. Files are named from ``root``'s parent (``ncui/app.py``, ``tests/test_x.py``)."""
    pkg = root.name
    found: set[tuple[str, str]] = set()
    for f in files:
        if f == root / "history.py":
            continue
        name = str(f.relative_to(root.parent))
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_pkg else parts)  # (a test's: never imported relatively)
        tree = ast.parse(f.read_text(encoding="utf-8"), str(f))
        bound: set[str] = set()  # the names the history module is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                bound.update(a.asname for a in node.names if a.name == f"{pkg}.history" and a.asname)
            elif isinstance(node, ast.ImportFrom):
                prefix = node.module or ""
                if node.level:
                    base = module.split(".") if is_pkg else module.split(".")[:-1]
                    prefix = ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))
                for a in node.names:
                    if prefix == pkg and a.name == "history":
                        bound.add(a.asname or "history")
                    elif prefix == f"{pkg}.history" and a.name in HISTORY_GLOBAL:
                        found.add((name, a.name))
        found.update(
            (name, node.attr)
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and node.attr in HISTORY_GLOBAL
        )
    return found


def test_history_global_uses_are_seen(tmp_path):
    root = _package(
        tmp_path,
        {
            "history.py": "def note(): ...\n",
            "a.py": "from . import history\n\ndef f():\n    history.note('x')\n    history.join([])\n",
            "b/c.py": "from ..history import stopped, join\n",
            "d.py": "import pkg.history as h\n\nh.activate(None)\n",
        },
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_t.py").write_text("from pkg import history\nhistory.applied_step()\n")
    files = sorted(root.rglob("*.py")) + [tmp_path / "tests" / "test_t.py"]
    assert history_global_uses(root, files) == {
        ("pkg/a.py", "note"),
        ("pkg/b/c.py", "stopped"),
        ("pkg/d.py", "activate"),
        ("tests/test_t.py", "applied_step"),
    }


def test_no_new_caller_of_the_history_global():
    files = sorted(ROOT.rglob("*.py")) + sorted(Path(__file__).parent.rglob("*.py"))
    new = history_global_uses(ROOT, files) - HISTORY_GLOBAL_CALLERS
    assert new == set(), (
        "the history's module global (TRANSITIONAL): give the code the History (a client's history=, a flow's "
        f"self.history) and call its method instead: {sorted(new)}"
    )


# Every client ncui builds is given the session's History (``history=``): one built without records nothing, and
# nothing else would say so. The command line (cli.py) reads and changes nothing: it has no history to give.
BUILDS_A_CLIENT = {"NCClient", "KubeClient", "from_kubeconfig", "SshRunner", "LocalRunner", "slurm_runner"}
BUILDS_A_CLIENT |= {"node_runner", "collect"}
NO_HISTORY = {"ncui/cli.py"}


def clients_built_without_history(root: Path) -> list[str]:
    out = []
    for f in sorted(root.rglob("*.py")):
        name = str(f.relative_to(root.parent))
        if name in NO_HISTORY:
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"), str(f))):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            called = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
            if called in BUILDS_A_CLIENT and not any(k.arg in ("history", None) for k in node.keywords):
                out.append(
                    f"{name}:{node.lineno} `{ast.unparse(node)[:80]}` builds a client without history=: give it the "
                    "session's History (a flow's self.history, the backend's), or what it changes is not recorded"
                )
    return out


def test_every_client_built_is_given_the_history(tmp_path):
    root = _package(
        tmp_path,
        {
            "a.py": "def f(text, h):\n    KubeClient.from_kubeconfig(text)\n    SshRunner('h', 22, 'u', history=h)\n",
            "b.py": "async def g(kw):\n    await slurm_runner('c', **kw)\n    LocalRunner()\n",
        },
    )
    assert [x.split(" builds ")[0] for x in clients_built_without_history(root)] == [
        "pkg/a.py:2 `KubeClient.from_kubeconfig(text)`",
        "pkg/b.py:3 `LocalRunner()`",
    ]
    missing = clients_built_without_history(ROOT)
    assert missing == [], "\n".join(missing)
