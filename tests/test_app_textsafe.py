"""The app shows a server's words as words: no control character or bidi override from whoami or a
transaction on screen, and nothing of theirs (or of an error in a notification) read as markup."""

from __future__ import annotations

import dataclasses

from textual.widgets import DataTable
from textual.widgets._toast import Toast

from .apphelp import app_for, loaded, screen_text, until

FORBIDDEN = {chr(c) for c in range(0x00, 0xA0) if (c < 0x20 and c != 0x0A) or c >= 0x7F} | {"\u202e", "\u2066"}


async def test_server_text_on_account_is_clean_and_never_markup(sim):
    org = sim.world.main_org
    org.spec = dataclasses.replace(org.spec, org_name="Halcyon\u202e baL\x1b]0;PWNED\x07 Lab\x85")
    org.transactions[0].description = "Credits [/] purchased\x9b2J [bold]here\u2066"
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "transactions"))
        await until(pilot, lambda: "Credits" in screen_text(app), what="the transaction on screen")
        text = screen_text(app)
        assert "Halcyon baL Lab" in text and "PWNED" not in text
        rows = app.query_one("#transactions", DataTable)
        assert rows.get_row_at(0)[2].plain == "Credits [/] purchased [bold]here"  # as the server wrote it
        assert not FORBIDDEN & set(text)
        # a notification with a server's words in it: kept as they are, never parsed as markup (a "[/]" would
        # be a MarkupError when the toast draws)
        message = "the cluster answered 422: spec [/] and [link=x]y[/link]"
        app.notify(message, severity="error")
        await until(pilot, lambda: any(n.message == message for n in app._notifications), what="the notification")
        note = next(n for n in app._notifications if n.message == message)
        assert note.message == message and note.markup is False
        assert Toast(note).render().plain == message
