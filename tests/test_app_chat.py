"""Talking to the tuned finance-analyst from Workloads (m): the document pasted or read from a file, the guide's
exact request (received so by the box), the memo streamed, and a file that cannot be read said in words."""

from __future__ import annotations

import json

import httpx
from textual import events

from ncui.kube.chat import FINANCE_SYSTEM_PROMPT
from ncui.screens.chat import ChatScreen, Composer
from ncui.screens.modals import PromptModal, ResultsModal, SignInModal

from .apphelp import app_for, loaded, put_bid, screen_lines, screen_text, until
from .kc_support import recipe
from .screentext import joined

DOC = """Harbor Freight Lines 10-Q (synthetic)
Our $48M revolver matures 2027-03-31 and covenant headroom is under 0.3x.
The top two shippers are 41% of revenue.
A lawsuit filed on March 3, 2026 could reduce earnings."""


async def test_post_train_chat_sends_the_seeds_request(sim, tmp_path):
    world, kube = sim.world, sim.app.state.kube
    app = app_for(sim)
    headers = {"Authorization": f"Bearer {sim.token}"}
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the sign-in link")
        async with httpx.AsyncClient() as h:
            code = app.screen.link.split("code=", 1)[1]
            assert (await h.post(sim.api_url + "/device", data={"code": code})).status_code == 200
            assert (await h.post(f"{sim.api_url}/_sim/k8s/tune", json={"defective": False}, headers=headers)).is_success
        await put_bid(sim, 5.0)
        await until(pilot, lambda: app.flows.connect.kube is not None, timeout=30, what="signed in")

        class K:  # what kc_support.recipe needs: the catalog's files
            @staticmethod
            def file(name: str) -> str:
                return f"{sim.access_url}/first-job/{name}"

        for name in ("finance-analyst-tune-nvidia.yaml", "finance-analyst-serve-nvidia.yaml"):
            assert all(r.error is None for r in await app.flows.connect.kube.apply(recipe(K, name)))
        await pilot.press("4")
        wl = app.query_one("#kube-pane")
        for _ in range(200):
            if wl._service() == "finance-analyst":
                break
            world.advance(60)
            await pilot.pause(0.05)
        await until(pilot, lambda: wl._service() == "finance-analyst", what="the tuned model READY 1/1")
        up = "Post-train (finance-analyst) is up (READY 1/1): m talks to it (svc/finance-analyst)."
        await until(pilot, lambda: up in screen_text(app), what="Workloads says m talks to it")
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, ChatScreen), what="the chat")
        chat = app.screen
        assert "Ctrl+S send" in screen_text(app)
        keys = chat.query_one("#chat-keys")  # every key said at 80 columns, drawn whole (on two lines)
        drawn = joined("\n".join(line.text for line in keys.render_lines(keys.region.reset_offset)))
        assert drawn.endswith("Ctrl+T copy curl · Esc back"), drawn
        # a file that is not there: a sentence, nothing read; then the document from a file
        for path, want in ((tmp_path / "nope.txt", "No such file"), (tmp_path, "is a folder")):
            await pilot.press("ctrl+o")
            await until(pilot, lambda: isinstance(app.screen, PromptModal), what="the path box")
            app.post_message(events.Paste(str(path)))
            await until(pilot, lambda path=path: app.screen.query_one("#prompt").value == str(path))
            await pilot.press("enter")
            await until(pilot, lambda want=want: any(want in n.message for n in app._notifications), what=want)
        assert chat.query_one(Composer).text == ""
        doc = tmp_path / "filing.txt"
        doc.write_text(DOC)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, PromptModal), what="the path box")
        app.post_message(events.Paste(str(doc)))
        await until(pilot, lambda: app.screen.query_one("#prompt").value == str(doc))
        await pilot.press("enter")
        await until(pilot, lambda: chat.query_one(Composer).text == DOC, what="the file read")
        # a document pasted whole: it lands in the box, its lines kept
        chat.query_one(Composer).text = ""
        app.post_message(events.Paste(DOC))  # as a terminal delivers a paste
        await until(pilot, lambda: chat.query_one(Composer).text == DOC, what="the paste")
        await pilot.press("enter")  # a new line in a document, not a send
        assert kube.chat_requests == [] and chat.query_one(Composer).text.count("\n") == DOC.count("\n") + 1
        await pilot.press("ctrl+s")
        await until(pilot, lambda: chat.turns, timeout=30, what="the memo")
        server, body = kube.chat_requests[-1]
        assert server == "finance-analyst"
        assert body == {  # the guide's request, exactly, with stream added
            "model": "finance-analyst",
            "max_tokens": 700,
            "chat_template_kwargs": {"enable_thinking": False},
            "messages": [{"role": "system", "content": FINANCE_SYSTEM_PROMPT}, {"role": "user", "content": DOC}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        assert "temperature" not in body and "top_p" not in body  # sampling left unset
        memo = chat.turns[-1].answer
        assert memo.startswith("Severity: HIGH.") and "2027-03-31" in memo and "$48M" in memo
        assert "first token" in screen_text(app) and "a document of 4 lines" in screen_text(app)
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, ResultsModal), what="the request")
        shown = screen_lines(app)  # (the request's JSON, as its lines show it)
        assert json.loads(shown[shown.index("{") : shown.index("\n}") + 2]) == body
        shown = screen_text(app)
        assert "curl -s localhost:8000/v1/chat/completions" in shown and "port-forward svc/finance-analyst" in shown
        await pilot.press("escape")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ChatScreen), what="back to Workloads")
