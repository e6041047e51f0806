"""Helpers for the kube-client tests: a signed-in KubeClient on the simulator, async waits with deadlines."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest
import yaml

from ncui.kube.client import KubeClient

from .waits import until  # the one async wait with a deadline (the kube tests import it here)


async def advance_until(
    k,
    predicate: Callable[[], object],
    step: float = 60,
    max_steps: int = 200,
    what: str = "",
    caught_up: Callable[[], object] | None = None,
):
    """Move the frozen clock ``step`` virtual seconds at a time; after each step, when given, wait until
    ``caught_up()`` (a reader has seen what that step made), so every intermediate state is observed. A
    predicate read through a watch may trail the box on a loaded machine: after the last step it still gets
    a wall-clock deadline to see what the box already did."""
    for _ in range(max_steps):
        v = predicate()
        if v:
            return v
        await asyncio.to_thread(k.world.advance, step)
        await asyncio.to_thread(k.sim.app.state.kube.tick)
        if caught_up is not None:
            await until(caught_up, what="the reader catching up with the step")
    return await until(predicate, timeout=20, what=f"{what or predicate} (never happened)")


def busybox_job(name: str, command: str, env: dict | None = None) -> dict:
    """A Job of one busybox container (no GPU: it runs on the CPU worker at once); ``env`` as name → value."""
    ctr: dict = {"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", command]}
    if env:
        ctr["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [ctr]}}},
    }


def recipe(k, name: str) -> list[dict]:
    r = httpx.get(k.file(name))
    r.raise_for_status()
    return [d for d in yaml.safe_load_all(r.text) if d]


@pytest.fixture
async def kc_factory(kube_factory, monkeypatch):  # noqa: F811
    clients: list[KubeClient] = []

    def make(scenario: str = "k8s-market", signed_in: bool = True, **kw):
        k = kube_factory(scenario, signed_in=signed_in, **kw)
        monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
        kc = KubeClient.from_kubeconfig(k.kubeconfig.read_text())
        clients.append(kc)
        return k, kc

    yield make
    for c in clients:
        await c.aclose()
