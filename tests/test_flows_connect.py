"""ConnectFlow driven with no terminal (a scripted UI, the real box over loopback HTTP): the sign-in command a
kubeconfig names is asked about before it runs; a no runs nothing, keeps nothing of the kubeconfig and is
remembered (the next connect refuses without a question); a yes runs it."""

from __future__ import annotations

from pydantic import SecretStr

from ncui.backend import Backend
from ncui.flows.base import Context
from ncui.flows.connect import ConnectFlow
from ncui.flows.ui import Confirm
from ncui.kube.kubeconfig import KubeHome
from ncui.store import Store

from .conftest import endpoints_of
from .scripted_ui import ScriptedUI
from .test_app_signin_plugin import _hostile


async def _flow(sim, home: KubeHome, ui: ScriptedUI) -> tuple[ConnectFlow, Backend]:
    backend = Backend(endpoints_of(sim), SecretStr(sim.token), timeout=5, clock=sim.world.now, kube_home=home)
    await backend.connect()
    store = Store()
    flow = ConnectFlow(
        Context(backend, store, ui),
        nc=lambda: backend.nc,
        remembered=dict,
        remember=lambda **_: None,
        slurm_cluster=lambda _ref: None,
        choose_recipe=lambda _name: None,
        kube_moved=lambda: None,
    )
    assert backend.nc is not None
    who = await backend.nc.whoami()
    flow.select_cluster(next(c for c in who.clusters if c.name == "halcyon"))
    return flow, backend


async def test_a_sign_in_command_refused_runs_nothing_keeps_nothing_and_is_not_asked_again(sim, tmp_path):
    marker = tmp_path / "MARKER"
    _hostile(sim, "-c", f"touch {marker}")
    home = KubeHome(tmp_path / ".kube", tmp_path / "answers.json")
    ui = ScriptedUI(False)  # the human says no
    flow, backend = await _flow(sim, home, ui)
    try:
        assert await flow.kube_client() is None
        (q,) = ui.asked
        assert isinstance(q, Confirm) and q.title == "Run halcyon's sign-in command?"
        assert f"/bin/sh -c 'touch {marker}'" in str(q.body) and q.yes == "Run it"
        assert not marker.exists() and not (tmp_path / ".kube" / "halcyon.yaml").exists()
        assert flow.store.get("kube_signin").error == "you said no to its sign-in command (s asks again)"
        assert "kubeconfig not saved" in flow.store.value("kube_files").error
        assert any("You said no" in said for _, said in ui.told)
        # the next connect: the remembered no, without a question (the script is empty: a question would fail)
        assert await flow.kube_client() is None
        assert len(ui.asked) == 1 and not marker.exists() and flow.kube is None
    finally:
        await flow.close()
        await backend.close()


async def test_a_yes_runs_the_sign_in_command_and_the_answer_is_remembered(sim, tmp_path):
    marker = tmp_path / "MARKER"
    _hostile(sim, "-c", f"touch {marker}")
    home = KubeHome(tmp_path / ".kube", tmp_path / "answers.json")
    ui = ScriptedUI(True)
    flow, backend = await _flow(sim, home, ui)
    try:
        assert await flow.kube_client() is None  # it ran and gave no credential: no client
        assert marker.exists() and len(ui.asked) == 1
        marker.unlink()
        await flow.kube_client()  # remembered: it runs again with no question
        assert marker.exists() and len(ui.asked) == 1
    finally:
        await flow.close()
        await backend.close()
