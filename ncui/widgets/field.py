"""A text field that keeps keystrokes in order.

Textual 8.2.8's ``Input`` inserts a printable key as it comes, but a key it has a binding for (backspace,
delete, ←/→, home, end, ctrl+u…) bubbles up to the app first, which runs the binding later: a burst of keys,
as an ssh session delivers them, then lands out of order ("1", then backspace 4 . 5 gives "14.", not "4.5").
In a field where a person types a price that is no small thing. ``Field`` runs its own bindings at once.

A paste of several lines is refused with a reason, field unchanged: Input keeps the first line silently, and a
10 kB script pasted into Command became a 26-character command that was applied. One trailing line break (a
line copied whole) is not a second line.

Tab and Shift+Tab move to the next or previous field at once, here, not when the key has come back to the
app's binding: typed in one burst ("image", Tab, "command"), the keys after Tab were already handed to this
field, and the command landed in Image. A key handed to this field after the focus left it goes on to the
field (or button) that has it now, in the order typed.

Two of Textual's private names remain here, for want of a public one (tests/test_textual_api.py lists them):
``_forward_event``, which hands a key on marked as forwarded (a key posted unmarked is taken by the App for a
new key when it bubbles back, and typed twice), and ``_bindings``, the field's own bindings (the public
``Screen.active_bindings`` merges the whole focus chain, where an ancestor's priority binding hides the
field's, and asks every action's ``check_action`` on each key).
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

__all__ = ["Field"]


class Field(Input):
    async def on_key(self, event: events.Key) -> None:  # Textual calls each class's handler, this one before Input's
        screen = self.screen
        if screen.focused is not self and screen.focused is not None:  # typed after a Tab that moved on
            event.stop()
            event.prevent_default()
            screen.focused._forward_event(events.Key(event.key, event.character))
            return
        if event.key in ("tab", "shift+tab"):
            event.stop()
            event.prevent_default()
            if event.key == "tab":
                screen.focus_next()
            else:
                screen.focus_previous()
            return
        if event.is_printable:
            return  # Input's own handler inserts it (Textual calls each class's handler)
        bindings = self._bindings.key_to_bindings.get(event.key)
        if bindings:
            event.stop()
            event.prevent_default()  # not Input's handler, and no bubbling to the app's binding check
            await self.run_action(bindings[0].action)

    def on_paste(self, event: events.Paste) -> None:
        lines = event.text.rstrip("\r\n").splitlines()
        if len(lines) > 1:
            event.stop()
            event.prevent_default()  # not Input's handler, which would keep the first line
            self.app.bell()
            self.notify(
                f"Paste refused: it has {len(lines)} lines, and this field takes one line. Nothing was "
                "pasted; paste a single line.",
                severity="warning",
                timeout=10,
            )
            return
        # else Input's own handler pastes it: the one line, without the trailing line break
