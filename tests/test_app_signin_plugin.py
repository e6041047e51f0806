"""A kubeconfig's exec plugin is a command the service chose (kube/plugins.py, flows/connect.py): the box serves
a hostile kubeconfig answer (/_sim/kubeconfig/exec, as an intercepted ``--api http://…`` would); ncui shows the
command and asks before its first run, remembers the answer per cluster and command, keeps nothing of a refused
kubeconfig; the two known plugins run without a question; the human's kuberc policy refuses even those; ``ncui
report`` follows the same rule without asking."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from ncui.app import NCApp
from ncui.backend import Backend
from ncui.kube import plugins
from ncui.kube.kubeconfig import KubeHome
from ncui.kube.session import ExecSpec
from ncui.screens.modals import ConfirmModal, SignInModal
from ncui.store import Store

from .apphelp import loaded, screen_text, until
from .conftest import endpoints_of


def _app(sim, home: KubeHome) -> NCApp:
    backend = Backend(endpoints_of(sim), SecretStr(sim.token), timeout=5, clock=sim.world.now, kube_home=home)
    return NCApp(backend, store=Store(clock=lambda: 1000.0), mode="test")


def _hostile(sim, *args: str, command: str = "/bin/sh") -> None:
    """The box's kubeconfig answer names ``command args`` as its sign-in plugin from now on."""
    r = httpx.post(
        sim.api_url + "/_sim/kubeconfig/exec",
        json={"command": command, "args": list(args)},
        headers={"Authorization": f"Bearer {sim.token}"},
    )
    assert r.status_code == 200, r.text


def _said(app) -> str:
    return " ".join(" ".join(n.message for n in list(app._notifications)).split())


def _kuberc(text: str) -> None:
    Path(os.environ["KUBERC"]).write_text(text)


def _signin_error(app) -> str:
    return app.store.get("kube_signin").error or ""


async def test_a_hostile_sign_in_command_is_shown_asked_and_remembered_per_cluster_and_command(sim, tmp_path):
    marker = tmp_path / "MARKER"
    # An escape sequence in an argument (a shell comment here): shown stripped, and the question says so.
    _hostile(sim, "-c", f"touch {marker} #\x1b[31mred\x1b]0;title\x07")
    home = KubeHome(tmp_path / ".kube", tmp_path / "answers.json")
    app = _app(sim, home)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the sign-in command question")
        text = flat = screen_text(app)
        assert "Run halcyon's sign-in command?" in text
        assert f"/bin/sh -c 'touch {marker} #red'" in flat  # the command and its arguments, as a shell line
        assert "\x1b" not in text and "\x07" not in text and "title" not in text
        assert "control characters or escape sequences; they are not shown" in flat
        assert "neither National Compute's nc-signin nor ncui's own sign-in" in flat
        assert "Do not run it: nothing runs, and ncui neither saves halcyon's kubeconfig nor signs in." in flat
        # No: nothing runs, nothing is saved, no context merged; the words say so.
        await pilot.press("n")
        await until(pilot, lambda: "You said no" in _said(app), what="the refusal said")
        assert "Not signed in to halcyon: its kubeconfig was not saved and no context was added." in _said(app)
        assert _signin_error(app) == "you said no to its sign-in command (s asks again)"  # Account's kubectl line
        await pilot.pause(0.2)
        assert not marker.exists()
        assert not (tmp_path / ".kube" / "halcyon.yaml").exists() and not (tmp_path / ".kube" / "config").exists()
        assert not isinstance(app.screen, SignInModal)
        spec = ExecSpec("/bin/sh", ("-c", f"touch {marker} #\x1b[31mred\x1b]0;title\x07"), (), "")
        assert plugins.answer(sim.api_url, "halcyon", spec) is False  # remembered, in the XDG state dir
        state = Path(os.environ["XDG_STATE_HOME"]) / "ncui" / "sign-in-plugins.json"
        assert json.loads(state.read_text())["version"] == plugins.VERSION
        # Workloads connects on its own: the remembered no refuses it, without a question, and keeps nothing.
        await pilot.press("4")
        await until(pilot, lambda: "You said no to halcyon's sign-in command before" in _said(app))
        assert not isinstance(app.screen, ConfirmModal)
        await pilot.pause(0.2)
        assert not marker.exists() and not (tmp_path / ".kube" / "halcyon.yaml").exists()
        await pilot.press("1")

        # s asks again (a remembered no); yes runs it.
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="asked again after a no")
        await pilot.press("y")
        await until(pilot, lambda: marker.exists(), what="the command ran")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmModal))
        assert plugins.answer(sim.api_url, "halcyon", spec) is True
        # It ran and gave no link: said so (not an empty "Sign-in failed:"), and no longer "refused".
        await until(pilot, lambda: "Sign-in failed: the sign-in plugin gave no link" in _said(app))
        assert "refused" not in screen_text(app)

        # Remembered: it runs again with no question (it could only run after a yes otherwise).
        marker.unlink()
        await pilot.press("s")
        await until(pilot, lambda: marker.exists(), what="the remembered command ran again")
        assert not isinstance(app.screen, ConfirmModal)

        # Another command (the arguments changed): asked again; no runs nothing.
        other = tmp_path / "OTHER"
        _hostile(sim, "-c", f"touch {other}")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="asked for the changed command")
        assert f"/bin/sh -c 'touch {other}'" in screen_text(app)
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmModal))
        await pilot.pause(0.2)
        assert not other.exists()
    assert not (tmp_path / ".kube" / "halcyon.yaml").exists()


async def test_the_humans_kuberc_deny_all_refuses_even_the_known_plugin(sim, tmp_path):
    _kuberc("apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: DenyAll\n")
    home = KubeHome(tmp_path / ".kube", tmp_path / "answers.json")
    app = _app(sim, home)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("s")
        await until(pilot, lambda: "DenyAll" in _said(app), what="the kuberc's refusal said")
        assert _signin_error(app) == "your kuberc denies every sign-in plugin (DenyAll)"
        said = _said(app)
        assert f"Your kuberc ({os.environ['KUBERC']}) sets credentialPluginPolicy: DenyAll" in said
        assert "ncui runs no sign-in plugin" in said and "-m ncui.kube.signin" in said
        assert not isinstance(app.screen, (ConfirmModal, SignInModal))  # never asked, never a link
    assert not list(Path(os.environ["NCUI_KUBE_CACHE"]).glob("*.pending.json"))  # the box's plugin never ran
    assert not (tmp_path / ".kube" / "halcyon.yaml").exists()


async def test_a_kuberc_allowlist_allows_exactly_the_names_listed(sim, tmp_path):
    home = KubeHome(tmp_path / ".kube", tmp_path / "answers.json")
    # The known plugin listed (by its full path): it runs, and its link comes up.
    _kuberc(
        "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: Allowlist\n"
        f"credentialPluginAllowlist:\n- name: {sys.executable}\n"
    )
    app = _app(sim, home)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the sign-in link")
    # Another name listed only: the known plugin is refused, with the kuberc's words.
    _kuberc(
        "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: Allowlist\n"
        "credentialPluginAllowlist:\n- name: nc-signin\n"
    )
    app = _app(sim, home)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("s")
        await until(pilot, lambda: "Allowlist" in _said(app), what="the allowlist's refusal")
        said = _said(app)
        assert (
            "sets credentialPluginPolicy: Allowlist and its credentialPluginAllowlist (nc-signin) does not name" in said
        )
        assert not isinstance(app.screen, (ConfirmModal, SignInModal))


def _exe(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("#!/bin/sh\nexit 0\n")
    p.chmod(0o755)
    return p


def test_allowlist_names_match_as_exec_lookpath_does_and_misconfigurations_refuse(tmp_path, monkeypatch):
    bin1, bin2 = tmp_path / "bin1", tmp_path / "bin2"
    login = _exe(bin1, "cloud-login")
    _exe(bin2, "cloud-login")
    monkeypatch.setenv("PATH", f"{bin1}:{bin2}")
    api = "http://127.0.0.1:9"

    def verdict(kuberc: str, command: str) -> plugins.Verdict:
        _kuberc("apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\n" + kuberc)
        return plugins.judge(ExecSpec(command, ("token",), (), ""), api, "halcyon")

    allow = "credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n"
    # a basename is looked up on PATH, a path taken as it is; the two must be the same string
    assert verdict(allow + "- name: cloud-login\n", "cloud-login").action == "ask"  # listed: ncui still asks
    assert verdict(allow + "- name: cloud-login\n", str(login)).action == "ask"  # LookPath: the same file
    assert verdict(allow + f"- name: {login}\n", "cloud-login").action == "ask"
    assert verdict(allow + "- name: cloud-login\n", str(bin2 / "cloud-login")).action == "refuse"  # another one
    assert verdict(allow + "- name: other\n- name: cloud-login\n", "cloud-login").action == "ask"  # any entry
    assert verdict(allow + "- name: missing\n", "missing").action == "refuse"  # a failed lookup: no match
    assert verdict("credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist: []\n", "cloud-login").action == (
        "refuse"
    )
    assert verdict("credentialPluginPolicy: AllowAll\n", "cloud-login").action == "ask"  # ncui's own rule stands
    assert verdict("", "cloud-login").action == "ask"
    # misconfigurations, as kubectl has them: no plugin runs, and the words say what is wrong
    for bad, words in [
        ("credentialPluginPolicy: Sometimes\n", "not AllowAll, DenyAll or Allowlist"),
        ("credentialPluginPolicy: DenyAll\ncredentialPluginAllowlist:\n- name: x\n", "is not Allowlist"),
        ("credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- {}\n", "entry without a name"),
        ("credentialPluginPolicy: [unclosed\n", "is not YAML"),
    ]:
        v = verdict(bad, "cloud-login")
        assert v.action == "refuse" and v.by_kuberc and words in v.reason, (bad, v)
    monkeypatch.setenv("KUBERC", "off")  # kubectl's way to turn the kuberc off
    assert plugins.judge(ExecSpec("cloud-login", (), (), ""), api, "halcyon").action == "ask"


def test_only_the_two_known_plugins_exactly_run_without_asking():
    api = "https://nationalcompute.com"

    def spec(command: str, *args: str, env: tuple[tuple[str, str], ...] = ()) -> ExecSpec:
        return ExecSpec(command, args, env, "client.authentication.k8s.io/v1")

    box = ("-m", "ncui.kube.signin", "--api", api, "--cluster", "halcyon")
    assert plugins.known(spec("nc-signin", "get-token", "--cluster", "halcyon"), api, "halcyon") == "nc-signin"
    assert plugins.known(spec("nc-signin", "get-token", "--cluster", "halcyon", "--api", api), api + "/", "halcyon")
    assert plugins.known(spec(sys.executable, *box), api, "halcyon") == "ncui"
    for other in [
        spec("nc-signin", "get-token", "--cluster", "osprey"),  # another cluster's
        spec("nc-signin", "get-token", "--cluster", "halcyon", "--api", "http://evil.example"),
        spec("/tmp/nc-signin", "get-token", "--cluster", "halcyon"),  # not the one on PATH
        spec("nc-signin", "get-token", "--cluster", "halcyon", env=(("LD_PRELOAD", "/tmp/x.so"),)),
        spec("/usr/bin/python3" if sys.executable != "/usr/bin/python3" else "python", *box),  # not ncui's Python
        spec(sys.executable, *box, "--poll"),
        spec(sys.executable, "-c", "import os"),
        spec("/bin/sh", "-c", "touch x"),
    ]:
        assert plugins.known(other, api, "halcyon") is None, other
        assert plugins.judge(other, api, "halcyon").action == "ask", other


@pytest.mark.parametrize("case", ["unknown", "answered-yes", "deny-all"])
def test_ncui_report_follows_the_same_rule_without_asking(sim, tmp_path, case):
    marker = tmp_path / "MARKER"
    if case == "deny-all":
        _kuberc("apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: DenyAll\n")
    else:
        _hostile(sim, "-c", f"touch {marker}")
    if case == "answered-yes":
        plugins.remember(sim.api_url, "halcyon", ExecSpec("/bin/sh", ("-c", f"touch {marker}"), (), ""), True)
    env = {**os.environ, "NC_TOKEN": sim.token}
    p = subprocess.run(
        [sys.executable, "-m", "ncui.cli", "report", "--json", "--api", sim.api_url, "--access", sim.access_url],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    why = json.loads(p.stdout)["unknown"].get("job", "")
    if case == "unknown":
        assert not marker.exists()
        assert why.startswith("ncui report did not run halcyon's sign-in command: it is neither") and "/bin/sh" in why
    elif case == "answered-yes":
        assert marker.exists()  # the human's yes, remembered: run (it gives no credential, so the job is unknown)
        assert "did not run" not in why
    else:
        assert why.startswith(f"Your kuberc ({os.environ['KUBERC']}) sets credentialPluginPolicy: DenyAll")
        assert not list(Path(os.environ["NCUI_KUBE_CACHE"]).glob("*.json"))
