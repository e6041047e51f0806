"""ncui's views on Textual's public API: no class of ncui overrides a private method of the Textual classes it
derives from (``Log._render_line``, ``_render_line_strip``, ``_update_size``, any ``_render*``, a private
handler such as ``Input._on_key``), and the few private attributes still read are the ones listed here, each
with its reason where it is read (ncui/widgets/patchtable.py, ncui/widgets/field.py). Users get a range of
Textual (pyproject.toml); the test extra pins it exactly, and this keeps the range honest."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from pathlib import Path

import textual
from textual.dom import DOMNode
from textual.widget import Widget
from textual.widgets import Log

ROOT = Path(__file__).resolve().parents[1]
NCUI = ROOT / "ncui"

# Private attributes of Textual objects that ncui still reads, by module (see each module's docstring for why).
KNOWN_PRIVATE_READS = {
    "ncui.widgets.patchtable": {
        "_data",
        "_cell_render_cache",
        "_row_render_cache",
        "_row_renderable_cache",
        "_line_cache",
    },
    "ncui.widgets.field": {"_bindings", "_forward_event"},
    "ncui.screens.desktop": {"_driver"},  # the desktop notification's bytes: the channel Textual's own bell takes
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_textual(cls: type) -> bool:
    return cls.__module__.split(".")[0] == "textual"


def _modules() -> list[str]:
    """Every module of ncui but the box's (it never imports Textual) and ``__main__`` (it runs the CLI)."""
    out = []
    for path in sorted(NCUI.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        if "sim" in rel.parts or rel.name == "__main__":
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out.append(".".join(parts))
    return out


def _ncui_classes() -> list[type]:
    seen: dict[type, None] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and any(_is_textual(b) for b in cls.__mro__):
                seen[cls] = None
    return list(seen)


_MACHINERY: set[str] = set()  # what Textual's class machinery puts in every subclass's namespace


def _machinery() -> set[str]:
    if not _MACHINERY:
        probe = type("Probe", (Widget,), {})
        _MACHINERY.update(n for n in vars(probe) if _private(n))
    return _MACHINERY


def private_overrides(cls: type) -> list[str]:
    """The private names of Textual's classes in ``cls``'s MRO that ``cls`` itself defines (overrides)."""
    textual_bases = [b for b in cls.__mro__ if _is_textual(b)]
    out = []
    for name in vars(cls):
        if not _private(name) or name in _machinery():
            continue
        owners = [b.__qualname__ for b in textual_bases if name in vars(b)]
        if owners:
            out.append(f"{cls.__module__}.{cls.__qualname__}.{name} (Textual's {', '.join(owners)})")
    return out


@functools.cache
def _source(path: str | None) -> str:
    return Path(path).read_text(errors="replace") if path else ""


def _module_source(cls: type) -> str:
    """The source of the module defining ``cls`` (a class's own source costs a parse of its module each time)."""
    try:
        return _source(inspect.getsourcefile(cls))
    except TypeError:
        return ""


@functools.cache
def _assigned_on_self(cls: type) -> set[str]:
    """Private names set on ``self`` in the module defining ``cls`` (an annotation may span lines)."""
    return set(re.findall(r"self\.(_[A-Za-z]\w*)\s*(?::[^=]+?)?=(?!=)", _module_source(cls)))


def _textual_privates(cls: type) -> set[str]:
    """Private names Textual's classes in ``cls``'s MRO define or set on their instances."""
    names: set[str] = set()
    for base in cls.__mro__:
        if _is_textual(base):
            names |= {n for n in vars(base) if _private(n)}
            names |= _assigned_on_self(base)
    return names - _machinery()


def _ncui_privates(cls: type) -> set[str]:
    names: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.startswith("ncui"):
            names |= {n for n in vars(base) if _private(n)}
            names |= _assigned_on_self(base)
    return names


_DEFINED = re.compile(
    r"\b(?:def|class)\s+(_[A-Za-z]\w*)"  # functions, methods, classes
    r"|\.(_[A-Za-z]\w*)\s*(?::[^=]+?)?=(?!=)"  # attributes assigned (an annotation may span lines)
    r"|^\s*(_[A-Za-z]\w*)\s*(?::[^=]+?)?=(?!=)",  # names and class attributes assigned
    re.M,
)


def _names_defined(root: Path) -> set[str]:
    """Private names defined anywhere under ``root`` (functions, classes, assigned attributes and names)."""
    names: set[str] = set()
    for path in root.rglob("*.py"):
        for groups in _DEFINED.findall(path.read_text(errors="replace")):
            names.update(g for g in groups if g)
    return {n for n in names if _private(n)}


def private_reads() -> dict[str, set[str]]:
    """Textual private names ncui reads, by module: on ``self`` in a class derived from Textual's (a name its
    Textual bases define and its ncui classes do not), and on any object (a name Textual defines and ncui
    nowhere does)."""
    found: dict[str, set[str]] = {}
    for cls in _ncui_classes():
        used = set(re.findall(r"self\.(_[A-Za-z]\w*)", _module_source(cls)))
        hits = used & _textual_privates(cls) - _ncui_privates(cls)
        if hits:
            found.setdefault(cls.__module__, set()).update(hits)
    textual_names = _names_defined(Path(textual.__file__).parent) - _machinery()
    ncui_names = _names_defined(NCUI)
    for name in _modules():
        path = ROOT / Path(*name.split(".")).with_suffix(".py")
        if not path.exists():
            path = ROOT / Path(*name.split(".")) / "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in textual_names and node.attr not in ncui_names:
                found.setdefault(name, set()).add(node.attr)
    return found


def test_no_class_overrides_a_textual_private_method():
    classes = _ncui_classes()
    assert any(c.__name__ == "LogLines" for c in classes) and any(c.__name__ == "PatchTable" for c in classes)
    overrides = [o for cls in classes for o in private_overrides(cls)]
    assert not overrides, "ncui overrides Textual's private methods: " + "; ".join(overrides)


def test_the_check_finds_an_override_of_logs_private_drawing():
    """The check bites: a Log that overrides its private drawing and sizing methods (what the log pane once
    did) is found, and so is a private handler of an Input; a public handler is not."""
    from textual.widgets import Input

    class Drawn(Log):
        def _render_line(self, y, scroll_x, width):  # type: ignore[no-untyped-def]
            return super()._render_line(y, scroll_x, width)

        def _update_size(self, updates, lines):  # type: ignore[no-untyped-def]
            pass

    class Typed(Input):
        async def _on_key(self, event):  # type: ignore[no-untyped-def]
            pass

    class Public(Input):
        async def on_key(self, event):  # type: ignore[no-untyped-def]
            pass

    found = private_overrides(Drawn)
    assert any("._render_line (Textual's Log)" in x for x in found) and any("._update_size" in x for x in found)
    assert any("._on_key (Textual's Input, Widget)" in x for x in private_overrides(Typed))
    assert private_overrides(Public) == []
    assert issubclass(Drawn, DOMNode)


def test_the_private_attributes_read_are_the_known_few():
    """Each private attribute of Textual's that ncui reads is listed in KNOWN_PRIVATE_READS (and each listed one
    is still read: a list that drifts from the code says nothing)."""
    assert private_reads() == KNOWN_PRIVATE_READS


def test_users_get_a_range_of_textual_and_the_tests_the_version_patchtable_was_tested_on():
    from ncui.widgets.patchtable import PATCHED_ON

    text = (ROOT / "pyproject.toml").read_text()
    deps = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    test_extra = text.split("test = [", 1)[1].split("]", 1)[0]
    assert re.findall(r'"textual([<>=!~][^"]*)"', deps) == [">=8.2.8,<9"]
    pins = re.findall(r'"textual==([^"]+)"', test_extra)
    assert pins == [textual.__version__], "the suite runs on the version the test extra pins"
    assert textual.__version__ in PATCHED_ON, "a new pin: check PatchTable's internals on it, then list it"
    assert re.findall(r'"(textual-plotext|pytest-textual-snapshot)==[^"]+"', text) == [
        "textual-plotext",
        "pytest-textual-snapshot",
    ]


async def test_patchtable_shows_a_change_patched_or_through_update_cell(monkeypatch):
    """set_cells on the pinned Textual (its internals) and on any other (the public update_cell): a row in
    sight shows its new value at once, a row out of sight once it scrolls in."""
    from textual.app import App

    from ncui.widgets.patchtable import PatchTable

    class TableApp(App):
        def compose(self):
            yield PatchTable(id="t")

    for patching in (True, False):
        monkeypatch.setattr(PatchTable, "patching", patching)
        app = TableApp()
        async with app.run_test(size=(40, 10)) as pilot:
            table = app.query_one(PatchTable)
            table.add_column("NAME", key="NAME")
            table.add_column("STATUS", key="STATUS")
            for i in range(50):
                table.add_row(f"pod-{i}", "Pending", key=f"pod-{i}")
            await pilot.pause()
            table.set_cells("pod-1", {"STATUS": "Running"})
            table.set_cells("pod-40", {"STATUS": "Failed"})
            await pilot.pause()
            shown = app.export_screenshot()
            assert "Running" in shown and "Failed" not in shown, patching
            table.move_cursor(row=40, animate=False)
            await pilot.pause()
            await pilot.pause()
            assert "Failed" in app.export_screenshot(), patching
            assert table.get_cell("pod-40", "STATUS") == "Failed"


async def test_the_desktop_adapter_writes_through_the_drivers_channel():
    """screens/desktop.py reads ``App._driver`` (no public way writes raw bytes; ``App.bell`` does the same): on
    this Textual the app has that attribute, a Driver with ``write`` and ``flush``, set while it runs; the adapter
    hands a whole sequence to it once (not headless) and writes nothing headless. A Textual that renames or drops
    it fails here, not on a person's terminal."""
    from textual.app import App
    from textual.driver import Driver

    from ncui.screens import desktop

    assert "self._driver.write" in inspect.getsource(App.bell)  # the bell's own path: the same channel
    assert callable(Driver.write) and callable(Driver.flush)
    app = App()
    assert app._driver is None
    async with app.run_test() as pilot:
        assert isinstance(app._driver, Driver)
        assert desktop.write(app, "\x07") is False  # headless: nothing written
        wrote: list[str] = []

        class Recorder:  # a driver on a real terminal (not headless), recording what it is given
            is_headless = False

            def write(self, data: str) -> None:
                wrote.append(data)

            def flush(self) -> None:
                wrote.append("<flush>")

        real = app._driver
        app._driver = Recorder()  # type: ignore[assignment]  # (no await until it is put back: no frame between)
        try:
            assert desktop.write(app, "\x1b]9;hi\x07") is True
        finally:
            app._driver = real
        assert wrote == ["\x1b]9;hi\x07", "<flush>"]
        await pilot.pause()
