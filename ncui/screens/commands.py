"""The command palette's commands (Ctrl-P): the views, refresh, history, sign-in, help, and the VM flows."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

from textual.app import SystemCommand

if TYPE_CHECKING:
    from ..app import NCApp


def commands(app: NCApp, views: tuple[tuple[str, str, str, str], ...]) -> Iterator[SystemCommand]:
    for i, (name, title, _, _) in enumerate(views, 1):
        yield SystemCommand(
            f"Go to {title}",
            f"Show the {title} screen (key {i})",
            lambda name=name: app.run_action(f"show('{name}')"),
        )
    yield SystemCommand("Refresh", "Fetch everything now (key r)", app.action_refresh)
    yield SystemCommand(
        "History: the commands", "What ncui changed, as the commands you would type (key h)", app.action_history
    )
    yield SystemCommand(
        "Sign in to the cluster (kubectl)", "Run the kubeconfig's sign-in (key s)", app.action_kube_signin
    )
    for title, help_text, run in app.flows.connect.commands():
        yield SystemCommand(title, help_text, run)
    yield SystemCommand(
        "Notifications",
        "Which moments reach your desktop while the terminal is not focused",
        app.action_notify_settings,
    )
    yield SystemCommand("Help for this screen", "What this screen shows and its keys (key ?)", app.action_help)
    yield SystemCommand("Last error", "The full text of the last failure said on screen", app.action_last_error)
    if app.backend is not None and app.mode != "demo":  # (the demo's box has no token for doctor to check)
        yield SystemCommand(
            "Doctor: the service's contract and this machine",
            "What ncui doctor checks (the contract, the token, kubectl, ssh, the clock, the terminal)",
            app.action_doctor,
        )
    ref = app.store.meta.get("cluster")
    if ref is not None and ref.kind == "vm":
        yield SystemCommand(
            "VM: register an ssh key",
            "One of your public keys, for nodes granted later",
            partial(app.flows.vm.start, "keys"),
        )
        yield SystemCommand(
            "VM: declare capacity", "GPUs and your ceiling, asked first", partial(app.flows.vm.start, "declare")
        )
        yield SystemCommand(
            "VM: release capacity",
            "max_gpus 0 with the same price, asked first",
            partial(app.flows.vm.start, "release"),
        )
