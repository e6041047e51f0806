"""The history: every change ncui makes, as the command a person would type (curl from the very request sent,
kubectl --context, ssh), in history.jsonl, the History screen (h) and ``ncui history``; never the token."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest
from pydantic import SecretStr

from ncui import history
from ncui.api.client import NCClient
from ncui.api.errors import NCError
from ncui.history import History, history_path
from ncui.money import dollars_to_ucredits
from ncui.remote.local import LocalRunner
from ncui.remote.runner import SshRunner, run_noted
from ncui.screens.modals import ConfirmModal

from .apphelp import app_for, apply_train, screen_text, until
from .conftest import endpoints_of


def _data(command: str) -> str:
    """The body a curl line sends (its --data-raw word, as the shell reads it)."""
    words = shlex.split(command)
    return words[words.index("--data-raw") + 1]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ncui.cli", "history", *args], capture_output=True, text=True, timeout=60, env=os.environ
    )


async def test_train_applied_and_stopped_shows_its_commands_in_history_and_on_the_command_line(sim):
    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        ceiling = await apply_train(pilot, app, sim)
        await until(pilot, lambda: "nanogpt" in (app.store.value("k8s_jobs") or {}), timeout=30, what="the job")
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal) and "Stop" in screen_text(app))
        await pilot.press("y")
        await until(pilot, lambda: "nanogpt" not in (app.store.value("k8s_jobs") or {}), timeout=30, what="stopped")
        await until(pilot, lambda: any("delete" in e.command for e in app.history.session), what="the stop recorded")

        await pilot.press("h")
        await until(pilot, lambda: type(app.screen).__name__ == "HistoryScreen", what="the History screen")
        options = app.screen.query_one("#entries")
        shown = [options.get_option_at_index(i).prompt.plain for i in range(options.option_count)]
        text = "\n".join(shown)
        put = "curl -fsS -X PUT -H \"Authorization: Bearer $NC_TOKEN\" -H 'Content-Type: application/json'"
        assert put in text and f"{sim.api_url}/api/k8s/bid?cluster=halcyon" in text
        assert f"set the limit price to ${ceiling}/GPU-h on halcyon" in text
        assert "kubectl --context halcyon get nodes" in text  # the sign-in, approved
        apply_line = f"kubectl --context halcyon apply -f {sim.access_url}/first-job/nanogpt-job-nvidia.yaml"
        assert apply_line in text and "job.batch/nanogpt created" in text
        assert "kubectl --context halcyon delete job nanogpt" in text
        assert shown[-1].endswith("kubectl --context halcyon delete job nanogpt")  # newest last, highlighted
        assert options.highlighted == options.option_count - 1
        await pilot.press("enter")
        assert app.clipboard == "kubectl --context halcyon delete job nanogpt"  # Enter copies the command alone

        # The curl is the request sent: its body is the body the box received for the bid, byte for byte.
        bid_line = next(e.command for e in app.history.session if "/api/k8s/bid" in e.command)
        got = [r for r in sim.app.state.received if r.method == "PUT" and r.path == "/api/k8s/bid"]
        assert len(got) == 1 and got[0].body.decode() == _data(bid_line) and got[0].query == "cluster=halcyon"
        assert json.loads(_data(bid_line)) == {"max_price_per_gpu_hour": float(ceiling)}
        assert world.main_org.k8s["halcyon"].bid == dollars_to_ucredits(ceiling)
        await pilot.press("escape")

    # The same on the command line: plain text, each command under its "# when — what" comment, oldest first.
    out = _cli("--api", sim.api_url)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("# ") and " — " in lines[0]
    assert all(line.startswith("# ") for line in lines[0::2]) and not any(line.startswith("#") for line in lines[1::2])
    assert apply_line in lines and "kubectl --context halcyon delete job nanogpt" == lines[-1]
    assert lines.index(apply_line) < lines.index("kubectl --context halcyon delete job nanogpt")
    # Nothing for the real service here: said on stderr, with where there is something.
    other = _cli()
    assert other.stdout == "" and f"Recorded for: {sim.api_url}" in other.stderr
    raw = history_path().read_bytes()
    assert sim.token.encode() not in raw and b"$NC_TOKEN" in raw  # never the token
    assert history_path().stat().st_mode & 0o777 == 0o600


async def test_the_curl_line_replays_the_request_and_the_file_survives_two_writers_and_a_bad_line(sim, tmp_path):
    h = History(sim.api_url)
    async with NCClient(endpoints_of(sim), SecretStr(sim.token), timeout=5, history=h) as nc:
        await nc.set_bid(dollars_to_ucredits("7.25"), "halcyon")
        # A write the box refuses is recorded too, as failed.
        with pytest.raises(NCError):
            await nc.set_bid(1, "halcyon")
    # Remote actions: on the login node as typed; over ssh as `ssh [-p PORT] user@host 'command'`.
    await run_noted(LocalRunner(history=h), "echo submitted", "a local change", timeout=30)
    # A client given no history records nothing (and says nothing): the lower layers' own tests, `ncui sim`.
    async with NCClient(endpoints_of(sim), SecretStr(sim.token), timeout=5) as nc:
        await nc.set_bid(dollars_to_ucredits("7.25"), "halcyon")
    await run_noted(LocalRunner(), "echo unrecorded", "a local change", timeout=30)
    assert [e.ok for e in h.session] == [True, False, True]
    assert h.session[2].kind == "shell" and h.session[2].command == "echo submitted"
    node = SshRunner("127.10.0.3", 2222, "ubuntu", known_hosts=tmp_path / "kh")
    assert node.shell_line("docker rm -f nanogpt") == "ssh -p 2222 ubuntu@127.10.0.3 'docker rm -f nanogpt'"

    # Run the recorded curl as a person would (the token from the environment): the box gets the same body.
    line = h.session[0].command
    world = sim.world
    world.main_org.k8s["halcyon"].bid = 0
    env = {**os.environ, "NC_TOKEN": sim.token}
    subprocess.run(["sh", "-c", line + " >/dev/null"], env=env, check=True, timeout=30)
    puts = [r for r in sim.app.state.received if r.method == "PUT"]
    assert puts[-1].body == puts[0].body and puts[-1].query == puts[0].query == "cluster=halcyon"
    assert world.main_org.k8s["halcyon"].bid == dollars_to_ucredits("7.25")

    # Two processes appending at once: every line whole. Then a broken line: skipped and said, never a crash.
    path = tmp_path / "h.jsonl"
    code = (
        "import sys; from pathlib import Path; from ncui.history import History; "
        "h = History('http://two', Path(sys.argv[1])); "
        "[h.record('kubectl', 'kubectl --context c get nodes ' + sys.argv[2] * 3000, str(i), True) "
        "for i in range(150)]"
    )
    writers = [subprocess.Popen([sys.executable, "-c", code, str(path), w]) for w in "ab"]
    assert all(p.wait(timeout=60) == 0 for p in writers)
    with open(path, "ab") as f:
        f.write(b'{"at": "not a time"\n')
    read = History("http://two", path).read()
    assert len(read.entries) == 300 and {e.command[-1] for e in read.entries} == {"a", "b"}
    assert len(read.problems) == 1 and read.problems[0].startswith("h.jsonl line 301 is not a history entry (")
    assert path.stat().st_mode & 0o777 == 0o600
    # A token that somehow reached a command is never written.
    History("http://two", path).record("curl", "curl -H 'Authorization: Bearer s3cret' http://two/x", "x", True)
    assert b"s3cret" not in path.read_bytes()


async def test_the_backend_makes_the_history_and_hands_it_to_its_client(sim, tmp_path):
    """The backend knows the service: it makes the History (dated on the service's clock) and builds its client
    with it; what the client sends is recorded there, in the history file of that service alone."""
    from ncui.backend import Backend

    backend = Backend(endpoints_of(sim), SecretStr(sim.token), timeout=5, clock=sim.world.now)
    assert backend.history is None  # (not before the endpoints are known)
    nc = await backend.connect()
    try:
        h = backend.history
        assert h is not None and nc.history is h and h.origin == history.origin_of(sim.api_url)
        before = sim.world.now()
        await nc.set_bid(dollars_to_ucredits("7.25"), "halcyon")
        after = sim.world.now()
    finally:
        await backend.close()
    assert [(e.kind, e.ok) for e in h.session] == [("curl", True)] and "halcyon" in h.session[0].command
    assert before <= h.session[0].at <= after  # on the box's clock (its scenario's day), not the wall's
    assert [e.command for e in h.read().entries] == [h.session[0].command]


def test_kubectl_lines_name_the_kubeconfig_while_config_has_no_such_context(tmp_path):
    """The context merge declined (or not asked yet): ``kubectl --context halcyon …`` alone finds no context, so
    the history's line is ``KUBECONFIG=~/.kube/halcyon.yaml kubectl --context halcyon …``; once config has it,
    the guide's line as it is."""
    h = History("http://box", path=tmp_path / "history.jsonl")
    h.kubeconfig_for("halcyon", "~/.kube/halcyon.yaml")
    h.note("kubectl", history.kubectl_command("halcyon", "get", "nodes"), "signed in", True)
    h.note("kubectl", "kubectl --context other delete job nanogpt", "stop", True)
    h.kubeconfig_for("halcyon", "")
    h.note("kubectl", history.kubectl_command("halcyon", "delete", "job", "nanogpt"), "stop", True)
    assert [e.command for e in h.session] == [
        "KUBECONFIG=~/.kube/halcyon.yaml kubectl --context halcyon get nodes",
        "kubectl --context other delete job nanogpt",
        "kubectl --context halcyon delete job nanogpt",
    ]


def test_the_commands_a_sentence_names_name_the_kubeconfig_too(tmp_path):
    """The Report's "nothing to stop: …; kubectl --context halcyon delete job nanogpt removes it" (a command inside a
    sentence) names the file as History does; one that names its file already, or another cluster's, stays."""
    h = History("http://box", path=tmp_path / "history.jsonl")
    h.kubeconfig_for("halcyon", "~/.kube/halcyon.yaml")
    said = "nothing to stop: job/nanogpt has ended; kubectl --context halcyon delete job nanogpt removes it"
    assert h.with_kubeconfigs(said) == said.replace(
        "kubectl --context", "KUBECONFIG=~/.kube/halcyon.yaml kubectl --context"
    )
    done = "KUBECONFIG=~/.kube/halcyon.yaml kubectl --context halcyon get nodes; kubectl --context other get pods"
    assert h.with_kubeconfigs(done) == done
    h.kubeconfig_for("halcyon", "")
    assert h.with_kubeconfigs(said) == said


def test_the_chats_curl_names_the_kubeconfig_while_config_has_no_such_context(tmp_path):
    """The chat's Ctrl+R/Ctrl+T curl starts with the port-forward: with the context merge declined it reads
    ``KUBECONFIG=~/.kube/halcyon.yaml kubectl --context halcyon port-forward …``, which works as typed."""
    from ncui.kube.chat import Endpoint, curl_command

    ep = Endpoint(service="infera", port=8000, model="moonshotai/Kimi-K3", recipe="Kimi K3", behind=())
    body = {"model": "moonshotai/Kimi-K3", "messages": [{"role": "user", "content": "hello"}]}
    h = History("http://box", path=tmp_path / "history.jsonl")
    h.kubeconfig_for("halcyon", "~/.kube/halcyon.yaml")
    declined = curl_command(ep, body, "halcyon", h).splitlines()[0]
    h.kubeconfig_for("halcyon", "")
    merged = curl_command(ep, body, "halcyon", h).splitlines()[0]
    alone = curl_command(ep, body, "halcyon", None).splitlines()[0]  # (no history: the guide's line as it is)
    assert declined == "KUBECONFIG=~/.kube/halcyon.yaml kubectl --context halcyon port-forward svc/infera 8000:8000 &"
    assert merged == alone == "kubectl --context halcyon port-forward svc/infera 8000:8000 &"
