"""``ncui`` — the command line: the app, the demo, and the simulator alone.

ncui                      the app against National Compute (NC_TOKEN or ~/.config/nationalcompute/token)
ncui --demo               the app against National Compute in a box, started in this process
ncui --api URL --access URL   the app against another endpoint (e.g. a separate `ncui sim`)
ncui --recipe NAME [--cluster NAME]   open on Recipes with the recipe a hand-off names (not asked again)
ncui sim [...]            the simulator alone; prints NC_API=… NC_ACCESS=… NC_TOKEN=… NC_SSH_CONFIG=… then serves
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
    from .screens.connect import Handoff
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
    from .screens.connect import Handoff

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
    _sim_args(s)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "login_node", None) is not None:  # one place reads it: remote.local.on_login_node
        os.environ["NCUI_LOGIN_NODE"] = "1" if args.login_node else "0"
    if args.command == "sim":
        return run_sim(args)
    if args.demo:
        return run_demo(args)
    return run_app(args)


def _world(args: argparse.Namespace, default_speed: float) -> World:
    from .sim.world import World

    speed = default_speed if args.speed is None else args.speed
    return World(args.scenario, seed=args.seed, speed=speed)


def run_sim(args: argparse.Namespace) -> int:
    from .sim.server import SimServer

    try:
        server = SimServer(_world(args, 1.0), host=args.host, port=args.port)
    except OSError as e:
        print(f"ncui sim: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    for line in server.env_lines():
        print(line)
    print(
        f"# National Compute in a box: scenario {args.scenario}, seed {args.seed}, "
        f"speed {server.world.clock.speed:g}x. Ctrl-C stops it."
    )
    print('# Try: curl -H "Authorization: Bearer $NC_TOKEN" $NC_API/api/whoami')
    k8s = [c.name for c in server.world.main_org.spec.clusters if c.kind == "kubernetes"]
    if k8s:
        print(
            f'# kubectl: curl -fsSL -H "Authorization: Bearer $NC_TOKEN" '
            f'"$NC_API/api/k8s/cluster/kubeconfig?cluster={k8s[0]}" -o {k8s[0]}.yaml; '
            f"KUBECONFIG={k8s[0]}.yaml kubectl --context {k8s[0]} get nodes"
        )
    slurm = [c.name for c in server.world.main_org.spec.clusters if c.kind == "slurm"]
    if slurm:  # the seed's Slurm path by hand: slurm-login (the box's stand-in), then ssh <cluster> and four commands
        print(
            f'# Slurm: curl -X POST -H "Authorization: Bearer $NC_TOKEN" $NC_API/_sim/slurm/login  (slurm-login: a '
            f'24 h certificate); then ssh -F "$NC_SSH_CONFIG" {slurm[0]}'
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


def run_demo(args: argparse.Namespace) -> int:
    """The app against National Compute in a box, started in this process on a free loopback port."""
    from .app import NCApp
    from .backend import Backend, DemoOptions

    speed = 60.0 if args.speed is None else args.speed
    app = NCApp(Backend(demo=DemoOptions(args.scenario, speed, args.seed)), mode="demo", handoff=_handoff(args))
    app.run()
    return 0


def run_app(args: argparse.Namespace) -> int:
    """The app against the real service (or --api/--access), or a first-run screen without a token."""
    from .app import NCApp, first_run_message
    from .backend import Backend
    from .config import ACCESS_ORIGIN, API_ORIGIN, WORKSPACE_NO_CREDENTIAL, Endpoints, load_token, token_path
    from .kube.kubeconfig import KubeHome

    src = load_token()
    if src.token is None:
        workspace = src.origin == "workspace"  # the daemon holds the credential: never ask for one
        if not sys.stdout.isatty():
            print(
                WORKSPACE_NO_CREDENTIAL
                if workspace
                else "ncui needs your National Compute token: save it to ~/.config/nationalcompute/token "
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
    endpoints = Endpoints(api=args.api or API_ORIGIN, access=args.access or ACCESS_ORIGIN)
    backend = Backend(endpoints, src.token, kube_home=KubeHome.default())  # ~/.kube, as the seed's Connect step
    NCApp(backend, store=store, handoff=_handoff(args)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
