"""A view: one of the app's five panes. It reads the store, re-renders when its slices change, and
counts as interest in them only while it is shown (so hidden panes let their pollers slow down)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.widget import Widget
from textual.widgets import Static

from ..store import Interest, Slice, Store

if TYPE_CHECKING:
    from textual.widgets import DataTable

    from ..app import NCApp


def fit_columns(
    table: DataTable[Any], columns: tuple[tuple[str, int], ...], *, flex: int = -1, flex_min: int = 8
) -> bool:
    """Give a DataTable its columns, column ``flex`` (the last by default) taking the width the others
    leave (``columns`` gives its width before the table has one), so the table never scrolls sideways at
    80 columns nor wastes a wide terminal. Returns True when the columns were (re)made: the rows are then
    gone and the caller adds them again."""
    want = fitted_columns(table, columns, flex=flex, flex_min=flex_min)
    if getattr(table, "_ncui_columns", None) == want:
        return False
    table.clear(columns=True)
    for label, w in want:
        table.add_column(label, width=w, key=label)
    table._ncui_columns = want  # type: ignore[attr-defined]  # the columns it was given, kept on the table
    return True


def fitted_columns(
    table: DataTable[Any], columns: tuple[tuple[str, int], ...], *, flex: int = -1, flex_min: int = 8
) -> tuple[tuple[str, int], ...]:
    """The columns (label, width) ``fit_columns`` gives ``table`` at its width now."""
    flex %= len(columns)
    fixed = sum(w for i, (_, w) in enumerate(columns) if i != flex) + 2 * len(columns)  # 1 cell padding a side
    width = table.size.width - (2 if table.show_vertical_scrollbar else 0)
    grow = max(flex_min, width - fixed) if width > 0 else columns[flex][1]
    return tuple((label, grow if i == flex else w) for i, (label, w) in enumerate(columns))


def show_text(line: Static, text: Text | str) -> None:
    """Update a Static only when its text changed: an update repaints it (and lays the screen out again), and
    a poller writes the same value every few seconds: an idle screen writes nothing to the terminal then
    (bench/soak.py: idle ≤ 1 KB/s), and a watch's bursts redraw no line that stayed the same (bench/pods.py)."""
    if line.content != text:
        line.update(text)


class View(VerticalScroll):
    NEEDS: ClassVar[tuple[str, ...]] = ()
    TITLE: ClassVar[str] = ""
    HELP: ClassVar[str] = ""

    def __init__(self, store: Store, *, id: str) -> None:
        super().__init__(id=id)
        self.store = store
        self._interest = Interest(store, self.NEEDS)
        self._unsub: Callable[[], None] | None = None

    @property
    def ncapp(self) -> NCApp:
        return cast("NCApp", self.app)  # Widget.app is an App[object]: a view lives in NCApp only

    def on_mount(self) -> None:
        # Mounted as the app quits, a view may lack some of what it composed (Textual mounts nothing a closing
        # widget composes, at any depth): then its set-up says nothing. Any other NoMatches is a bug, raised.
        try:
            self.mounted()
            if self._unsub is None:
                self._unsub = self.store.subscribe(self.NEEDS + ("whoami",), self._changed, interested=False)
            self.refresh_view()
        except NoMatches:
            if self.app.return_code is None and self.app.is_running:  # (exit() sets the one, shutting down the other)
                raise

    def mounted(self) -> None:
        """A view's own set-up once its widgets are mounted (its tables' columns, its timers), before its first
        refresh. (Not ``on_mount``: Textual calls each class's along the MRO, a subclass's before this guard.)"""

    def on_unmount(self) -> None:
        if self._unsub:
            self._unsub()
        self._interest.off()

    def activate(self, shown: bool) -> None:
        if shown:
            self._interest.on()
            self.refresh_view()
        else:
            self._interest.off()

    def focus_target(self) -> Widget:
        """The widget that takes the keyboard when this view is shown."""
        return self

    def _changed(self, _slice: Slice) -> None:
        if self.display:
            self.refresh_view()

    def refresh_view(self) -> None:  # pragma: no cover - every view overrides it
        pass

    def problem(self, *names: str) -> Text | None:
        """A line saying why data is missing or stale (store.Slice.staleness), or None when all is well."""
        return problem(self.store, *names)


def problem(store: Store, *names: str) -> Text | None:
    """A line saying why the slices ``names`` are missing or stale (store.Slice.staleness), or None when all is
    well: a view's, or a pane's within one."""
    now = store.now()
    for n in names:
        why = store.get(n).staleness(now)
        if why:
            return Text(f"⚠ {why[0].upper()}{why[1:]}", style="bold red")
    return None


# The six screens: (id, title, module, class). Only Account is imported before the first frame; the
# others are imported and built when first shown.
VIEWS: tuple[tuple[str, str, str, str], ...] = (
    ("account", "Account", "account", "AccountView"),
    ("market", "Market", "market", "MarketView"),
    ("recipes", "Recipes", "recipes", "RecipesView"),
    ("workloads", "Workloads", "workloads", "WorkloadsView"),
    ("lease", "Lease", "lease", "LeaseView"),
    ("report", "Report", "report", "ReportView"),
)


def view_class(name: str) -> type[View]:
    import importlib

    _, _, module, cls = next(v for v in VIEWS if v[0] == name)
    view: type[View] = getattr(importlib.import_module(f"ncui.screens.{module}"), cls)
    return view
