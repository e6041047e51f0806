"""The notifications' plain parts (ncui/notify): which escape sequence a terminal gets, tmux's passthrough, that no
control character from a server's text rides in one, the settings file, the moments read off the store."""

from __future__ import annotations

import json
import subprocess
from types import SimpleNamespace

import pytest

from ncui import notify
from ncui.notify import KINDS, Moment, Notifier, Settings
from ncui.notify.escape import BEL, ESC, ST, protocol, safe, sequence, tmux_passthrough, wrap_tmux
from ncui.notify.moments import StoreMoments
from ncui.store import Store

HOSTILE = "evil\x1b]0;PWNED\x07\x1b[2J\x9b31m\x9d8;;x\x9c\x07\x1b\\;name\x00\x7f\u202e"
CONTROLS = [chr(c) for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))]


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({"TERM": "xterm-kitty"}, "osc99"),
        ({"TERM": "xterm-256color", "KITTY_WINDOW_ID": "3"}, "osc99"),
        ({"TERM": "xterm-256color", "VTE_VERSION": "7600"}, "osc777"),
        ({"TERM": "foot"}, "osc777"),
        ({"TERM": "rxvt-unicode-256color"}, "osc777"),
        ({"TERM": "xterm-256color", "TERM_PROGRAM": "iTerm.app"}, "osc9"),
        ({"TERM": "xterm-256color", "TERM_PROGRAM": "WezTerm"}, "osc9"),
        ({"TERM": "xterm-256color", "WT_SESSION": "abc"}, "osc9"),
        ({"TERM": "xterm-256color"}, "bell"),
        ({}, "bell"),
    ],
)
def test_the_protocol_by_terminal(env, want):
    assert protocol(env, passthrough=lambda: pytest.fail("asked tmux outside tmux")) == want


def test_inside_tmux_a_sequence_only_with_passthrough_else_the_bell():
    env = {"TMUX": "/tmp/tmux-1/default,1,0", "TERM": "tmux-256color", "TERM_PROGRAM": "tmux", "KITTY_WINDOW_ID": "1"}
    assert protocol(env, passthrough=lambda: True) == "osc99"
    assert protocol(env, passthrough=lambda: False) == "bell"
    assert protocol({**env, "KITTY_WINDOW_ID": ""}, passthrough=lambda: True) == "bell"  # nothing known outside
    # WezTerm inside tmux: TERM_PROGRAM is tmux's; WezTerm's own variable, which the tmux server keeps, says it
    wez = {"TMUX": env["TMUX"], "TERM": "tmux-256color", "TERM_PROGRAM": "tmux", "WEZTERM_PANE": "0"}
    assert protocol(wez, passthrough=lambda: True) == "osc9"


@pytest.mark.parametrize(
    ("out", "rc", "want"), [("on\n", 0, True), ("all\n", 0, True), ("off\n", 0, False), ("", 1, False)]
)
def test_tmux_passthrough_is_what_tmux_says(out, rc, want):
    def run(argv, **kw):
        assert argv == ["tmux", "show", "-gv", "allow-passthrough"]
        return subprocess.CompletedProcess(argv, rc, out, "")

    assert tmux_passthrough(run) is want

    def missing(argv, **kw):
        raise FileNotFoundError("tmux")

    assert tmux_passthrough(missing) is False


@pytest.mark.peers("tmux")
def test_tmux_passthrough_against_a_real_tmux(tmp_path):
    sock = str(tmp_path / "s")
    tmux = ["tmux", "-S", sock]
    subprocess.run([*tmux, "-f", "/dev/null", "new-session", "-d", "-s", "t", "sh"], check=True, timeout=30)
    try:

        def run(argv, **kw):
            return subprocess.run([*tmux, *argv[1:]], **kw)

        subprocess.run([*tmux, "set", "-g", "allow-passthrough", "on"], check=True, timeout=30)
        assert tmux_passthrough(run) is True
        subprocess.run([*tmux, "set", "-g", "allow-passthrough", "off"], check=True, timeout=30)
        assert tmux_passthrough(run) is False
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=30)


def test_each_sequence_as_its_terminal_reads_it():
    assert sequence("osc99", "A node joined", "node-1 is Ready") == (
        f"{ESC}]99;i=1:d=0:p=title;A node joined{ST}{ESC}]99;i=1:d=1:p=body;node-1 is Ready{ST}"
    )
    assert sequence("osc777", "Job failed", "job/x; it failed") == f"{ESC}]777;notify;Job failed;job/x, it failed{ST}"
    assert sequence("osc9", "Job failed", "job/x failed.") == f"{ESC}]9;Job failed: job/x failed.{BEL}"
    assert sequence("bell", "Job failed", "job/x failed.") == BEL
    assert sequence("osc99", "t", "b", ident=7).count("i=7") == 2


def test_tmux_wrapping_doubles_every_escape():
    inner = sequence("osc9", "T", "b")
    assert wrap_tmux(inner) == f"{ESC}Ptmux;{ESC}{ESC}]9;T: b{BEL}{ST}"
    wrapped = sequence("osc99", "T", "b", tmux=True)
    assert wrapped.startswith(f"{ESC}Ptmux;{ESC}{ESC}]99;") and wrapped.endswith(f"{ESC}{ESC}\\{ST}")
    body = wrapped[len(f"{ESC}Ptmux;") : -len(ST)]
    assert ESC not in body.replace(ESC + ESC, "")  # no lone ESC inside: tmux would end the passthrough there


@pytest.mark.parametrize("proto", ["osc99", "osc777", "osc9"])
def test_no_control_character_from_a_hostile_name_reaches_the_sequence(proto):
    seq = sequence(proto, f"Job failed {HOSTILE}", f"job/{HOSTILE} failed")
    # the sequence's own framing is all the controls there are: its introducers and terminators
    frame = {"osc99": 4, "osc777": 2, "osc9": 2}[proto]  # (ESC ] … ESC \\ each; OSC 9 ends with a BEL)
    found = [c for c in seq if c in CONTROLS]
    assert len(found) == frame, [hex(ord(c)) for c in found]
    assert "PWNED" not in seq and "\u202e" not in seq
    if proto == "osc777":
        assert seq.count(";") == 3  # notify;title;body: a ';' in a name cannot add a field
    for c in CONTROLS:
        assert c not in safe(HOSTILE + c, 500)


def test_safe_keeps_printable_text_and_cuts_long_text():
    assert safe("node-1 is Ready (8 GPUs)", 80) == "node-1 is Ready (8 GPUs)"
    assert safe("line one\nline two\ttab", 80) == "line one line two tab"
    long = safe("x" * 500, 80)
    assert len(long) == 80 and long.endswith("…")


# ---- the settings file -----------------------------------------------------------------------------------------


def test_settings_default_all_on_and_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert notify.settings_path() == tmp_path / "ncui" / "notify.json"
    s = notify.load()
    assert s.problem == "" and all(s.enabled(k) for k in KINDS)
    off = s.toggled("loss").toggled("limit")
    notify.save(off)
    doc = json.loads((tmp_path / "ncui" / "notify.json").read_text())
    assert doc == {"desktop": {k: k not in ("loss", "limit") for k in KINDS}}
    again = notify.load()
    assert again.problem == "" and not again.enabled("loss") and not again.enabled("limit") and again.enabled("node")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{not json", "is not JSON"),
        ('["desktop"]', 'needs {"desktop"'),
        ('{"desktop": 3}', 'needs {"desktop"'),
        ('{"desktop": {"node": "yes", "nope": false, "job": false}}', "node, nope not understood"),
        (b"\xff\xfe", "could not be read"),
    ],
)
def test_a_malformed_settings_file_is_said_and_gives_the_defaults(tmp_path, text, said):
    path = tmp_path / "notify.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    s = notify.load(path)
    assert said in s.problem and str(path) in s.problem
    assert all(s.enabled(k) for k in KINDS if k != "job")
    if "job" in text if isinstance(text, str) else False:
        assert not s.enabled("job")  # what it understood, it keeps


# ---- the notifier ---------------------------------------------------------------------------------------------


def _notifier(*, focused=False, quiet=False, settings=None, proto="osc9", tmux=False):
    said, wrote = [], []
    n = Notifier(
        settings or Settings(),
        say=said.append,
        write=wrote.append,
        desktop_now=lambda: not focused,
        protocol=lambda: proto,
        quiet=quiet,
        tmux=tmux,
    )
    return n, said, wrote


def test_the_notifier_says_always_and_writes_only_unfocused_unquiet_and_on():
    m = Moment("job", "Job failed", "job/x failed.", "error")
    n, said, wrote = _notifier()
    n.moment(m)
    assert said == [m] and wrote == [f"{ESC}]9;Job failed: job/x failed.{BEL}"]
    for kw in ({"focused": True}, {"quiet": True}, {"settings": Settings().toggled("job")}):
        n, said, wrote = _notifier(**kw)
        n.moment(m)
        assert said == [m] and wrote == [], kw
    n, said, wrote = _notifier()
    n.moment(m, in_app=False)
    assert said == [] and len(wrote) == 1
    n, said, wrote = _notifier(proto="osc99", tmux=True)
    n.moment(m)
    assert wrote[0].startswith(f"{ESC}Ptmux;")
    n, said, wrote = _notifier(proto="bell", tmux=True)
    n.moment(m)
    assert wrote == [BEL]  # (tmux passes a bell on by itself)


# ---- the moments the store shows -----------------------------------------------------------------------------------


def _node(name, ready, uid=None):
    return {
        "metadata": {"name": name, "uid": uid or name},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def _job(name, cond=None):
    conds = [{"type": cond, "status": "True"}] if cond else []
    return {"metadata": {"name": name, "uid": name}, "status": {"conditions": conds}}


def _dep(name, ready, want=1):
    return {"metadata": {"name": name, "uid": name}, "spec": {"replicas": want}, "status": {"readyReplicas": ready}}


def _pod(name, disrupted=False, node="n1"):
    conds = [{"type": "DisruptionTarget", "status": "True", "message": "reclaimed by the market"}] if disrupted else []
    return {"metadata": {"name": name, "uid": name}, "spec": {"nodeName": node}, "status": {"conditions": conds}}


def test_the_store_moments_each_once_and_none_for_what_stood():
    store = Store()
    store.meta["cluster"] = SimpleNamespace(name="halcyon")
    store.set("k8s_nodes", {"cpu": _node("cpu", True)})  # what stands at the start: not announced
    store.set("k8s_jobs", {"old": _job("old", "Complete")})
    got: list[Moment] = []
    unsub = StoreMoments(store, got.append).start()
    store.set("k8s_nodes", {"cpu": _node("cpu", True), "gpu-1": _node("gpu-1", False)})
    assert got == []
    for _ in range(3):  # every poll after: once
        store.set("k8s_nodes", {"cpu": _node("cpu", True), "gpu-1": _node("gpu-1", True)})
    assert [(m.kind, m.body) for m in got] == [("node", "Node gpu-1 is Ready on halcyon: it bills from now.")]
    got.clear()
    store.set("k8s_jobs", {"old": _job("old", "Complete"), "train": _job("train")})
    store.set("k8s_jobs", {"old": _job("old", "Complete"), "train": _job("train", "Failed")})
    store.set("k8s_jobs", {"old": _job("old", "Complete"), "train": _job("train", "Failed")})
    store.set("k8s_pods", {"p": _pod("p")})  # (the first look at pods)
    store.set("k8s_pods", {"p": _pod("p", True)})
    store.set("k8s_pods", {"p": _pod("p", True), "q": _pod("q")})
    store.set("k8s_deployments", {})
    store.set("k8s_deployments", {"inkling": _dep("inkling", 0), "web": _dep("web", 1, 2)})
    store.set("k8s_deployments", {"inkling": _dep("inkling", 1), "web": _dep("web", 2, 2)})
    store.set(
        "k8s_deployments", {"kimi-k3-worker": _dep("kimi-k3-worker", 1), "infera-router": _dep("infera-router", 1)}
    )
    assert [(m.kind, m.title) for m in got] == [
        ("job", "Job failed"),
        ("reclaim", "Reclaimed"),
        ("ready", "READY 1/1"),
        ("ready", "READY 2/2"),
    ]
    assert got[2].body == "Inkling on halcyon is READY 1/1: it answers now."  # the serve, by its recipe
    got.clear()
    store.clear("k8s_nodes")  # another cluster: its first look is not announced
    store.set("k8s_nodes", {"other": _node("other", True)})
    assert got == []
    unsub()
    store.set("k8s_nodes", {"other": _node("other", True), "new": _node("new", True)})
    assert got == []


def test_the_vm_research_and_slurm_moments():
    from ncui.api import models as m
    from ncui.remote.slurm import SlurmJob

    def cap(*allocs):
        return m.VmCapacity.model_validate(
            {
                "version": 1,
                "max_gpus": 8,
                "max_price_per_gpu_hour": 3.0,
                "environment": {"ssh_user": "ubuntu"},
                "allocations": [{"id": i, "state": s, "gpus": 8, "gpu_model": "H100"} for i, s in allocs],
            }
        )

    store = Store()
    got: list[Moment] = []
    StoreMoments(store, got.append).start()
    store.set("vm_capacity", cap(("a1", "provisioning")))
    store.set("vm_capacity", cap(("a1", "active")))
    store.set("vm_capacity", cap(("a1", "active")))
    store.set("vm_capacity", cap(("a1", "reclaimed")))
    research = {"state": "queued", "hostname": f"rn{HOSTILE}", "gpus": 8, "gpu_model": "H100"}
    store.set("research", m.ResearchStatus.model_validate(research))
    store.set("research", m.ResearchStatus.model_validate({**research, "state": "assigned"}))
    store.set("slurm_jobs", (SlurmJob("12", "nanogpt", "RUNNING"),))
    store.set("slurm_jobs", ())
    assert [(x.kind, x.title) for x in got] == [
        ("node", "A VM node is active"),
        ("reclaim", "Reclaimed"),
        ("research", "Research node assigned"),
        ("job", "Slurm job ended"),
    ]
    assert not any(c in x.body for x in got for c in CONTROLS)  # cleaned where the moment is made, too


async def test_the_palettes_notifications_toggle_a_kind_and_save_it(tmp_path, monkeypatch):
    """Ctrl-P, Notifications: Space turns the highlighted kind off, Esc saves the file; a malformed file before it is
    said on screen (the defaults used), never a traceback."""
    from ncui.app import NCApp

    from .apphelp import notes, until

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "ncui").mkdir()
    (tmp_path / "ncui" / "notify.json").write_text("{broken")
    app = NCApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.notifier is not None and all(app.notifier.settings.enabled(k) for k in KINDS)
        await until(pilot, lambda: "is not JSON" in notes(app), what="the settings file's problem, said")
        app.action_notify_settings()
        await pilot.pause()
        await pilot.press("space")  # the first kind: a node joined
        await pilot.press("escape")
        await pilot.pause()
        assert not app.notifier.settings.enabled("node") and app.notifier.settings.enabled("job")
    assert notify.load().on == {k: k != "node" for k in KINDS}
