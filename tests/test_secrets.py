"""Secrets never print: a crash inside each function that holds a credential, rendered as Textual renders a
crash (rich's traceback with every frame's locals), never shows the token."""

from __future__ import annotations

import io
import os

import httpx
import pytest
from pydantic import SecretStr

from ncui.api.client import NCClient
from ncui.config import Endpoints, load_token
from ncui.kube import client as kube_client_module
from ncui.kube import session
from ncui.kube.linestream import LineStream


def rendered(exc: BaseException) -> str:
    """The traceback as Textual 8.2.8 prints it on a crash (App._handle_exception: show_locals=True)."""
    from rich.console import Console
    from rich.traceback import Traceback

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:  # from the first frame of ncui (the
        tb = tb.tb_next  # test's own frame holds the token it compares with)
    console = Console(file=io.StringIO(), width=200, record=True, color_system=None)
    console.print(Traceback.from_exception(type(exc), exc, tb, show_locals=True, locals_max_length=5, width=200))
    return console.export_text()


class Boom(RuntimeError):
    pass


class _Refusing(httpx.AsyncBaseTransport):
    """A transport that records the Authorization header it was handed, then fails (not as an HTTPError)."""

    def __init__(self) -> None:
        self.auth: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.auth.append(request.headers.get("Authorization", ""))
        raise Boom("the wire broke")


def _assert_hidden(exc: BaseException, token: str, *frames: str) -> None:
    text = rendered(exc)
    for f in frames:  # the frames that held it are there, with their locals
        assert f in text, f"{f} is not in the traceback:\n{text}"
    assert token not in text and token[:12] not in text, text


async def test_no_kube_frame_holding_the_session_token_shows_it(kc_factory, monkeypatch):
    k, kc = kc_factory()
    await kc.list("nodes")  # signed in: the credential is in memory
    token = k.token()
    assert token.startswith("ncsk_")
    wire = _Refusing()
    await kc._http._transport.aclose()  # (its kept-alive connection from the list above: closed, not dropped)
    kc._http._transport = wire
    with pytest.raises(Boom) as e:  # _request (list, get, apply, delete, proxy)
        await kc.list("pods")
    _assert_hidden(e.value, token, "_request")
    assert wire.auth == [f"Bearer {token}"]  # the token did go out, at the last moment, inside httpx

    # watch and pod_log_batches → _line_batches → LineStream.open: the request's bytes are written, then the
    # answer fails
    written: list[bytes] = []

    class Transport:
        def write(self, data: bytes) -> None:
            written.append(data)
            stream._head.set_exception(Boom("no answer"))

        def close(self) -> None: ...
        def abort(self) -> None: ...
        def is_closing(self) -> bool:
            return False

    async def connect(self, host, port, tls) -> None:
        nonlocal stream
        stream = self
        self._transport = Transport()

    stream = None
    monkeypatch.setattr(LineStream, "_connect", connect)
    with pytest.raises(Boom) as e:
        async for _ in kc.pod_log_batches("some-pod"):
            pass
    assert f"Authorization: Bearer {token}\r\n".encode() in written[0]
    _assert_hidden(e.value, token, "pod_log_batches", "_line_batches", "open")
    with pytest.raises(Boom) as e:
        async for _ in kc.watch("pods", "0"):
            pass
    assert written[1].startswith(b"GET /") and b"watch=true" in written[1].split(b"\r\n")[0]
    assert f"Authorization: Bearer {token}\r\n".encode() in written[1]
    _assert_hidden(e.value, token, "watch", "_line_batches", "open")

    # the sign-in: the client taking the plugin's answer, and the plugin's answer read
    kc.forget_credential()

    def boom(*a, **kw):
        raise Boom("after the plugin answered")

    monkeypatch.setattr(kube_client_module, "parse_time", boom)  # _credential, holding the plugin's answer
    with pytest.raises(Boom) as e:
        await kc.list("pods")
    _assert_hidden(e.value, token, "_credential")
    monkeypatch.undo()  # (kc_factory's NCUI_KUBE_CACHE too: set again)
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
    monkeypatch.setattr(session, "clean", boom)  # run_plugin, right after reading the plugin's stdout
    with pytest.raises(Boom) as e:
        await session.run_plugin(kc._spec)
    _assert_hidden(e.value, token, "run_plugin")


async def test_no_frame_holding_the_nc_token_shows_it(tmp_path, monkeypatch):
    token = "nc-file-token-0b8e1f27c4"
    wire = _Refusing()
    nc = NCClient(Endpoints(api="http://127.0.0.1:9", access="http://127.0.0.1:9"), SecretStr(token), transport=wire)
    try:
        with pytest.raises(Boom) as e:
            await nc.whoami()
    finally:
        await nc.aclose()
    assert wire.auth == [f"Bearer {token}"]
    _assert_hidden(e.value, token, "_send")

    path = tmp_path / "token"
    path.write_text(token + "\n")
    os.chmod(path, 0o644)
    assert load_token({}, path).warning.endswith(f"run: chmod 600 {path}")
    import stat

    def boom(*a):
        raise Boom("while judging the mode")

    monkeypatch.setattr(stat, "S_IMODE", boom)  # after the file was read
    with pytest.raises(Boom) as e:
        load_token({}, path)
    _assert_hidden(e.value, token, "load_token")
