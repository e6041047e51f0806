"""What the app talks to: the National Compute client, the pollers that feed the store, and — in the
demo — National Compute in a box started in this process. No Textual here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

from .store import Store

if TYPE_CHECKING:  # imported when first needed: the first frame does not wait for httpx or pydantic
    from pydantic import SecretStr as PydanticSecretStr

    from .api import models as m
    from .api.client import NCClient
    from .config import Endpoints, SecretStr
    from .history import History
    from .kube.kubeconfig import KubeHome
    from .pollers import Pollers
    from .sim.server import SimServer

TICKS_KEPT = 720  # twelve hours of one-minute ticks


@dataclass
class DemoOptions:
    scenario: str = "k8s-market"
    speed: float = 60.0
    seed: int = 1


class Backend:
    """Holds the client and, in the demo, the simulator; builds the pollers for a store."""

    def __init__(
        self,
        endpoints: Endpoints | None = None,
        token: SecretStr | PydanticSecretStr | None = None,
        *,
        demo: DemoOptions | None = None,
        timeout: float = 10.0,
        clock: Callable[[], datetime] | None = None,
        kube_home: KubeHome | None = None,
    ) -> None:
        self.endpoints = endpoints
        self.token = token
        self.demo = demo
        self.sim: SimServer | None = None  # in the demo
        self.nc: NCClient | None = None
        # this service's history (what ncui changed, as commands: ncui/history.py), made once the endpoints are
        # known and handed to the clients built here; the App and its flows record into the same one
        self.history: History | None = None
        self.timeout = timeout
        self.clock = clock  # tests: the box's frozen virtual clock
        # Where the cluster's kubeconfig is written for the human's own kubectl (~/.kube; in the demo a stand-in
        # folder that goes with the box); None: nowhere (tests that do not look at it).
        self.kube_home = kube_home
        self.known_hosts: Path | None = None  # ncui's known_hosts when not config.known_hosts_path() (the demo's)
        self._demo_home: str | None = None

    def secrets(self) -> tuple[str, ...]:
        """What the log file and an error's details never show (logfile.Redact): the token, the demo box's once
        it started."""
        value = self.token.get_secret_value() if self.token is not None else ""
        return (value,) if value else ()

    def now(self) -> datetime:
        """The service's now: the box's virtual clock in the demo (it may run 60x), else the time the service's
        answers are dated (a separate box runs its own clock: ``api.client.ServiceClock``), else the wall clock."""
        from datetime import datetime, timezone

        return self.service_now() or datetime.now(timezone.utc)

    def service_now(self) -> datetime | None:
        """The service's now as ``now`` reads it, or None before the service dated an answer (``now`` would be
        the wall clock, which may be off the service's)."""
        if self.clock is not None:
            return self.clock()
        if self.sim is not None:
            return self.sim.world.now()
        if self.nc is not None:
            return self.nc.clock.now()
        return None

    def known_hosts_file(self) -> Path:
        """ncui's known_hosts: the host keys of ssh hosts the human accepted (in the demo, the box's own file)."""
        from .config import known_hosts_path

        return self.known_hosts or known_hosts_path()

    @property
    def label(self) -> str:
        if self.demo:
            return f"demo · {self.demo.scenario}"
        return self.endpoints.api if self.endpoints else ""

    async def connect(self) -> NCClient:
        """Start the box when this is the demo (off the event loop: it imports a web stack), then this service's
        ``history`` (dated on the service's clock, ``now``) and a client that records its writes into it."""
        from .api.client import NCClient
        from .config import Endpoints, SecretStr

        if self.demo and self.sim is None:
            self.sim = await asyncio.to_thread(_start_sim, self.demo)
            self.endpoints = Endpoints(api=self.sim.api_url, access=self.sim.access_url)
            self.token = SecretStr(self.sim.token)
            import tempfile

            self._demo_home = tempfile.mkdtemp(prefix="ncui-demo-home-")
            home = Path(self._demo_home)
            # The box's ssh hosts go with the box: their host keys never into ncui's known_hosts (a later box's
            # host on the same address and port has another key, and would be refused as a changed one).
            self.known_hosts = home / "known_hosts"
            if self.kube_home is None:  # the box's cluster goes with the box: never into the human's ~/.kube
                from .kube.kubeconfig import KubeHome

                self.kube_home = KubeHome(home / ".kube", home / "kube-contexts.json")
        assert self.endpoints is not None
        if self.history is None:
            from .history import History  # (at connecting, after the first frame)

            self.history = History(self.endpoints.api, clock=self.now)
        # NCClient's annotation names pydantic's SecretStr, but it only calls get_secret_value(): config's
        # SecretStr (the same face, without importing pydantic before the first frame) is as good.
        token = cast("PydanticSecretStr | None", self.token)
        self.nc = NCClient(self.endpoints, token, timeout=self.timeout, history=self.history)
        return self.nc

    async def close(self) -> None:
        if self.nc is not None:
            await self.nc.aclose()
        if self.sim is not None:
            await asyncio.to_thread(self.sim.stop)
            self.sim = None
        self.remove_demo_home()

    def remove_demo_home(self) -> None:
        """The demo's own folder (its known_hosts, its kubeconfig) goes with the box; also called by the command
        line after the app ended however it ended (a hang-up, a SIGTERM), in case ``close`` never ran."""
        if self._demo_home is not None:
            import shutil

            shutil.rmtree(self._demo_home, ignore_errors=True)
            self._demo_home = None

    async def approve_in_box(self, link: str) -> None:
        """The demo only: do the human's browser step for a kubectl sign-in link (approve it in the box, as
        its page's Approve button does). Raises NCError when the box refuses (an expired code)."""
        from urllib.parse import parse_qs, urlsplit

        if self.sim is None or self.nc is None:
            raise RuntimeError("only National Compute in a box approves a sign-in for you")
        code = (parse_qs(urlsplit(link).query).get("code") or [""])[0]
        await self.nc.approve_device_in_box(code)

    # ---- pollers --------------------------------------------------------------------------------

    def pollers(self, store: Store) -> Pollers:
        from .pollers import Pollers, PollSpec

        nc = self.nc
        assert nc is not None

        def active() -> m.ClusterRef | None:
            return store.meta.get("cluster")

        def kind() -> str:
            c = active()
            return (c.kind or "") if c else ""

        def k8s() -> bool:
            return kind() == "kubernetes"

        def market() -> bool:
            info, ref = store.value("cluster"), active()
            return k8s() and ref is not None and info is not None and info.market and info.name == ref.name

        def name() -> str | None:
            c = active()
            return c.name if c else None

        async def ticks() -> tuple[m.Tick, ...]:
            old: tuple[m.Tick, ...] = store.value("ticks") or ()
            info = store.value("cluster")
            model = info.gpu_model if (k8s() and info is not None) else None
            if old and store.meta.get("ticks_model") == model:
                new = (await nc.ticks(since=old[-1].at, gpu_model=model, limit=TICKS_KEPT)).ticks
                return (old + tuple(new))[-TICKS_KEPT:]
            store.meta["ticks_model"] = model
            return tuple((await nc.ticks(gpu_model=model, limit=TICKS_KEPT)).ticks)[-TICKS_KEPT:]

        def waiting_for_nodes() -> bool:
            bid, spend = store.value("bid"), store.value("spend")
            return bool(bid and bid.max_price_per_gpu_hour and spend is not None and spend.nodes_held == 0)

        def vm_changing() -> bool:
            cap = store.value("vm_capacity")
            return bool(cap and any(a.state in ("pending", "provisioning") for a in cap.allocations))

        async def transactions() -> tuple[m.Transaction, ...]:
            return tuple((await nc.transactions()).transactions)

        def org_id() -> str | None:
            who = store.value("whoami")
            return str(who.org_id) if who is not None else None

        async def ssh_keys() -> tuple[m.SshKey, ...]:
            oid = org_id()
            assert oid is not None  # enabled only once whoami is read
            return tuple((await nc.ssh_keys(oid)).keys)

        specs = [
            PollSpec("whoami", nc.whoami, 300, 600),
            PollSpec("summary", nc.billing_summary, 30, 120),
            PollSpec("balance", nc.balance, 10, 30),
            PollSpec("transactions", transactions, 30, 120),
            PollSpec("cluster", lambda: nc.k8s_cluster(name()), 300, 600, enabled=k8s),
            PollSpec("bid", lambda: nc.bid(name()), 15, 60, enabled=market),
            PollSpec("ladder", lambda: nc.ladder(name()), 10, 60, enabled=market),
            PollSpec(
                "spend", lambda: nc.spend(name()), 10, 30, fast_interval=3, fast_when=waiting_for_nodes, enabled=k8s
            ),
            PollSpec("ticks", ticks, 15, 60, enabled=lambda: kind() in ("kubernetes", "vm")),
            PollSpec(
                "vm_capacity",
                nc.vm_capacity,
                10,
                30,
                fast_interval=3,
                fast_when=vm_changing,
                enabled=lambda: kind() == "vm",
            ),
            PollSpec("ssh_keys", ssh_keys, 120, 600, enabled=lambda: kind() == "vm" and org_id() is not None),
            PollSpec("catalog", nc.catalog, 600, 0),
            # A public research organization's node: the box's stand-in for Marshall's status (the service has
            # none: read once, "unavailable", then left alone).
            PollSpec(
                "research",
                nc.research_status,
                10,
                60,
                fast_interval=3,
                fast_when=lambda: getattr(store.value("research"), "state", "") == "assigning",
                enabled=lambda: (
                    getattr(store.value("whoami"), "org_kind", "") == "public_research"
                    and getattr(store.value("research"), "state", "") != "unavailable"
                ),
            ),
        ]
        return Pollers(store, specs)


def _start_sim(opts: DemoOptions) -> SimServer:
    from .sim.server import SimServer
    from .sim.world import World

    return SimServer(World(opts.scenario, seed=opts.seed, speed=opts.speed)).start()
