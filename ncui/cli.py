"""``ncui`` — the command line: the app, the demo, and the simulator alone.

ncui                      the app against National Compute (NC_TOKEN or ~/.config/nationalcompute/token)
ncui --demo               the app against National Compute in a box, started in this process
ncui --api URL --access URL   the app against another endpoint (e.g. a separate `ncui sim`)
ncui --recipe NAME [--cluster NAME]   open on Recipes with the recipe a hand-off names (not asked again)
ncui --debug              log everything to ~/.local/state/ncui/ncui.log (always: errors and failed workers)
ncui sim [...]            the simulator alone; prints NC_API=… NC_ACCESS=… NC_TOKEN=… NC_SSH_CONFIG=… then serves
ncui history [--api URL | --all]   what ncui changed, as the commands a person would type
ncui report [--json | --markdown] [--cluster NAME]   report back on the job that runs now or ran last
ncui doctor [--json] [--strict] [--verbose]   is this machine, and the service's contract, what ncui expects?
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import __version__

if TYPE_CHECKING:
    from .backend import Backend
    from .flows.connect import Handoff
    from .sim.world import World


def _sim_args(p: argparse.ArgumentParser) -> None:
    from .sim.scenarios import DEFAULT_SCENARIO, SCENARIOS

    p.add_argument(
        "--scenario",
        default=DEFAULT_SCENARIO,
        choices=sorted(SCENARIOS),
        help=f"which organization and cluster to simulate (default {DEFAULT_SCENARIO})",
    )
    p.add_argument(
        "--speed",
        type=_speed,
        default=None,
        help="virtual seconds per real second (default 60 for the demo, 1 for sim; 0 freezes)",
    )
    p.add_argument("--seed", type=int, default=1, help="same seed, same market (default 1)")


def _drifts() -> list[str]:
    from .sim.drift import DRIFTS, DROPPED

    return [*sorted(DRIFTS), f"{DROPPED}:PATH:FIELD"]


def _drift(text: str) -> str:
    from .sim.drift import named

    try:
        return named(text).name
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _speed(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= v <= 100_000:
        raise argparse.ArgumentTypeError("speed must be between 0 and 100000")
    return v


def _port(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError("a port is between 0 and 65535 (0 picks a free one)")
    return v


def _name(text: str) -> str:
    text = text.strip()
    if not 0 < len(text) <= 100 or not text.isprintable():
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a name (letters, digits, - and .)")
    return text


def _handoff(args: argparse.Namespace) -> Handoff | None:
    from .flows.connect import Handoff

    return Handoff(args.cluster, args.recipe) if args.cluster or args.recipe else None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ncui",
        description="Run your first GPU job on National Compute, from the terminal.",
        epilog="Try it offline first: ncui --demo",
    )
    p.add_argument("--version", action="version", version=f"ncui {__version__}")
    p.add_argument("--demo", action="store_true", help="run against National Compute in a box (offline)")
    p.add_argument("--api", metavar="URL", help="API origin (default https://nationalcompute.com)")
    p.add_argument("--access", metavar="URL", help="recipe catalog origin (default https://access.nationalcompute.com)")
    p.add_argument(
        "--login-node",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ncui runs on the Slurm cluster's login node itself: Slurm commands run here, not over ssh "
        "(default: detected from sbatch and a Slurm config; also NCUI_LOGIN_NODE=1/0)",
    )
    p.add_argument(
        "--recipe",
        metavar="NAME",
        type=_name,
        help="open on Recipes with this recipe chosen, as a hand-off names it (nanogpt, kimi-k3, inkling-serve, "
        "finance-analyst, …: a catalog name, one of its files' stems, or train/serve/post-train)",
    )
    p.add_argument("--cluster", metavar="NAME", type=_name, help="make this cluster the active one")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no desktop notification (through the terminal) for this session; in-app ones still show",
    )
    p.add_argument(
        "--debug",
        action="store_true",
        help="log at DEBUG, not only warnings and errors, to ncui's log file ($XDG_STATE_HOME/ncui/ncui.log, by "
        "default ~/.local/state/ncui/ncui.log; never a token)",
    )
    _sim_args(p)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    s = sub.add_parser(
        "sim",
        help="serve National Compute in a box until interrupted",
        description="Serve National Compute in a box (API, market, catalog) on loopback. "
        "Prints NC_API=…, NC_ACCESS=…, NC_TOKEN=… and NC_SSH_CONFIG=… first.",
    )
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=_port, default=0, help="port (default 0: a free one, printed)")
    s.add_argument(
        "--contract-drift",
        metavar="NAME",
        type=_drift,
        help="serve a contract that drifted, in its OpenAPI documents and its answers alike (for ncui doctor and "
        "rehearsal): " + ", ".join(_drifts()),
    )
    _sim_args(s)
    h = sub.add_parser(
        "history",
        help="print what ncui changed, as the commands you would type",
        description="Print what ncui changed on a service (limit prices, applies, stops, sign-ins, keys, "
        "declarations, sbatch, docker on a node), oldest first: each command on one line under a "
        "'# when — what' comment. The token is never printed: curl lines name $NC_TOKEN.",
    )
    h.add_argument("--api", dest="history_api", metavar="URL", help="the service's API origin (default: as ncui's)")
    h.add_argument("--all", action="store_true", help="every service's and demo box's history, each under its name")
    r = sub.add_parser(
        "report",
        help="report back on the job that runs now or ran last on the active cluster",
        description="Report back on the job that runs now or ran last on the active cluster (the one ncui last "
        "used, or --cluster): GPU class, the node's arrival, the first loss lines or the completion, the assessed "
        "rate, spend so far, how to stop it, and what still stands. Reads the cluster itself: a job applied by "
        "hand with kubectl is reported too.",
    )
    how = r.add_mutually_exclusive_group()
    how.add_argument("--json", action="store_true", help="the report as JSON (a stable shape: see the README)")
    how.add_argument("--markdown", action="store_true", help="the report as markdown, to paste into a chat or issue")
    r.add_argument("--cluster", metavar="NAME", help="report on this cluster (default: the one ncui last used)")
    _endpoints(r)
    q = sub.add_parser(
        "quote",
        help="what a recipe will cost on the active cluster, before you apply it",
        description="What RECIPE will cost on the active cluster (the one ncui last used, or --cluster): the run's "
        "billed time (a node bills from Ready to release) × its GPUs × the price that wins its nodes today (about) "
        "and × your ceiling (the most it can cost). The duration is the catalog's expected_minutes, else your "
        "earlier runs of the recipe, else unknown (per hour only); serves are per hour until stopped.",
    )
    q.add_argument(
        "recipe", metavar="RECIPE", type=_name, help="a catalog name, a file stem, or train/serve/post-train"
    )
    q.add_argument(
        "--ceiling",
        metavar="P",
        help="your ceiling per GPU hour, in dollars (default: the limit price that stands, else the one you gave)",
    )
    q.add_argument("--json", action="store_true", help="the quote as JSON (schema ncui.quote/1)")
    q.add_argument("--cluster", metavar="NAME", help="quote on this cluster (default: the one ncui last used)")
    _endpoints(q)
    d = sub.add_parser(
        "doctor",
        help="check this machine and the service's contract before a first real run",
        description="Check, before the first real run, that the service's contract (its four OpenAPI documents and "
        "the recipe catalog) is what ncui reads, and that this machine has what ncui needs (token, kubectl, ssh, "
        "the clock, the terminal). One line per check: ✓ fine, ! a warning, ✗ a problem, with what to do. Exit "
        "0 when nothing is ✗, 1 when anything is (--strict: a ! too).",
    )
    d.add_argument("--json", action="store_true", help="a list of {check, status, reason, fix, details}")
    d.add_argument("--strict", action="store_true", help="a warning (!) fails too: exit 1")
    d.add_argument("--verbose", action="store_true", help="also what the service added, and each check's details")
    _endpoints(d)
    return p


def _endpoints(p: argparse.ArgumentParser) -> None:
    """A subcommand's --api/--access (SUPPRESS: given only after it, they must not reset the same options given
    before it)."""
    p.add_argument("--api", metavar="URL", default=argparse.SUPPRESS, help="API origin (as for the app)")
    p.add_argument("--access", metavar="URL", default=argparse.SUPPRESS, help="recipe catalog origin")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "login_node", None) is not None:  # one place reads it: remote.local.on_login_node
        os.environ["NCUI_LOGIN_NODE"] = "1" if args.login_node else "0"
    if args.command == "sim":
        return run_sim(args)
    if args.command == "history":
        return run_history(args)
    if args.command == "report":
        return run_report(args)
    if args.command == "doctor":
        return run_doctor(args)
    if args.command == "quote":
        return run_quote(args)
    if args.demo:
        return run_demo(args)
    return run_app(args)


def _world(args: argparse.Namespace, default_speed: float) -> World:
    from .sim.world import World

    speed = default_speed if args.speed is None else args.speed
    return World(args.scenario, seed=args.seed, speed=speed)


def run_sim(args: argparse.Namespace) -> int:
    from .sim.app import SimConfig
    from .sim.drift import named
    from .sim.server import SimServer

    try:
        server = SimServer(
            _world(args, 1.0), host=args.host, port=args.port, config=SimConfig(drift=args.contract_drift)
        )
    except OSError as e:
        print(f"ncui sim: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    for line in server.env_lines():
        print(line)
    print(
        f"# National Compute in a box: scenario {args.scenario}, seed {args.seed}, "
        f"speed {server.world.clock.speed:g}x. Ctrl-C stops it."
    )
    if args.contract_drift:
        print(f"# Contract drift {args.contract_drift}: {named(args.contract_drift).what}")
    print('# Try: curl -H "Authorization: Bearer $NC_TOKEN" $NC_API/api/whoami')
    k8s = [c.name for c in server.world.main_org.spec.clusters if c.kind == "kubernetes"]
    if k8s:
        print(
            f'# kubectl: curl -fsSL -H "Authorization: Bearer $NC_TOKEN" '
            f'"$NC_API/api/k8s/cluster/kubeconfig?cluster={k8s[0]}" -o {k8s[0]}.yaml; '
            f"KUBECONFIG={k8s[0]}.yaml kubectl --context {k8s[0]} get nodes"
        )
    slurm = [c.name for c in server.world.main_org.spec.clusters if c.kind == "slurm"]
    if slurm:  # the guide's Slurm path by hand: slurm-login (the box's stand-in), then ssh <cluster> and four commands
        print(
            f'# Slurm: curl -X POST -H "Authorization: Bearer $NC_TOKEN" $NC_API/_sim/slurm/login  (slurm-login: a '
            f'24 h certificate); then ssh -F "$NC_SSH_CONFIG" {slurm[0]}'
        )
    vm = [c.name for c in server.world.main_org.spec.clusters if c.kind == "vm"]
    if vm:  # the guide's VM path by hand: a key, capacity, then ssh to the granted node
        org = server.world.main_org.spec.org_id
        print(
            f"# VM ({vm[0]}): POST $NC_API/api/vm/orgs/{org}/ssh-keys registers a key (for later grants), PUT "
            '$NC_API/api/vm/capacity declares; once an allocation is active: ssh -F "$NC_SSH_CONFIG" <allocation id>, '
            "or ssh -p <ssh_port> <ssh_user>@<public_ip>"
        )
    if server.world.main_org.research is not None:
        print(
            '# Research node: curl -H "Authorization: Bearer $NC_TOKEN" $NC_API/_sim/research/status; '
            'POST $NC_API/_sim/research/assign assigns it now; then ssh -F "$NC_SSH_CONFIG" research-node'
        )
    sys.stdout.flush()

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):  # stopped as by Ctrl-C: the ssh nodes close, temp folders go
        signal.signal(sig, interrupt)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def run_history(args: argparse.Namespace) -> int:
    """``ncui history``: plain text, one command per line under its ``# when — what`` comment, oldest first."""
    from .config import API_ORIGIN
    from .history import history_path, origin_of, read_file
    from .textsafe import clean

    origin = None if args.all else origin_of(args.history_api or args.api or API_ORIGIN)
    read = read_file(history_path(), origin)
    for p in read.problems:
        print(f"ncui history: {p}", file=sys.stderr)
    last = None
    for e in read.entries:
        if origin is None and e.origin != last:
            print(("\n" if last is not None else "") + f"## {clean(e.origin)}")
            last = e.origin
        print(clean(e.comment()))
        print(clean(e.command))
    if not read.entries:
        others = ", ".join(f"{clean(o)} ({n})" for o, n in read.origins.items())
        print(
            f"ncui history: nothing recorded for {origin or 'any service'} in {history_path()}."
            + (f" Recorded for: {others}; see ncui history --api URL, or --all." if others else ""),
            file=sys.stderr,
        )
    return 0


def run_demo(args: argparse.Namespace) -> int:
    """The app against National Compute in a box, started in this process on a free loopback port."""
    from .app import NCApp
    from .backend import Backend, DemoOptions

    speed = 60.0 if args.speed is None else args.speed
    backend = Backend(demo=DemoOptions(args.scenario, speed, args.seed))
    _log_to_file(args, backend)
    app = NCApp(backend, mode="demo", handoff=_handoff(args), quiet=args.quiet)
    try:
        app.run()
    finally:
        backend.remove_demo_home()  # (ended by a hang-up or a SIGTERM too: the app's exit closed it, or this does)
    return 0


def _log_to_file(args: argparse.Namespace, backend: Backend | None) -> None:
    """Once, before the app starts (its screen hides stderr): errors and failed workers in full to ncui.log,
    never the backend's token (ncui/logfile.py). ``--debug``: everything ncui logs."""
    from . import logfile

    logfile.configure(debug=args.debug, secrets=backend.secrets if backend is not None else tuple)


def run_app(args: argparse.Namespace) -> int:
    """The app against the real service (or --api/--access), or a first-run screen without a token."""
    from .app import NCApp
    from .backend import Backend
    from .config import (
        ACCESS_ORIGIN,
        API_ORIGIN,
        WORKSPACE_NO_CREDENTIAL,
        Endpoints,
        first_run_message,
        load_token,
        token_path,
    )
    from .kube.kubeconfig import KubeHome

    src = load_token()
    if src.token is None:
        _log_to_file(args, None)
        workspace = src.origin == "workspace"  # the daemon holds the credential: never ask for one
        if not sys.stdout.isatty():
            print(
                WORKSPACE_NO_CREDENTIAL
                if workspace
                else (f"ncui: {src.warning}\n" if src.warning else "")
                + "ncui needs your National Compute token: save it to ~/.config/nationalcompute/token "
                "(chmod 600) or set NC_TOKEN. To try ncui without one: ncui --demo",
                file=sys.stderr,
            )
            return 2
        NCApp(None, first_run=first_run_message(str(token_path()), src.warning, workspace=workspace)).run()
        return 2
    from .store import Store

    store = Store()
    if src.warning:  # shown in the app (a notification at start, a line on Account): stderr is hidden by the screen
        store.meta["token_warning"] = src.warning
    store.meta["token_from"] = src.origin  # (the commands ncui prints authenticate with the same credential)
    endpoints = Endpoints(api=args.api or API_ORIGIN, access=args.access or ACCESS_ORIGIN)
    backend = Backend(endpoints, src.token, kube_home=KubeHome.default())  # ~/.kube, as the guide's Connect step
    _log_to_file(args, backend)
    NCApp(backend, store=store, handoff=_handoff(args), quiet=args.quiet).run()
    return 0


def run_doctor(args: argparse.Namespace) -> int:
    """``ncui doctor``: one line per check (or ``--json``); exit 0 when nothing failed, 1 when anything did."""
    from .config import ACCESS_ORIGIN, API_ORIGIN, Endpoints
    from .doctor.run import run

    endpoints = Endpoints(api=args.api or API_ORIGIN, access=args.access or ACCESS_ORIGIN)
    return run(endpoints, as_json=args.json, strict=args.strict, verbose=args.verbose)


def run_report(args: argparse.Namespace) -> int:
    """``ncui report``: the report on stdout (text, ``--json`` or ``--markdown``); what could not be read is said
    in it. Exit 2 without a token, 1 when the service could not be reached at all."""
    import asyncio

    from . import statefile
    from .config import ACCESS_ORIGIN, API_ORIGIN, Endpoints, load_token

    src = load_token()
    if src.token is None:
        print(
            f"ncui report needs your National Compute token: {src.warning or 'none found'}. Save it to "
            "~/.config/nationalcompute/token (chmod 600) or set NC_TOKEN.",
            file=sys.stderr,
        )
        return 2
    endpoints = Endpoints(api=args.api or API_ORIGIN, access=args.access or ACCESS_ORIGIN)
    from .kube.signin import BACKGROUND_ENV

    # ncui's own sign-in plugin starts no background poller for a report: the report gives the link, and the next
    # report (or kubectl call) finds the approval itself (one-shot: nothing of it keeps running after it)
    os.environ[BACKGROUND_ENV] = "0"
    report = asyncio.run(_report(endpoints, src.token, args.cluster, src.origin))
    for said in statefile.notices():  # a state file set aside
        print(f"ncui: {said}", file=sys.stderr)
    from .report import markdown, rows, to_json

    if args.json:
        sys.stdout.write(to_json(report))
    elif args.markdown:
        sys.stdout.write(markdown(report))
    else:
        for label, lines in rows(report):
            for i, line in enumerate(lines):
                print(f"{label if i == 0 else '':<17} {line}")
    return 1 if report["organization"] is None else 0


def run_quote(args: argparse.Namespace) -> int:
    """``ncui quote RECIPE``: the quote on stdout (its lines, or ``--json``). Exit 2 without a token or for a bad
    ceiling, 1 when the recipe or the cluster cannot be quoted (said on stderr)."""
    import asyncio
    import json

    from .api.errors import NCError
    from .config import ACCESS_ORIGIN, API_ORIGIN, Endpoints, load_token
    from .money import parse_dollars

    src = load_token()
    if src.token is None:
        print(
            f"ncui quote needs your National Compute token: {src.warning or 'none found'}. Save it to "
            "~/.config/nationalcompute/token (chmod 600) or set NC_TOKEN.",
            file=sys.stderr,
        )
        return 2
    ceiling = None
    if args.ceiling is not None:
        try:
            ceiling = parse_dollars(args.ceiling)
        except ValueError as e:
            print(f"ncui quote: --ceiling {e}", file=sys.stderr)
            return 2
        if ceiling <= 0:
            print("ncui quote: --ceiling must be more than $0", file=sys.stderr)
            return 2
    endpoints = Endpoints(api=args.api or API_ORIGIN, access=args.access or ACCESS_ORIGIN)
    try:
        q, where = asyncio.run(_quote(endpoints, src.token, args.recipe, ceiling, args.cluster))
    except (NCError, OSError, ValueError) as e:
        from .textsafe import clean

        print(f"ncui quote: {clean(str(e) or type(e).__name__)[:400]}", file=sys.stderr)
        return 1
    if args.json:
        sys.stdout.write(json.dumps(q.to_dict() | {"cluster": where}, indent=2) + "\n")
    else:
        print(f"{q.recipe} on {where}:")
        for line in q.lines():
            print(f"  {line}")
        if q.kind in ("run", "serve", "hourly"):  # (reading the cluster's nodes needs kubectl's sign-in)
            print("  Idle nodes you already hold are not counted here; the app's apply question counts them.")
    return 0


async def _quote(endpoints: object, token: object, name: str, ceiling: int | None, cluster: str | None) -> tuple:
    """The quote for ``ncui quote``, read for it: the cluster, the catalog and the recipe's files (its GPUs), the
    ladder and the standing limit price (or the ceiling ncui remembers); a VM cluster per node per hour; a
    public-research organization one full lease. Returns (the quote, the cluster's name)."""
    from . import memory
    from . import quote as Q
    from . import recipes as R
    from .api.client import NCClient
    from .textsafe import clean

    nc = NCClient(endpoints, token, timeout=15)  # type: ignore[arg-type]  # config's SecretStr: the same face
    try:
        who = await nc.whoami()
        key = memory.key_for(nc.endpoints.api, who.org_id)
        mem = memory.recall(key)
        if who.org_kind == "public_research" and not who.clusters:
            st = await nc.research_status()
            return Q.lease_quote(
                st.gpus or 0, st.price_per_gpu_hour, st.lease_seconds, st.lease_ucredits
            ), "a research node"
        want = cluster or mem.get("active_cluster")
        ref = next((c for c in who.clusters if c.name == want), None)
        if ref is None and cluster is not None:
            raise ValueError(f"{clean(cluster)} is not one of {clean(who.org_said)}'s clusters")
        ref = ref or next(
            (c for c in who.clusters if c.kind == "kubernetes"), who.clusters[0] if who.clusters else None
        )
        if ref is None:
            raise ValueError(f"{clean(who.org_said)} has no cluster to quote a recipe on")
        remembered = (mem.get("ceiling") or {}) if isinstance(mem.get("ceiling"), dict) else {}
        if ref.kind == "vm":
            cap = await nc.vm_capacity()
            ticks = await nc.ticks(gpu_model=cap.gpu_model or None, limit=1)
            win = ticks.ticks[-1].price_per_gpu_hour if ticks.ticks else None
            gpn = cap.gpus_per_node or (cap.allocations[0].gpus if cap.allocations else 0)
            if not gpn:
                raise ValueError(f"{clean(ref.name)} does not say how many GPUs a node has: no per-node quote")
            return Q.vm_quote(gpn, win, ceiling or cap.max_price_per_gpu_hour or None), ref.name
        if ref.kind != "kubernetes":
            raise ValueError(
                f"{clean(ref.name)} is a {clean(ref.kind_said)} cluster: ncui quotes recipes on Kubernetes clusters"
            )
        info = await nc.k8s_cluster(ref.name)
        catalog = await nc.catalog()
        recipe = R.find(catalog, name, "kubernetes")
        if recipe is None:
            raise ValueError(f"no recipe called {clean(name)} in the catalog")
        plan = await R.resolve(nc, recipe, info)
        nodes = max(1, -(-plan.gpus // info.gpus_per_node)) if plan.gpus else 0
        if info.market:
            ladder = await nc.ladder(ref.name)
            standing = (await nc.bid(ref.name)).max_price_per_gpu_hour
            given = remembered.get("price_per_gpu_hour_ucredits") if remembered.get("cluster") == ref.name else None
            top = ceiling or standing or (given if isinstance(given, int) and not isinstance(given, bool) else None)
            win = Q.win_price(ladder, nodes)
        else:
            ticks = await nc.ticks(gpu_model=info.gpu_model, limit=1)
            win, top = (ticks.ticks[-1].price_per_gpu_hour if ticks.ticks else None), None
        return Q.for_plan(plan, recipe, info, nodes, win, top, memory.durations(key, recipe.name)), ref.name
    finally:
        await nc.aclose()


def plugin_refused(kubeconfig: str, api: str, cluster: str) -> str:
    """Why ``ncui report`` does not run the sign-in command the kubeconfig names ("" when it may): the same rule as
    the app's, but never a question (a command never answered is refused, with how to answer it)."""
    from .kube import plugins
    from .kube.session import exec_spec

    try:
        spec = exec_spec(kubeconfig)
    except ValueError:
        return ""  # no plugin: nothing runs (the client says the kubeconfig has none)
    verdict = plugins.judge(spec, api, cluster)
    if verdict.action == "ask":
        return (
            f"ncui report did not run {cluster}'s sign-in command: it is neither National Compute's nc-signin nor "
            f"ncui's own, and you have not said yes to it (start ncui and sign in, s, to answer): {plugins.shown(spec)}"
        )
    return verdict.reason if verdict.action == "refuse" else ""


async def _report(endpoints: object, token: object, cluster: str | None, token_from: str) -> dict:
    """Read the service and the cluster for ``ncui report`` (kubectl's sign-in as cached; the Slurm login node, a VM
    node or the research node over ssh with ncui's known_hosts, never asking: an unknown host key is said)."""
    from datetime import datetime, timezone
    from pathlib import Path

    from .api.client import NCClient
    from .config import known_hosts_path
    from .kube.client import KubeClient
    from .remote.login import slurm_runner
    from .remote.runner import Runner
    from .report import collect, node_runner

    nc = NCClient(endpoints, token, timeout=15)  # type: ignore[arg-type]  # config's SecretStr: the same face
    kubes: list[KubeClient] = []
    runners: list[Runner] = []

    async def kube(name: str) -> KubeClient:
        text = await nc.kubeconfig(name)
        refused = plugin_refused(text, endpoints.api, name)  # type: ignore[attr-defined]  # (config's Endpoints)
        if refused:
            raise ValueError(refused)
        client = KubeClient.from_kubeconfig(text)
        kubes.append(client)
        await client.list("nodes")  # signed in? (NotSignedIn carries the link to approve)
        return client

    async def slurm(name: str) -> Runner:
        async def refuse(host: str, port: int, fingerprint: str) -> bool:
            return False  # (no question on the command line: ncui's own known_hosts must know the login node)

        env = os.environ.get("NC_SSH_CONFIG")
        runner = await slurm_runner(
            name, ssh_config=Path(env) if env else None, known_hosts=known_hosts_path(), confirm_host_key=refuse
        )
        runners.append(runner)
        return runner

    async def node(node_id: str, host: str, port: int, user: str, alias: str) -> Runner:
        env = os.environ.get("NC_SSH_CONFIG")
        runner = await node_runner(host, port, user, alias=alias, ssh_config=Path(env) if env else None)
        runners.append(runner)
        return runner

    try:
        return await collect(
            nc,
            now=datetime.now(timezone.utc),
            cluster=cluster,
            kube=kube,
            slurm=slurm,
            node=node,
            token_from=token_from,
        )
    finally:
        for k in kubes:
            await k.aclose()
        for r in runners:
            await r.close()
        await nc.aclose()


if __name__ == "__main__":
    sys.exit(main())
