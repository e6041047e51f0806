"""ncui's own async Kubernetes client against the simulator over real loopback HTTPS."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from pydantic import SecretStr

from ncui.kube.client import ApplyResult, KubeClient, KubeError, NotSignedIn
from ncui.kube.status import pod_ready, pod_status

from .kc_support import advance_until, busybox_job, recipe


def _deploy(replicas: int = 1, cpu=1) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "echo", "labels": {"app": "echo"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "echo"}},
            "template": {
                "metadata": {"labels": {"app": "echo"}},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox:1.36",
                            "command": ["sleep", "inf"],
                            "resources": {"limits": {"cpu": cpu, "memory": "64Mi"}},
                        }
                    ]
                },
            },
        },
    }


def _svc(name: str = "echo") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": "echo"}, "ports": [{"port": 80}]},
    }


async def test_list_get_apply_scale_delete(kc_factory):
    k, kc = kc_factory()
    nodes, rv = await kc.list("nodes")
    assert [n["metadata"]["name"] for n in nodes] == ["halcyon-cpu-worker-0"] and rv.isdigit()
    assert nodes[0]["kind"] == "Node"
    assert await kc.get("deployments", "echo") is None
    got = await kc.apply([_deploy(), _svc()])
    assert got == [
        ApplyResult("Deployment", "echo", "created", None, "deployment.apps/echo"),
        ApplyResult("Service", "echo", "created", None, "service/echo"),
    ]
    dep = await kc.get("deployments", "echo")
    assert dep["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "1"  # a string
    assert [r.action for r in await kc.apply([_deploy(), _svc()])] == ["unchanged", "unchanged"]
    assert [r.action for r in await kc.apply([_deploy(2), _svc()])] == ["configured", "unchanged"]
    assert (await kc.get("deployments", "echo"))["spec"]["replicas"] == 2
    assert "deployment.apps/echo" in k.kubectl("get", "deployments", "-o", "name").stdout
    scale = await kc.scale("deployments", "echo", 3)
    assert scale["spec"]["replicas"] == 3
    assert (await kc.get("deployments", "echo"))["spec"]["replicas"] == 3
    pods, _ = await kc.list("pods", label_selector="app=echo")
    assert pods and all(p["metadata"]["labels"]["app"] == "echo" for p in pods)
    assert await kc.delete("deployments", "echo") is True
    assert await kc.delete("deployments", "echo") is False
    assert await kc.get("deployments", "echo") is None
    assert "bearer" not in repr(kc).lower() and k.token() not in repr(kc)


async def test_admission_refusal_stops_the_apply_with_its_message(kc_factory):
    k, kc = kc_factory()
    k.set_bid(20.0)  # 8 GPUs x $20 x 2 h = $320 > the $250 balance
    docs = [_svc("first")] + recipe(k, "nanogpt-job-nvidia.yaml") + [_svc("never")]
    got = await kc.apply(docs)
    assert [(r.kind, r.action, r.error is None) for r in got] == [
        ("Service", "created", True),
        ("Job", "created", False),
    ]
    assert "does not cover two hours" in got[1].error and "$320.00" in got[1].error
    assert 'admission webhook "gpu.nationalcompute.com" denied' in got[1].error
    assert await kc.get("services", "never") is None  # stopped at the first refusal
    with pytest.raises(KubeError) as e:
        await kc.proxy("nope", 80, "/v1/models", method="GET")
    assert e.value.status == 404 and 'services "nope" not found' in e.value.message
    assert k.token() not in str(e.value) and k.token() not in repr(e.value)


async def test_serve_to_ready_a_completion_through_the_proxy_and_logs(kc_factory):
    k, kc = kc_factory()
    k.set_bid(5.0)
    for name in ("inkling-weights-to-shared-nvidia.yaml", "inkling-serve-nvidia.yaml"):
        assert all(r.error is None for r in await kc.apply(recipe(k, name)))

    async def engine():
        pods, _ = await kc.list("pods")
        return [
            p
            for p in pods
            if p["metadata"]["name"].startswith("inkling-") and not p["metadata"]["name"].startswith("inkling-weights")
        ]

    states: list[str] = []

    def ready() -> bool:
        st = k.pod_statuses()
        v = [s for n, s in st.items() if n.startswith("inkling-") and not n.startswith("inkling-weights")]
        states.extend(v)
        return v == ["Running 1/1"]

    await advance_until(k, ready, step=120, what="the engine READY 1/1")
    pod = (await engine())[0]
    assert pod_status(pod) == "Running" and pod_ready(pod) == "1/1"
    out = await kc.proxy(
        "inkling",
        8000,
        "/v1/chat/completions",
        json={"model": "thinkingmachines/Inkling", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1024},
    )
    msg = out["choices"][0]["message"]
    assert out["object"] == "chat.completion" and msg["content"] and msg["reasoning_content"]
    lines = [x async for x in kc.pod_logs(pod["metadata"]["name"], "main", follow=False, timestamps=False)]
    assert any("Application startup complete" in x for x in lines)
    assert any('"POST /v1/chat/completions HTTP/1.1" 200' in x for x in lines)  # our request, in its log
    stamped = [x async for x in kc.pod_logs(pod["metadata"]["name"], "main", follow=False, tail_lines=1)]
    assert len(stamped) == 1 and stamped[0][:2] == "20" and "Z " in stamped[0]
    await _inkling_streams(k, kc)


async def _inkling_streams(k, kc) -> None:
    """Inkling streamed as a real engine does (SSE chunks, reasoning_content deltas before the content, usage at
    the end, [DONE]); its thinking uses the room max_tokens gives it; the stream's faults give a sentence."""
    from ncui.kube.chat import ENDPOINTS, Answer, ChatError, request_body, stream_chat

    ep = ENDPOINTS["inkling"]
    kube = k.sim.app.state.kube
    k.sim_post("/_sim/k8s/chat", {"rate": 2000})  # a quick engine: the test reads chunks, not time
    body = request_body(ep, [], "hi")
    assert body["max_tokens"] == 1024 and body["stream"] is True  # the guide's room to reason
    a = Answer()
    order = [("r" if c.reasoning else "c") async for c in stream_chat(kc, ep, body, a)]
    assert kube.chat_requests[-1] == ("inkling", body)  # what the box received is what was built
    assert order[0] == "r" and "r" not in order[order.index("c") :]  # the thinking first, apart, then the answer
    assert a.content.startswith("Hi! I'm Inkling") and a.reasoning and a.finish_reason == "stop"
    assert a.completion_tokens == len(order) and a.prompt_tokens and a.ttft is not None  # usage counts tokens
    assert a.completion_tokens < 60  # a greeting's few thoughts and answer, not most of the room it was given
    small = Answer()
    async for _ in stream_chat(kc, ep, {**body, "max_tokens": 16}, small):
        pass
    assert small.completion_tokens == 16 and small.content == "" and small.finish_reason == "length"  # all thinking
    # a stream cut after 5 tokens, then a chunk that is not JSON: a sentence each, what arrived kept
    k.sim_post("/_sim/k8s/chat", {"drop_after": 5})
    cut = Answer()
    with pytest.raises(ChatError) as e:
        async for _ in stream_chat(kc, ep, body, cut):
            pass
    assert "dropped" in str(e.value) or "without [DONE]" in str(e.value)
    assert cut.chunks == 5 and cut.reasoning
    k.sim_post("/_sim/k8s/chat", {"malformed_after": 3})
    with pytest.raises(ChatError, match="not an OpenAI chunk"):
        async for _ in stream_chat(kc, ep, body, Answer()):
            pass
    k.sim_post("/_sim/faults", {"path_prefix": "/k8s/", "status": 503})
    with pytest.raises(ChatError, match=r"refused the request \(HTTP 503"):
        async for _ in stream_chat(kc, ep, body, Answer()):
            pass


async def test_a_401_runs_the_plugin_again(kc_factory):
    k, kc = kc_factory()
    await kc.list("pods")
    assert kc.plugin_runs == 1
    await kc.list("pods")
    assert kc.plugin_runs == 1  # cached in memory
    kc._token = SecretStr("not-a-token")  # the server forgets it: 401
    items, _ = await kc.list("nodes")
    assert items and kc.plugin_runs == 2


async def test_not_signed_in_raises_with_the_link(kc_factory):
    k, kc = kc_factory(signed_in=False)
    with pytest.raises(NotSignedIn) as e:
        await kc.list("pods")
    assert e.value.link and "/device?code=" in e.value.link
    assert e.value.link in str(e.value)
    k.approve(e.value.link)  # the human approves; the background poller caches the credential
    from .conftest import wait_for

    wait_for(lambda: list(k.auth_cache.glob("halcyon-*.json")) and not k.pending(), 15, what="the credential")
    items, _ = await kc.list("nodes")
    assert items


async def test_an_answer_that_is_not_a_json_object_is_a_clear_error() -> None:
    """A cluster (or a proxy in front of it) answering a read with JSON that is not an object: a KubeError
    that says so, not an AttributeError deep in a caller."""
    kc = KubeClient("https://cluster.invalid", None)
    kc._token, kc._expires, kc._generation = SecretStr("t"), time.time() + 3600, 1  # signed in
    await kc._http.aclose()
    kc._http = httpx.AsyncClient(transport=httpx.MockTransport(lambda req: httpx.Response(200, json=[1, 2])))
    try:
        with pytest.raises(KubeError, match="not a JSON object"):
            await kc.get("pods", "x")
        with pytest.raises(KubeError, match="not a JSON object"):
            await kc.list("pods")
    finally:
        await kc.aclose()


class HangUpProxy:
    """A loopback TCP proxy in front of the box that closes a kept-alive connection, without a word, when the next
    request arrives on it: what a server's (or a load balancer's) idle cut looks like to a client that sent just
    as it happened. Every first request on a connection goes through; ``hangups`` counts the ones cut."""

    def __init__(self, upstream: str) -> None:
        u = httpx.URL(upstream)
        self.host, self.port = u.host, u.port
        self.hangups = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _serve(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        ur, uw = await asyncio.open_connection(self.host, self.port)
        answered = asyncio.Event()  # the box has begun to answer this connection's first request

        async def up() -> None:
            while data := await cr.read(65536):
                if answered.is_set():  # a second request on a kept-alive connection: hang up, unanswered
                    self.hangups += 1
                    break
                uw.write(data)
            cw.transport.abort()
            uw.transport.abort()

        async def down() -> None:
            while data := await ur.read(65536):
                answered.set()
                cw.write(data)
            cw.transport.abort()

        both = [asyncio.ensure_future(up()), asyncio.ensure_future(down())]
        self._tasks.update(both)
        await asyncio.gather(*both, return_exceptions=True)
        self._tasks.difference_update(both)

    async def close(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


async def test_a_kept_alive_connection_closed_under_a_request_sends_it_again_when_it_is_idempotent(kc_factory):
    """Both clients: a GET, PUT or DELETE whose kept-alive connection the server closed as it arrived goes again on a
    new one (a loaded CI run refused an apply, and a limit price, with "Server disconnected without sending a
    response"); a POST is never sent twice: its error is said."""
    import yaml

    from ncui.api.client import NCClient
    from ncui.api.errors import NetworkError
    from ncui.config import Endpoints

    k, _ = kc_factory()
    proxy = HangUpProxy(k.sim.api_url)
    url = await proxy.start()
    doc = yaml.safe_load(k.kubeconfig.read_text())
    for c in doc["clusters"]:  # the same cluster, on the box's plain listener, through the proxy
        c["cluster"] = {"server": f"{url}/k8s/{k.cluster}"}
    kc = KubeClient.from_kubeconfig(yaml.safe_dump(doc))
    try:
        async with NCClient(Endpoints(api=url, access=url), SecretStr(k.sim.token), retries=0) as nc:
            assert (await nc.bid("halcyon")).max_price_per_gpu_hour == 0
            bid = await nc.set_bid(7_250_000, "halcyon")  # on the kept-alive connection: cut, then sent again
            assert bid.max_price_per_gpu_hour == 7_250_000 and proxy.hangups == 1
            puts = [r for r in k.sim.app.state.received if r.method == "PUT"]
            assert len(puts) == 1  # the cut one never reached the box; the one sent again did, once
            with pytest.raises(NetworkError, match="RemoteProtocolError"):
                await nc.add_ssh_key("org", "laptop", "ssh-ed25519 AAAA laptop")
            assert proxy.hangups == 2 and not [r for r in k.sim.app.state.received if r.path.endswith("ssh-keys")]

        await kc.list("nodes")  # signed in (the plugin talks to the box itself)
        assert await kc.get("jobs", "later") is None  # cut, sent again
        assert proxy.hangups == 3
        res = await kc.apply([busybox_job("later", "echo hi")])  # its GET goes again; its create, after, is cut
        assert res[0].error and "Server disconnected" in res[0].error and proxy.hangups == 5
        assert k.api("/apis/batch/v1/namespaces/default/jobs")["items"] == []  # not created, and never twice
    finally:
        await kc.aclose()
        await proxy.close()
