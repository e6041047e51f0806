"""The Slurm path as a flow (the guide's "Slurm cluster" section): the sign-in, the first job, its jobs. No Textual.

``SlurmFlow`` (``self.slurm`` on the App) runs while the active cluster is a Slurm cluster:
- the sign-in: ``check_certificate`` at once and every minute while it is not valid (again when a valid one
  ends), into the ``slurm_signin`` slice (a ``CertCheck``); on the login node itself nothing to sign in to;
- the jobs: ``squeue --me`` every few seconds while Workloads shows them (slower otherwise) into ``slurm_jobs``
  (a tuple of ``SlurmJob``; a failed read keeps the last list, said stale by ``Slice.staleness``);
- the first job (``n``, asked first, with what is and is not known about its cost): ``prepare.sh`` when
  ``~/first-job`` lacks the starter, then ``sbatch --nodes=1 ~/first-job/nanogpt.sbatch``;
- a cancel (``x``, asked first): ``scancel``;
- in the demo, the box playing the human's ``slurm-login``.
The runner comes from ``remote/login.slurm_runner`` (this machine on the login node, else ``ssh <cluster>``
through the human's ssh config: the box's NC_SSH_CONFIG in the demo); tests set ``runner_factory``.
The panel that shows it all is ``screens/slurm.py``.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..textsafe import clean
from .base import Context, Flow
from .ui import Confirm

if TYPE_CHECKING:
    from ..api import models as m
    from ..remote.runner import Runner
    from ..remote.slurm import CertCheck, SlurmJob
    from ..store import Store

SIGNIN_RECHECK = 60.0  # seconds between sign-in checks while not signed in
JOBS_INTERVAL = 3.0  # squeue --me while Workloads shows the jobs
JOBS_IDLE = 30.0  # … while nobody looks
SLURM_SLICES = ("slurm_signin", "slurm_jobs")
SSH_CONFIG_ENV = "NC_SSH_CONFIG"  # an ssh_config to read the cluster's name from (what `ncui sim` prints)


class _Cancellable(Protocol):
    def cancel(self) -> object: ...


def login_node_check() -> CertCheck:
    from ..remote.slurm import CertCheck

    return CertCheck(True, "login-node", "ncui runs on the login node itself: nothing to sign in to.")


def money_statement(store: Store, cluster: str) -> str:
    """What is and is not known about a Slurm job's cost, in the words the confirmation shows."""
    from ..formatting import fmt_rate
    from ..money import fmt_usd

    bal, summary = store.value("balance"), store.value("summary")
    balance = bal.balance_ucredits if bal is not None else summary.balance_ucredits if summary is not None else None
    lines = [
        f"Cost: ncui does not price Slurm jobs. Nothing is bid and no limit price is set for {cluster}: the job "
        "waits in the cluster's queue, and what it uses is counted by the cluster's own accounting, not by "
        "National Compute's market. ncui cannot show a price for it before it runs.",
    ]
    if balance is None:
        read = bal if bal is not None else summary
        why = (read.unknown("balance_ucredits") if read is not None else "") or (
            store.get("balance").staleness(store.now()) or "not read yet"
        )
        lines.append(f"The organization's balance: unknown ({why}).")
    else:
        said = f"The organization's balance is {fmt_usd(balance)}"
        if bal is not None and bal.burn_ucredits_hr is None:
            said += f"; its metered burn is unknown: {bal.unknown('burn_ucredits_hr')}"
        elif bal is not None:
            said += (
                f"; its metered burn is {fmt_rate(bal.burn_ucredits_hr)} (the meter's last assessment, ~10 min behind)"
            )
        lines.append(said + ". Account (1) shows it as the job runs.")
    lines.append("It holds one whole node (the starter asks for every GPU of it) until it ends or you cancel it (x).")
    return "\n".join(lines)


class SlurmState:
    """The active Slurm cluster's loops and runner."""

    def __init__(self, ref: m.ClusterRef) -> None:
        self.ref = ref
        self.runner: Runner | None = None
        self.lock = asyncio.Lock()
        self.wake = asyncio.Event()  # the jobs: read now
        self.recheck = asyncio.Event()  # the sign-in: check now
        self.signed_in = asyncio.Event()
        self.stopped = False
        self.loops: list[object] = []  # the sign-in and jobs loops (UI.start's), cancelled when it stops


class SlurmFlow(Flow):
    """The active Slurm cluster's sign-in and jobs loops, the first job, a cancel. ``remember_job(fields, new=)``:
    what ncui submitted, for the report and the next session (RecallFlow's)."""

    def __init__(self, ctx: Context, *, remember_job: Callable[..., None]) -> None:
        super().__init__(ctx)
        self.remember_job = remember_job
        self.state: SlurmState | None = None
        # Tests: the runner for a cluster (default: remote/login.slurm_runner) and the sign-in check.
        self.runner_factory: Callable[[m.ClusterRef], Awaitable[Runner]] | None = None
        self.signin_check: Callable[[m.ClusterRef], Awaitable[CertCheck]] | None = None
        self.login_node: bool | None = None  # the command line's say (None: NCUI_LOGIN_NODE, or detected)
        self.signin_interval = SIGNIN_RECHECK
        self.jobs_interval = JOBS_INTERVAL

    # ---- the active cluster -------------------------------------------------------------------------

    def cluster(self, ref: m.ClusterRef | None) -> None:
        """The active cluster changed: stop the old Slurm loops; start them for a Slurm cluster."""
        old = self.state
        if old is not None and ref is not None and old.ref.name == ref.name and not old.stopped:
            return
        self._stop()
        self.store.clear(*SLURM_SLICES)
        if ref is None or ref.kind != "slurm":
            return
        st = self.state = SlurmState(ref)
        st.loops = [
            self.ui.start(partial(self._signin_loop, st), name="slurm-signin", group="slurm"),
            self.ui.start(partial(self._jobs_loop, st), name="slurm-jobs", group="slurm"),
        ]

    def _stop(self) -> None:
        st, self.state = self.state, None
        if st is None:
            return
        st.stopped = True
        for loop in st.loops:
            cast("_Cancellable", loop).cancel()
        if st.runner is not None:
            runner = st.runner
            self.ui.start(runner.close, name="slurm-close", group="slurm-close")

    async def close(self) -> None:
        """On quit: end the loops and the connection (or the commands running here)."""
        st, self.state = self.state, None
        if st is not None:
            st.stopped = True
            if st.runner is not None:
                await st.runner.close()

    def demo_login(self) -> None:
        """L on Account, in the demo: the box plays ``slurm-login`` (``demo_login_flow``)."""
        self.ui.start(self.demo_login_flow, name="slurm-demo-login", group="slurm-login")

    async def demo_login_flow(self) -> None:
        """In the demo only: the box plays the human's ``slurm-login`` (signs the box's stand-in key into a
        24-hour certificate where the box's ssh_config points), then the sign-in is checked again at once.
        Against a real cluster this is the human's own step, and ncui never does it."""
        sim = self.backend.sim if self.backend is not None else None
        st = self.state
        if sim is None or st is None:
            self.notify("slurm-login is your step: run it in a shell on this machine.", timeout=8)
            return
        try:
            await asyncio.to_thread(sim.ssh.sign, st.ref.name)
        except Exception as e:  # noqa: BLE001 - the box's own error, said in a sentence
            self.notify(f"The box could not sign you in: {e}", severity="error", timeout=10)
            return
        self.notify(f"The box signed you in to {st.ref.name} as slurm-login would (24 hours).", timeout=8)
        st.recheck.set()

    def wake(self) -> None:
        """Read the jobs now (a screen that shows them appeared, an action changed them)."""
        if self.state is not None:
            self.state.wake.set()

    def _ssh_config(self) -> Path | None:
        """The box's NC_SSH_CONFIG in the demo, else NC_SSH_CONFIG when set, else the human's own."""
        sim = self.backend.sim if self.backend is not None else None
        if sim is not None:
            return Path(sim.ssh.config_path)
        env = os.environ.get(SSH_CONFIG_ENV, "")
        return Path(env) if env else None

    async def runner_for(self, name: str) -> Runner | None:
        """The login node's runner when ``name`` is the active Slurm cluster (the report reads its queue)."""
        st = self.state
        return await self.runner(st) if st is not None and st.ref.name == name else None

    async def runner(self, st: SlurmState) -> Runner:
        """``st``'s runner on the login node, made once (ssh, or the commands run here on the login node)."""
        async with st.lock:
            if st.runner is None:
                if self.runner_factory is not None:
                    st.runner = await self.runner_factory(st.ref)
                else:
                    from ..config import known_hosts_path
                    from ..remote.login import slurm_runner

                    st.runner = await slurm_runner(
                        st.ref.name,
                        ssh_config=self._ssh_config(),
                        known_hosts=self.backend.known_hosts_file() if self.backend is not None else known_hosts_path(),
                        confirm_host_key=self._host_key,
                        login_node=self.login_node,
                        history=self.history,
                    )
            if st.stopped:  # the cluster changed while it was made
                await st.runner.close()
            return st.runner

    async def _ask(self, question: Confirm) -> bool:
        """Ask without a worker of its own (the host key is asked from inside the ssh connect)."""
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def done(yes: bool | None) -> None:
            if not answer.done():
                answer.set_result(bool(yes))

        self.ui.ask_then(question, done)
        return await answer

    async def _host_key(self, host: str, port: int, fingerprint: str) -> bool:
        st = self.state
        name = st.ref.name if st is not None else host
        where = host if port == 22 else f"{host} port {port}"
        return await self._ask(
            Confirm(
                f"First connection to {clean(name)}'s login node",
                f"ncui has not connected to {clean(where)} before. It presents the host key\n\n  {fingerprint}\n\n"
                "Trust it only if it is the login node's (your cluster's documentation or administrators publish "
                "its fingerprint). A yes remembers it in ncui's known_hosts; a changed key is refused later.",
                yes="Trust and connect",
                no="Do not connect",
            )
        )

    # ---- the sign-in ---------------------------------------------------------------------------------

    async def _check(self, ref: m.ClusterRef) -> CertCheck:
        if self.signin_check is not None:
            return await self.signin_check(ref)
        from ..remote.local import on_login_node
        from ..remote.slurm import check_certificate

        if self.runner_factory is None and on_login_node(self.login_node):
            return login_node_check()
        access = self.backend.endpoints.access if self.backend is not None and self.backend.endpoints else None
        kw: dict[str, Any] = {"access_url": access} if access else {}
        # The box signs certificates for 24 hours of its clock (which may run 60x): judged by that clock there.
        judged = self.login_now() or datetime.now(timezone.utc)
        check = await check_certificate(ref.name, ssh_config=self._ssh_config(), now=judged, **kw)
        return check.on_clock(judged, self.cert_now())  # its end on the service's clock: "… left" ticks by it

    def cert_now(self) -> datetime:
        """The clock a certificate's "… left" is counted down by, ticking: the service's (the box's, virtual,
        which may run 60x; the real service's is ours)."""
        return self.backend.now() if self.backend is not None else datetime.now(timezone.utc)

    def login_now(self) -> datetime | None:
        """The login node's clock: the box's (virtual, it may run 60x) when the demo's box is the login node; else
        None, this machine's (a real cluster's clock and ours agree)."""
        sim = self.backend.sim if self.backend is not None else None
        return sim.world.now() if sim is not None else None

    async def _signin_loop(self, st: SlurmState) -> None:
        from ..backoff import wait_event

        was_ok: bool | None = None
        while not st.stopped:
            st.recheck.clear()
            check = await self._check(st.ref)
            if st.stopped:
                return
            self.store.set("slurm_signin", check)
            delay: float | None = self.signin_interval
            if check.ok:
                st.signed_in.set()
                if was_ok is False:
                    self.notify(check.message, timeout=8)  # (it says "Signed in to …" itself)
                    self._signed_in_noted(st.ref.name, check)
                if check.valid_before is None:
                    delay = None if check.state == "login-node" else 600.0
                else:  # again when it ends by the service's clock (the box's may run 60x: at least each minute)
                    left = ((check.ends or check.valid_before) - self.cert_now()).total_seconds()
                    delay = min(60.0, max(5.0, left + 1))
            else:
                st.signed_in.clear()
            was_ok = check.ok
            await wait_event(st.recheck, delay)

    def _signed_in_noted(self, cluster: str, check: CertCheck) -> None:
        """The human's sign-in (the setup script, then slurm-login; in the demo L), seen while ncui runs: in the
        history as the guide's line, as kubectl's approval is (a certificate found at start is not a change)."""
        from ..remote.slurm import signin_command

        access = self.backend.endpoints.access if self.backend is not None and self.backend.endpoints else None
        line = signin_command(cluster, access) if access else signin_command(cluster)
        end = check.valid_before
        until = f" (an ssh certificate valid until {end:%Y-%m-%d %H:%M} UTC)" if end else ""
        if self.history is not None:
            self.history.note("shell", line, f"sign in to {cluster}: the setup script, then slurm-login{until}", True)

    # ---- the jobs ------------------------------------------------------------------------------------

    async def _jobs_loop(self, st: SlurmState) -> None:
        from ..backoff import backoff_delay, wait_event
        from ..remote import slurm
        from ..remote.runner import AuthFailed, HostKeyChanged, HostKeyUnknown, RemoteError

        rng, failures = random.Random(), 0
        while not st.stopped:
            await st.signed_in.wait()
            st.wake.clear()
            delay: float | None
            try:
                runner = await self.runner(st)
                now = self.login_now()  # a running job's elapsed time is counted to the login node's now
                found = await slurm.jobs(runner, now=now.timestamp() if now is not None else None)
            except RemoteError as e:
                if st.stopped:
                    return
                failures += 1
                self.store.fail("slurm_jobs", str(e))
                # A refused host key or key: asked again only on demand (n, x, showing Workloads), not every 3 s.
                refused = isinstance(e, (HostKeyUnknown, HostKeyChanged, AuthFailed))
                delay = None if refused else backoff_delay(failures, 1.0, 60.0, rng)
                if isinstance(e, AuthFailed):
                    st.recheck.set()  # the certificate may have just expired
            else:
                if st.stopped:
                    return
                failures = 0
                self.store.set("slurm_jobs", tuple(found))
                delay = self.jobs_interval if self.store.interest("slurm_jobs") else JOBS_IDLE
            await wait_event(st.wake, delay)

    # ---- the first job -------------------------------------------------------------------------------

    def first_job(self) -> None:
        """n on Workloads (and Recipes): the first job, asked first."""
        self.ui.start(self.first_job_flow, name="slurm-first-job", group="slurm-flow", exclusive=True)

    async def first_job_flow(self) -> str | None:
        """Ask (with the cost statement), prepare when needed, submit; the job id (None: nothing submitted)."""
        from ..remote import slurm
        from ..remote.node import BadInput
        from ..remote.runner import RemoteError

        st = self.state
        if st is None:
            self.notify("The first Slurm job is for a Slurm cluster; the active cluster is not one.", timeout=5)
            return None
        check: CertCheck | None = self.store.value("slurm_signin")
        if check is None or not check.ok:
            self.notify(check.message if check else "Checking the sign-in first…", severity="warning", timeout=15)
            st.recheck.set()
            return None
        name = st.ref.name
        try:
            runner = await self.runner(st)
            ready = await slurm.prepared(runner)
        except RemoteError as e:
            self.notify(f"Cannot reach {name}'s login node: {e}", severity="error", timeout=12)
            return None
        steps = "" if ready else f"  {slurm.prepare_command(self._access())}   (~/first-job is not there yet)\n"
        body = (
            f"On {name}'s login node ({clean(runner.where)}), ncui runs:\n\n{steps}"
            f"  {slurm.submit_command()}\n\n"
            "The starter trains a small GPT on one node and writes nanogpt-<id>.out, which Workloads follows.\n\n"
            + money_statement(self.store, name)
        )
        if not await self._ask(Confirm(f"Run the first job on {name}?", body, yes="Submit", no="Cancel")):
            self.notify("Nothing was submitted.", timeout=4)
            return None
        try:
            if not ready:
                self.notify("Preparing ~/first-job (prepare.sh)…", timeout=4)
                await slurm.prepare(runner, self._access())
            jid = await slurm.submit(runner)
        except (RemoteError, BadInput) as e:
            self.notify(f"The job was not submitted: {e}", severity="error", timeout=15)
            return None
        self.store.meta["slurm_job"] = jid  # Workloads selects it
        self.remember_job({"slurm_job": jid, "recipe": "slurm-nanogpt"}, new=True)  # the report and the next session
        self.notify(f"Submitted batch job {jid} on {name}: Workloads (4) follows nanogpt-{jid}.out.", timeout=8)
        self.wake()
        return jid

    def _access(self) -> str:
        e = self.backend.endpoints if self.backend is not None else None
        return e.access if e is not None else "https://access.nationalcompute.com"

    # ---- cancel ----------------------------------------------------------------------------------------

    def cancel(self, job: SlurmJob) -> None:
        """x on Workloads: cancel ``job``, asked first."""
        self.ui.start(partial(self.cancel_flow, job), name="slurm-cancel", group="slurm-flow", exclusive=True)

    async def cancel_flow(self, job: SlurmJob) -> bool:
        """Ask, then ``scancel``; True when Slurm took it."""
        from ..remote import slurm
        from ..remote.runner import RemoteError

        st = self.state
        if st is None:
            return False
        what = f"job {clean(job.id)} ({clean(job.name)}, {clean(job.state.lower())})"
        if not await self._ask(
            Confirm(
                f"Cancel {what}?",
                f"scancel {clean(job.id)} on {st.ref.name}: a running job is stopped (its log so far stays in "
                f"nanogpt-{clean(job.id)}.out), a waiting one leaves the queue. This cannot be undone; "
                "n submits a new one.",
                yes="Cancel the job",
                no="Keep it",
            )
        ):
            return False
        try:
            await slurm.cancel(await self.runner(st), job.id)
        except RemoteError as e:
            self.notify(f"Job {clean(job.id)} was not cancelled: {e}", severity="error", timeout=12)
            return False
        self.notify(f"Cancelled job {clean(job.id)} (scancel).", timeout=6)
        self.wake()
        return True
