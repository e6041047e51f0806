"""Shared fixtures: a seeded simulator on real loopback HTTP, with a frozen virtual clock by default."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable, Iterator
from datetime import datetime, timezone

import pytest
from hypothesis import settings
from pydantic import SecretStr

from ncui.api.client import NCClient
from ncui.config import Endpoints
from ncui.sim.server import SimServer
from ncui.sim.world import World

from .peers import need_peer
from .waits import wait_until as wait_for  # noqa: F401  (the one wait with a deadline; the tests import it here)

START = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)

# Property tests keep no example database in the work tree (a test run leaves `git status` clean); the
# examples they find are printed when they fail, and `derandomize` makes every run try the same ones.
settings.register_profile("ncui", database=None, derandomize=True, deadline=None)
settings.load_profile("ncui")


def make_world(
    scenario: str = "k8s-market", *, seed: int = 7, speed: float = 0.0, start: datetime = START, **kw
) -> World:
    return World(scenario, seed=seed, speed=speed, start=start, **kw)


# The Kubernetes fixtures (kube_factory, kc_factory) for every test module, without importing them in each.
pytest_plugins = ("tests.kube_support", "tests.kc_support", "tests.tmuxterm", "tests.sshd_support", "tests.ptyterm")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.peers("ssh", "scp")``: each real peer is here, or the test skips (fails in CI) before its
    fixtures start a box or a daemon (tests/peers.py)."""
    for mark in item.iter_markers("peers"):
        for name in mark.args:
            need_peer(name)


@pytest.fixture(autouse=True)
def _kube_cache(tmp_path, monkeypatch) -> None:
    """Every test keeps kubectl sign-ins in its own temporary cache, never in the user's."""
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(tmp_path / "kube"))


@pytest.fixture(autouse=True)
def _state_home(tmp_path, monkeypatch) -> None:
    """Every test keeps ncui's state (the spending limit) in its own temporary XDG state dir, never the user's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # (the notification settings: the defaults)
    monkeypatch.setenv("KUBERC", str(tmp_path / "kuberc"))  # (the human's kuberc policy: none unless a test writes it)
    monkeypatch.delenv("MARSHALL_WORKSPACE", raising=False)  # (a test inside one would see Account say so)


@pytest.fixture(autouse=True)
def _no_socket_left_open() -> Iterator[None]:
    """A socket a test leaves open fails that test, here at its end, not a later test that happens to run when the
    garbage collector finds it (its ResourceWarning is raised inside whatever code runs then: "error:::ncui")."""
    yield
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    left = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning) and "socket" in str(w.message)]
    assert not left, f"this test left sockets open: {left}"


@pytest.fixture
def sim_factory() -> Iterator[Callable[..., SimServer]]:
    """Start simulators (stopped at the end): ``sim_factory("vm", seed=3)``."""
    servers: list[SimServer] = []

    def start(scenario: str = "k8s-market", **kw) -> SimServer:
        server = SimServer(make_world(scenario, **kw)).start()
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.stop()


@pytest.fixture
def sim(sim_factory) -> SimServer:
    return sim_factory("k8s-market")


def endpoints_of(server: SimServer) -> Endpoints:
    return Endpoints(api=server.api_url, access=server.access_url)


@pytest.fixture
async def nc(sim) -> NCClient:
    client = NCClient(endpoints_of(sim), SecretStr(sim.token), timeout=5, backoff=0.01)
    yield client
    await client.aclose()
