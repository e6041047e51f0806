"""Connect and start as the guide does (flows/connect.py): the kubeconfig where the human's own kubectl
finds it, the hand-off's --recipe/--cluster, a Marshall workspace's credential, the demo's sign-in."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import yaml
from pydantic import SecretStr
from textual.widgets._toast import Toast

from ncui.app import NCApp
from ncui.backend import Backend, DemoOptions
from ncui.config import WORKSPACE_NOTE, first_run_message, load_token
from ncui.flows.connect import Handoff
from ncui.kube.kubeconfig import KubeHome
from ncui.screens.modals import ConfirmModal, SignInModal
from ncui.store import Store

from .apphelp import loaded, screen_text, to_apply_question, until
from .conftest import endpoints_of
from .kube_support import _pythonpath
from .peers import need_peer


def _app(sim, *, kube_home: KubeHome | None = None, handoff: Handoff | None = None) -> NCApp:
    backend = Backend(endpoints_of(sim), SecretStr(sim.token), timeout=5, clock=sim.world.now, kube_home=kube_home)
    return NCApp(backend, store=Store(clock=lambda: 1000.0), mode="test", handoff=handoff)


def _said(app) -> str:
    return "\n".join(n.message for n in list(app._notifications))


async def _approve(sim, link: str) -> None:
    async with httpx.AsyncClient() as h:
        r = await h.post(sim.api_url + "/device", data={"code": link.split("code=", 1)[1]})
        assert r.status_code == 200


async def test_the_kubeconfig_lands_in_kube_and_the_humans_own_kubectl_works_beside_ncui(sim, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    kube = home / ".kube"
    kube.mkdir(parents=True)
    theirs = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "prod", "cluster": {"server": "https://prod.example:6443"}}],
        "users": [{"name": "me", "user": {"token": "abc"}}],
        "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "me"}}],
        "current-context": "prod",
    }
    (kube / "config").write_text(yaml.safe_dump(theirs))
    app = _app(sim, kube_home=KubeHome.default())
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the sign-in")
        assert "a approves" not in screen_text(app)  # not the demo: the human's browser step only
        await _approve(sim, app.screen.link)
        # Once connected, asked once: the question names both files and what stays.
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), timeout=30, what="the context question")
        text = screen_text(app)
        assert "Let your own kubectl use halcyon?" in text and "~/.kube/halcyon.yaml" in text
        assert "~/.kube/config" in text and "other contexts stay" in text
        path = kube / "halcyon.yaml"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and "ncui.kube.signin" in path.read_text()
        await pilot.press("y")
        await until(pilot, lambda: getattr(app.store.value("kube_files"), "context", "") == "in config")
        await pilot.press("1")
        await until(pilot, lambda: "--context halcyon works in any shell" in screen_text(app))
        assert "~/.kube/halcyon.yaml" in screen_text(app)
    doc = yaml.safe_load((kube / "config").read_text())
    assert doc["current-context"] == "prod" and [c["name"] for c in doc["contexts"]] == ["prod", "halcyon"]
    assert doc["users"][0] == theirs["users"][0]
    # The human's own kubectl, in a shell beside ncui: ~/.kube/config and the sign-in ncui did.
    env = {**os.environ, "HOME": str(home), "KUBECACHEDIR": str(tmp_path / "kcache"), "PYTHONPATH": _pythonpath()}
    env.pop("KUBECONFIG", None)
    p = await asyncio.to_thread(
        subprocess.run,
        [need_peer("kubectl"), "--context", "halcyon", "get", "pods"],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert "No resources found in default namespace" in p.stderr
    # The next session remembers the answer: never asked again, the context kept current.
    app = _app(sim, kube_home=KubeHome.default())
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("s")  # signed in silently (the sign-in is cached)
        await until(pilot, lambda: getattr(app.store.value("kube_files"), "context", "") == "in config", timeout=30)
        await until(pilot, lambda: loaded(app, "k8s_pods", "k8s_nodes"))
        assert not isinstance(app.screen, ConfirmModal)


async def test_no_leaves_the_config_alone_and_is_remembered(sim, tmp_path):
    home = KubeHome(tmp_path / ".kube", tmp_path / "answers.json")
    app = _app(sim, kube_home=home)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:  # (toasts drawn, as in a terminal)
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the sign-in")
        await _approve(sim, app.screen.link)
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), timeout=30, what="the context question")
        # The sign-in's toast, still up as the question opens: on the question's top rows, clear of its text, its
        # buttons and its Enter line (at the bottom right, where toasts go, it sat over them for seconds).
        question = app.screen
        await until(pilot, lambda: list(question.query(Toast)), what="the sign-in's toast on the question")
        await pilot.pause()
        dialog = question.query_one("ConfirmModal > Vertical").content_region
        assert "Signed in" in str(question.query_one(Toast).render())
        for toast in question.query(Toast):
            assert not toast.region.overlaps(dialog), (toast.region, dialog)
        beneath = app.screen_stack[-2]  # its own copy of the toast: not drawn under the question (it showed clipped)
        await until(
            pilot,
            lambda: (toasts := list(beneath.query(Toast))) and not any(t.region.area for t in toasts),
            what="the toast beneath, there but not drawn",
        )
        await pilot.press("n")
        await until(pilot, lambda: getattr(app.store.value("kube_files"), "context", "") == "declined")
        # Account: how to use the file instead (the guide's manual path)
        await until(pilot, lambda: "not in config: export KUBECONFIG=↑" in screen_text(app))
        # the history's kubectl lines then name the file: kubectl --context halcyon alone finds no such context
        from ncui.history import kubectl_command

        assert app.history is not None
        noted = app.history.note("kubectl", kubectl_command("halcyon", "get", "pods"), "a read", True)
        line = noted.command if noted is not None else ""
        assert line == f"KUBECONFIG={app.store.value('kube_files').file} kubectl --context halcyon get pods"
        # and so do the commands a question shows: the apply question's way to stop it works as typed
        await to_apply_question(pilot, app, sim)
        said = screen_text(app)
        stop = f"KUBECONFIG={app.store.value('kube_files').file} kubectl --context halcyon delete job nanogpt"
        assert f"Stop it later with: {stop}" in said, said
        await pilot.press("n")
    assert (tmp_path / ".kube" / "halcyon.yaml").is_file() and not (tmp_path / ".kube" / "config").exists()
    assert home.answer(sim.api_url, "halcyon") is False


async def test_recipe_and_cluster_from_the_hand_off_or_which_exist(sim):
    app = _app(sim, handoff=Handoff(cluster="halcyon", recipe="inkling-serve"))  # Marshall's Serve card's words
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.query("#recipes") and app.query_one("#recipes").selected == "inkling")
        await until(pilot, lambda: "named by the hand-off" in screen_text(app))
        assert app.store.meta["cluster"].name == "halcyon" and app.current_view().id == "recipes"
        assert "Serve Inkling" in screen_text(app)
    app = _app(sim, handoff=Handoff(cluster="nope", recipe="llama"))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "No recipe named llama" in _said(app), what="the unknown recipe said")
        said = _said(app)
        assert "No cluster named nope in Halcyon Lab. Its clusters: halcyon (kubernetes)." in said
        assert "nanogpt (Train nanoGPT)" in said and "inkling (Serve Inkling)" in said
        assert "slurm-nanogpt" not in said  # only what this organization's clusters run
        assert app.store.meta["cluster"].name == "halcyon" and app.current_view().id == "account"


def test_cli_hand_off_arguments(monkeypatch):
    from ncui import cli

    seen = {}
    monkeypatch.setattr(cli, "run_app", lambda args: seen.setdefault("h", cli._handoff(args)) and 0)
    assert cli.main(["--recipe", "train", "--cluster", "halcyon"]) == 0
    assert seen["h"] == Handoff("halcyon", "train")
    r = subprocess.run([sys.executable, "-m", "ncui.cli", "--recipe", ""], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "is not a name" in r.stderr and "Traceback" not in r.stderr


async def test_inside_a_marshall_workspace_no_token_is_asked_for(sim, tmp_path, monkeypatch):
    # A token file exists, but inside a workspace the daemon holds the credential: the file is never read.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("NC_TOKEN", raising=False)
    f = tmp_path / ".config" / "nationalcompute" / "token"
    f.parent.mkdir(parents=True)
    f.write_text("file-token")
    monkeypatch.setenv("MARSHALL_WORKSPACE", "1")
    assert load_token().token is None and load_token().origin == "workspace"
    assert load_token({"NC_TOKEN": "daemon", "MARSHALL_WORKSPACE": "1"}).token.get_secret_value() == "daemon"
    r = subprocess.run([sys.executable, "-m", "ncui.cli"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "the daemon holds the credential" in r.stderr
    assert "save it" not in r.stderr.lower() and "nationalcompute/token" not in r.stderr
    text = first_run_message(str(f), workspace=True)
    assert "never asks for or mints a token" in text and "Save it" not in text
    app = _app(sim)  # the daemon's credential: Account says where it is
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami"))
        await until(pilot, lambda: WORKSPACE_NOTE in screen_text(app))


async def test_the_demo_approves_its_sign_in_in_the_box_and_nothing_else_does(sim):
    # Outside the demo: no a (it would approve nothing, and says nothing of it).
    app = _app(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the sign-in")
        assert "Press a" not in screen_text(app)
        await pilot.press("a")
        await pilot.pause()
        with sim.world.lock:
            assert not any(dc.approved for dc in sim.app.state.kube.auth.codes.values())
        assert isinstance(app.screen, SignInModal)
    # The demo: the modal says this is the human's browser step and a does it in the box.
    app = NCApp(Backend(demo=DemoOptions("k8s-market", 0.0, 7)), mode="demo")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"), timeout=30)
        demo_home = app.backend.kube_home.folder
        assert not str(demo_home).startswith(str(Path.home()))  # the box's cluster never goes into ~/.kube
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the sign-in")
        text = screen_text(app)
        assert "Only you can do this step" in text and "Press a to approve it in the box" in text
        await pilot.press("a")
        await until(pilot, lambda: app.store.value("kube_signin") == "signed in", timeout=30, what="signed in")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), timeout=30, what="the context question")
        assert str(Path.home()) not in screen_text(app)
        await pilot.press("n")
        assert (demo_home / "halcyon.yaml").is_file()
    assert not demo_home.exists()  # gone with the box
