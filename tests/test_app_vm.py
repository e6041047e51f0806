"""The VM path in the app against the box: register a key, declare capacity (whole nodes, the ceiling, the
version echoed), lose a version race to a second writer and succeed after reading again, release."""

from __future__ import annotations

import subprocess

import httpx
import pytest

from ncui.screens.exitguard import ExitGuardModal
from ncui.screens.modals import CeilingModal, ConfirmModal, ResultsModal
from ncui.screens.vmflows import GpusModal, KeyPickModal

from .apphelp import app_for, loaded, screen_text, type_text, until


def _vm(sim):
    return sim.world.main_org.vm["tern-vm"]


async def _open(pilot, app) -> None:
    await until(pilot, lambda: loaded(app, "whoami", "vm_capacity", "balance", "summary"), what="the VM cluster read")


@pytest.mark.peers("ssh-keygen")
async def test_a_key_is_registered_and_then_shown_registered(sim_factory, tmp_path, monkeypatch):
    sim = sim_factory("vm")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    (tmp_path / ".ssh").mkdir()
    subprocess.run(
        [
            "ssh-keygen",
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "ada@laptop",
            "-f",
            str(tmp_path / ".ssh" / "id_ed25519"),
        ],
        check=True,
    )
    line = (tmp_path / ".ssh" / "id_ed25519.pub").read_text().strip()
    (tmp_path / ".ssh" / "junk.pub").write_text("not a key\n")  # skipped, not shown
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, app)
        app.flows.vm.start("keys")
        await until(pilot, lambda: isinstance(app.screen, KeyPickModal), what="the keys")
        assert len(app.screen.keys) == 1 and "ada@laptop" in app.screen.keys[0].label()
        assert app.screen.keys[0].fingerprint not in app.screen.registered
        await pilot.press("enter")
        await until(pilot, lambda: any(k.public_key == line for k in sim.world.main_org.ssh_keys), what="registered")
        await until(
            pilot,
            lambda: any("installs on the next node granted" in n.message for n in list(app._notifications)),
            what="the note on future grants",
        )
        app.flows.vm.start("keys")
        await until(pilot, lambda: isinstance(app.screen, KeyPickModal), what="the keys again")
        assert app.screen.keys[0].fingerprint in app.screen.registered
        await pilot.press("escape")


async def _declare_until_confirm(pilot, app, gpus: str, price: str) -> None:
    await pilot.press("5", "d")  # Lease: d declares
    await until(pilot, lambda: isinstance(app.screen, GpusModal), what="the GPUs question")
    await type_text(pilot, "4")
    await until(pilot, lambda: "is not whole nodes: a node has 8" in screen_text(app))
    await pilot.press("enter")
    assert isinstance(app.screen, GpusModal)  # refused: it stays
    await pilot.press("backspace")
    await type_text(pilot, gpus)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, CeilingModal), what="the ceiling")
    await type_text(pilot, price)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the declaration's question")


async def test_declare_states_what_is_sent_and_release_keeps_the_price(sim_factory):
    sim = sim_factory("vm")
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, app)
        await until(pilot, lambda: loaded(app, "ssh_keys"), what="the organization's keys (none)")
        version = _vm(sim).version
        await _declare_until_confirm(pilot, app, "8", "4.20")
        text = screen_text(app)
        assert f"Sent: max_gpus 8, max_price_per_gpu_hour $4.20/GPU-h, expected_version {version}." in text
        assert "No ssh key is registered: a node granted now lets nobody in" in text
        assert "at most $33.60 per node-hour at your limit" in text
        await pilot.press("y")
        await until(pilot, lambda: _vm(sim).max_gpus == 8, what="declared")
        assert _vm(sim).price == 4_200_000
        await until(pilot, lambda: app.store.value("vm_capacity").max_gpus == 8)
        await until(pilot, lambda: "Declared 8 GPUs at up to $4.20/GPU-h" in screen_text(app), what="Lease says so")
        sim.world.advance(120)  # an allocation: quitting asks, and says what a release there destroys
        app.pollers.refresh("vm_capacity")
        await until(pilot, lambda: app.store.value("vm_capacity").allocations, what="the allocation")
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, ExitGuardModal), what="the quit question")
        assert "Released, its node is destroyed with its local disk" in screen_text(app)
        await pilot.press("escape")  # stay
        await until(pilot, lambda: not isinstance(app.screen, ExitGuardModal))
        await pilot.press("R")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the release question")
        text = screen_text(app)
        assert "max_gpus 0 with the same price, $4.20/GPU-h" in text and "destroyed with its local disk" in text
        await pilot.press("y")
        await until(pilot, lambda: _vm(sim).max_gpus == 0, what="released")
        assert _vm(sim).price == 4_200_000  # the same price, as the PUT needs both fields


async def test_a_version_race_is_shown_and_asked_again_never_overwritten(sim_factory):
    sim = sim_factory("vm")
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open(pilot, app)
        await _declare_until_confirm(pilot, app, "8", "4.20")
        v = _vm(sim).version
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {sim.token}"}) as h:  # a second writer
            r = await h.put(
                sim.api_url + "/api/vm/capacity",
                json={"max_gpus": 16, "max_price_per_gpu_hour": 5.0, "expected_version": v},
            )
            assert r.status_code == 200
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, ResultsModal), what="the race said")
        text = screen_text(app)
        assert f"version {v} → {v + 1}" in text and "GPUs 0 → 16" in text and "price $0.00/GPU-h → $5.00/GPU-h" in text
        assert _vm(sim).max_gpus == 16  # theirs stands: nothing of ours was sent over it
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="asked again")
        assert f"expected_version {v + 1}." in screen_text(app)
        await pilot.press("y")
        await until(pilot, lambda: _vm(sim).max_gpus == 8 and _vm(sim).price == 4_200_000, what="ours, after a yes")
