"""The App's flows, wired: each built at its first use, given what it calls (no Textual here).

``NCApp`` holds one ``Flows`` (``app.flows``); views call ``app.flows.apply.start(...)`` and the like. None is
built before the first frame (their modules, ~30 ms, with them). Some call each other both ways (apply and
lifecycle; connect, recall and slurm): the later one is reached through a lambda, bound when called. What a flow
needs of the App is the small ``Host`` below.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .apply import ApplyFlow
    from .base import Context
    from .connect import ConnectFlow, Handoff
    from .lease import LeaseFlow
    from .lifecycle import LifecycleFlow
    from .limit import SpendingLimitFlow
    from .node import NodeFlow
    from .recall import RecallFlow
    from .slurm import SlurmFlow
    from .vm import VmFlow

NAMES = ("connect", "recall", "lease", "limit", "apply", "lifecycle", "vm", "slurm", "nodes")


class Host(Protocol):
    """What the flows are given of the App (ncui/app.py)."""

    def choose_recipe(self, name: str) -> None: ...  # the hand-off's recipe: Recipes shown, with it chosen

    def kube_moved(self) -> None: ...  # the cluster's client was made anew: Workloads follows its log through it

    def box_ssh_config(self) -> Path | None: ...  # the box's ssh config (the demo), for the human's own ssh

    def quit(self, *, end_session: bool) -> None: ...  # the end of the app, once the quit was decided


class Flows:
    def __init__(self, ctx: Context, app: Host, *, handoff: Handoff | None = None) -> None:
        self.ctx = ctx
        self._app = app
        self._handoff = handoff  # --cluster / --recipe

    def built(self, name: str) -> bool:
        return name in self.__dict__  # (a cached_property's value, once built)

    @cached_property
    def connect(self) -> ConnectFlow:  # sign-in, the kube client and its watches, the hand-off, the active cluster
        from .connect import ConnectFlow

        return ConnectFlow(
            self.ctx,
            handoff=self._handoff,  # --cluster / --recipe
            nc=lambda: self.lease.client(),
            remembered=lambda: self.recall.remembered(),
            remember=lambda **fields: self.recall.remember(**fields),
            slurm_cluster=lambda ref: self.slurm.cluster(ref),
            choose_recipe=self._app.choose_recipe,
            kube_moved=self._app.kube_moved,
        )

    @cached_property
    def recall(self) -> RecallFlow:
        from .recall import RecallFlow

        return RecallFlow(
            self.ctx,
            kube_signed_in=self.connect.kube_signed_in,
            slurm_runner=lambda name: self.slurm.runner_for(name),
            node_sessions=lambda: self.nodes.sessions,
            box_ssh_config=self._app.box_ssh_config,
        )

    @cached_property
    def lease(self) -> LeaseFlow:
        from .lease import LeaseFlow

        return LeaseFlow(self.ctx, remember=self.recall.remember, exit=self._app.quit)

    @cached_property
    def limit(self) -> SpendingLimitFlow:
        from .limit import SpendingLimitFlow

        return SpendingLimitFlow(
            self.ctx,
            kube_signed_in=self.connect.kube_signed_in,
            stop_plan=lambda kube, recipe: self.lifecycle.stop_plan(kube, recipe),
            stop_objects=lambda *a: self.lifecycle.stop_objects(*a),
            recipe=lambda name: self.lifecycle.recipe(name),
            state_notices=self.recall.state_notices,
        )

    @cached_property
    def apply(self) -> ApplyFlow:
        from .apply import ApplyFlow

        return ApplyFlow(
            self.ctx,
            lease=self.lease,
            kube_client=self.connect.kube_client,
            before_apply=lambda plan: self.lifecycle.before_apply(plan),
            remember_job=self.recall.remember_job,
            durations=lambda recipe: self.recall.durations(recipe),
        )

    @cached_property
    def lifecycle(self) -> LifecycleFlow:
        from .apply import market_price
        from .lifecycle import LifecycleFlow

        return LifecycleFlow(
            self.ctx,
            kube_client=self.connect.kube_client,
            kube_in_use=lambda: (self.connect.kube, self.connect.kube_for),
            start_apply=self.apply.start,
            applied_select=self.apply.applied_select,
            cover=self.apply.cover,
            market_price=market_price,
        )

    @cached_property
    def vm(self) -> VmFlow:
        from .vm import VmFlow

        return VmFlow(
            self.ctx, copy_off=lambda cap: self.nodes.vm_copy_off(cap), node_sessions=lambda: self.nodes.sessions
        )

    @cached_property
    def slurm(self) -> SlurmFlow:
        from .slurm import SlurmFlow

        return SlurmFlow(self.ctx, remember_job=self.recall.remember_job)

    @cached_property
    def nodes(self) -> NodeFlow:  # over ssh
        from .node import NodeFlow

        return NodeFlow(self.ctx, nc=self.lease.client, remember_job=self.recall.remember_job)
