"""The screens' bar: "1 Account  2 Market …" with the shown one highlighted; keys 1–5 or a click switch.

One Static instead of Textual's Tabs (a widget per tab, an animated underline): a cheaper first frame.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class NavBar(Static):
    DEFAULT_CSS = """
    NavBar {
        height: 1; padding: 0 1; background: $boost; color: $text-muted;
        link-style: none; link-color: $text-muted; link-background: $boost;
        link-style-hover: bold; link-color-hover: $text; link-background-hover: $boost;
    }
    """

    def __init__(self, items: tuple[tuple[str, str], ...], *, active: str, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.items = items  # (name, title)
        self.active = active

    def on_mount(self) -> None:
        self.show(self.active)

    def show(self, name: str) -> None:
        self.active = name
        parts = []
        for i, (key, title) in enumerate(self.items, 1):
            label = Content(f" {i} {title} ").stylize(f"@click=app.show('{key}')")
            if key == name:  # after the link, so the link's colours do not cover it
                label = label.stylize("bold reverse")
            parts.append(label)
        self.update(Content(" ").join(parts))
