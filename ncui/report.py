"""Report back (the guide's last duty): for the job that runs now or ran last on the active cluster, the GPU class,
when the node arrived, the first loss lines or the completion, the assessed rate per GPU hour (the market's live
rate and the metered rate with its lag), spend so far, how to stop it, and what still stands with the command to
withdraw it. No Textual here.

``await collect(nc, ...)`` reads the service and the cluster (the cluster itself, so a job applied by hand with
kubectl is reported too), adds what ncui remembers (``memory``: the recipe applied and when, the first loss lines
once the pod is gone), and returns ONE dict, the report: ``ncui report --json`` prints it as it is, ``--markdown``
and the Report screen (key 6) draw it with ``rows()``, so the three cannot disagree. Its shape is stable
(``SCHEMA``; README: "ncui report"). Every value that could not be read is null with its reason in ``unknown``,
never zero or empty. Money is integer µcredits (1,000,000 = $1); times are ISO 8601 UTC.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import AsyncGenerator, Awaitable, Callable
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from . import memory
from .kube.kinds import spec_gpus
from .kube.status import owned_by
from .limits import charged_since, unread_charge
from .logfollow import parse_loss
from .money import dollars_text, fmt_price, fmt_usd
from .textsafe import clean

if TYPE_CHECKING:
    from .api import models as m
    from .api.client import NCClient
    from .history import History
    from .kube.client import KubeClient
    from .remote.runner import Runner

SCHEMA = "ncui.report/1"
T = TypeVar("T")
TOKEN_FILE_AUTH = '"Authorization: Bearer $(cat ~/.config/nationalcompute/token)"'
ENV_AUTH = '"Authorization: Bearer $NC_TOKEN"'


def auth_header(token_from: str | None) -> str:
    """The ``-H`` a printed curl command authenticates with: the credential this session used (``token_from``, as
    ``config.TokenSource.origin`` names it: ``NC_TOKEN`` or the token file), never the token itself."""
    return ENV_AUTH if token_from == "NC_TOKEN" else TOKEN_FILE_AUTH


LOG_LINES_READ = 20_000  # at most this many lines of a pod's log are read for its first loss lines


class _Unknown(dict[str, str]):
    """field → why it could not be read (the report's ``unknown``)."""


async def _try(unknown: _Unknown, field: str, read: Callable[[], Awaitable[T]]) -> T | None:
    """``await read()``; on a failure, None and the reason under ``field``."""
    from .api.errors import NCError
    from .kube.client import KubeError
    from .remote.runner import RemoteError

    try:
        return await read()
    except (NCError, KubeError, RemoteError, OSError, ValueError, asyncio.TimeoutError) as e:
        unknown.setdefault(field, clean(str(e) or type(e).__name__)[:300])
        return None


def _t(text: str | None) -> datetime | None:
    from .kube.status import parse_time

    try:
        return parse_time(text) if text else None
    except ValueError:
        return None


def _withdraw_bid(api: str, cluster: str, auth: str) -> str:
    url = f"{api.rstrip('/')}/api/k8s/bid?cluster={cluster}"
    return (
        f"curl -X PUT -H {auth} -H 'Content-Type: application/json' "
        f"-d '{{\"max_price_per_gpu_hour\": 0}}' {shlex.quote(url)}"
    )


def _release_vm(api: str, cap: m.VmCapacity, auth: str) -> str:
    if cap.max_price_per_gpu_hour is None or cap.version is None:  # (the PUT needs both: never a guessed one)
        why = cap.unknown("max_price_per_gpu_hour") or cap.unknown("version")
        return f"unknown: {why}; release it on Lease (5, R) once ncui can read it"
    body = json.dumps(
        {
            "max_gpus": 0,
            "max_price_per_gpu_hour": float(dollars_text(cap.max_price_per_gpu_hour)),
            "expected_version": cap.version,
        }
    )
    url = f"{api.rstrip('/')}/api/vm/capacity"
    return f"curl -X PUT -H {auth} -H 'Content-Type: application/json' -d {shlex.quote(body)} {shlex.quote(url)}"


# ---- Kubernetes --------------------------------------------------------------------------------------


def pick_job(objs: list[dict[str, Any]], remembered: dict[str, Any] | None) -> dict[str, Any] | None:
    """The job the report is about: the one ncui remembers applying when it is still there, else the newest that
    asks for GPUs (a running one first), else the newest."""
    from .kube.status import job_status

    if not objs:
        return None
    if remembered:
        same = [o for o in objs if [o.get("kind"), o["metadata"]["name"]] == remembered.get("object")]
        if same:
            return same[0]

    def rank(o: dict[str, Any]) -> tuple[bool, bool, str]:
        spec = ((o.get("spec") or {}).get("template") or {}).get("spec") or {}
        running = o.get("kind") != "Job" or job_status(o) not in ("Complete", "Failed")
        return (spec_gpus(spec) > 0, running, o["metadata"].get("creationTimestamp") or "")

    return max(objs, key=rank)


async def first_loss_lines(kube: KubeClient, pod: str, container: str | None) -> list[str]:
    """The first ``FIRST_LINES`` loss lines of a pod's log (read from its start, not followed)."""
    out: list[str] = []
    seen = 0
    gen = cast("AsyncGenerator[str, None]", kube.pod_logs(pod, container, follow=False, timestamps=False))
    try:
        async for line in gen:
            seen += 1
            if parse_loss(line) is not None:
                out.append(clean(line))
                if len(out) >= memory.FIRST_LINES:
                    break
            if seen >= LOG_LINES_READ:
                break
    finally:
        await gen.aclose()
    return out


def _node_of(pod: dict[str, Any] | None) -> str | None:
    return ((pod or {}).get("spec") or {}).get("nodeName") or None


def _disruption(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod's ``DisruptionTarget`` condition when it is true (the market took its node back), else None."""
    conds = (pod.get("status") or {}).get("conditions") or ()
    return next((c for c in conds if c.get("type") == "DisruptionTarget" and c.get("status") == "True"), None)


def _current_pod(pods: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The pod that runs now or ran last (``pods`` oldest first): the newest placed one a reclaim did not stop (the
    replacement), else the newest not stopped, else the newest."""
    live = [p for p in pods if _disruption(p) is None] or pods
    placed = [p for p in live if _node_of(p)]
    return (placed or live)[-1] if live else None


def _job_gpus(obj: dict[str, Any]) -> int:
    """The GPUs the job or deployment asks for: its pod template's × the pods it runs at once."""
    spec = obj.get("spec") or {}
    per_pod = spec_gpus((spec.get("template") or {}).get("spec") or {})
    at_once = spec.get("parallelism") if obj.get("kind") == "Job" else spec.get("replicas")
    return per_pod * max(1, at_once if isinstance(at_once, int) else 1)


def _reclaims(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each pod a reclaim stopped (``pods`` oldest first), with the pod made after it to replace it."""
    out: list[dict[str, Any]] = []
    for i, p in enumerate(pods):
        cond = _disruption(p)
        if cond is None:
            continue
        after = pods[i + 1] if i + 1 < len(pods) else None
        started = _t(((after or {}).get("status") or {}).get("startTime"))
        out.append(
            {
                "pod": clean(p["metadata"]["name"]),
                "node": clean(_node_of(p) or "") or None,
                "at": memory.iso(_t(cond.get("lastTransitionTime"))),
                "reason": clean(str(cond.get("message") or cond.get("reason") or "DisruptionTarget"))[:300],
                "replaced_by": None
                if after is None
                else {
                    "pod": clean(after["metadata"]["name"]),
                    "node": clean(_node_of(after) or "") or None,
                    "started_at": memory.iso(started),
                },
            }
        )
    return out


async def _job_loss_lines(
    kube: KubeClient,
    pod: dict[str, Any] | None,
    pods: list[dict[str, Any]],
    mine: dict[str, Any] | None,
    un: _Unknown,
) -> tuple[list[str], str | None]:
    """The first loss lines of the pod that runs now or ran (``pod``), and its name; while it has logged none, those
    of the pod before it (one a reclaim stopped), named as theirs. What ncui remembers is used when it is that pod's
    (it is said whose it is; an old record that does not say is taken only for a job of one pod)."""
    kept = list((mine or {}).get("first_loss_lines") or ())
    kept_pod = (mine or {}).get("first_loss_pod")
    if pod is None:  # the pods are gone (deleted or cleaned up): what was seen of them
        return kept, kept_pod
    name = pod["metadata"]["name"]
    if kept_pod is None and kept and len(pods) <= 1:
        kept_pod = name
    if kept_pod == name and len(kept) >= memory.FIRST_LINES:
        return kept, name
    if _node_of(pod):
        read = await _try(un, "first_loss_lines", partial(first_loss_lines, kube, name, _container(pod)))
        if read and (kept_pod != name or len(read) >= len(kept)):
            return read, name
    if kept and kept_pod is not None:  # (a pod since replaced, or this one's, read before)
        return kept, kept_pod
    for p in reversed([p for p in pods if p is not pod and _node_of(p)]):
        read = await _try(
            _Unknown(), "first_loss_lines", partial(first_loss_lines, kube, p["metadata"]["name"], _container(p))
        )
        if read:
            return read, p["metadata"]["name"]
    return [], None


def _container(pod: dict[str, Any]) -> str | None:
    name = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name")
    return name if isinstance(name, str) else None


async def _kubernetes(
    r: dict[str, Any],
    nc: NCClient,
    kube: KubeClient | None,
    ref: m.ClusterRef,
    mem: dict[str, Any] | None,
    un: _Unknown,
    auth: str,
    history: History | None,
) -> dict[str, Any]:
    """Fill ``r`` for a Kubernetes cluster; returns what to remember of the job."""
    from . import recipes as R
    from .kube.status import deployment_ready, job_status, pod_status

    name = ref.name
    info = await _try(un, "gpu_class", lambda: nc.k8s_cluster(name))
    if info is not None:
        r["cluster"]["market"] = info.market
        r["gpu_class"] = info.gpu_model
    spend = await _try(un, "rate.market", lambda: nc.spend(name))
    if spend is not None:
        r["rate"]["market"] = {
            "price_per_gpu_hour_ucredits": spend.price_per_gpu_hour,
            "gpus": spend.gpus_held,
            "ucredits_per_hour": spend.spend_ucredits_hr,
            "as_of": memory.iso(spend.as_of),
            "source": "GET /api/k8s/market/spend (live)",
        }
        if spend.spend_ucredits_hr is None:
            un.setdefault("rate.market.ucredits_per_hour", spend.unknown("spend_ucredits_hr"))
    if info is not None and not info.market:  # what the apply checked the balance against (no limit price here)
        gpu_model = info.gpu_model
        ticks = await _try(un, "rate.class_price", lambda: nc.ticks(gpu_model=gpu_model, limit=1))
        if ticks is not None and ticks.ticks:
            t = ticks.ticks[-1]
            r["rate"]["class_price"] = {
                "price_per_gpu_hour_ucredits": t.price_per_gpu_hour,
                "gpu_model": clean(t.gpu_model),
                "as_of": memory.iso(t.at),
                "source": "GET /api/market/ticks (the market's price for the cluster's GPU class; not this cluster's)",
            }
    if info is None or info.market:
        bid = await _try(un, "standing", lambda: nc.bid(name))
        if bid is not None and bid.max_price_per_gpu_hour:
            r["standing"].append(
                {
                    "what": "limit price",
                    "cluster": name,
                    "price_per_gpu_hour_ucredits": bid.max_price_per_gpu_hour,
                    "note": "it keeps pulling nodes for any GPU job applied on the cluster",
                    "withdraw": _withdraw_bid(nc.endpoints.api, name, auth),
                    "in_ncui": "Lease (5), w",
                }
            )
    if kube is None:
        run = f"kubectl --context {name} get nodes"
        run = history.with_kubeconfig(run) if history is not None else run
        why = f"not signed in to {name}: run {run} (or s in ncui), then read it again"
        if mem and mem.get("object"):  # what ncui saw of it, said as remembered: never as none
            _remembered(r, mem, f"not read now ({why}); as remembered", list(mem.get("stop") or ()))
            un.setdefault("job_state", why)
        else:
            un.setdefault("job", why)
        return {}
    objs: list[dict[str, Any]] = []
    for kind in ("jobs", "deployments"):
        items = await _try(un, "job", partial(kube.list, kind))
        objs += items[0] if items else []
    pods_nodes = await _try(un, "job", lambda: asyncio.gather(kube.list("pods"), kube.list("nodes")))
    if pods_nodes is None:
        return {}
    pods, nodes = pods_nodes[0][0], {n["metadata"]["name"]: n for n in pods_nodes[1][0]}
    obj = pick_job(objs, mem)
    if obj is None and mem and mem.get("object"):
        _gone(r, mem, name)
        return {}
    if obj is None:
        un.setdefault("job", f"no job or deployment on {name}")
        return {}
    kind, oname = obj["kind"], obj["metadata"]["name"]
    uid = obj["metadata"].get("uid")
    same = mem is not None and (mem.get("uid") == uid or (not mem.get("uid") and mem.get("object") == [kind, oname]))
    mine = mem if same else None  # what ncui remembers of this very object (applied by ncui: no uid yet)
    catalog = await _try(un, "recipe", nc.catalog)
    recipe = R.recipe_of(catalog or (), obj)
    if recipe is not None and recipe.name != "something-else" and info is not None:
        stop = list(R.stop_commands(recipe, info, nc.endpoints.catalog_url))
    else:
        stop = [f"kubectl --context {name} delete {'job' if kind == 'Job' else 'deployment'} {oname}"]
    state = job_status(obj) if kind == "Job" else f"READY {deployment_ready(obj)}"
    if kind == "Job" and state in ("Complete", "Failed"):  # as a VM's or Slurm's ended job says it
        stop = [f"nothing to stop: job/{clean(oname)} has ended ({state}); {'; '.join(stop)} removes it"]
    r["stop"] = stop
    created = obj["metadata"].get("creationTimestamp")
    r["job"] = {
        "kind": kind,
        "name": clean(oname),
        "recipe": recipe.name if recipe else None,
        "title": recipe.title if recipe else (mine or {}).get("title"),
        "state": state,
        "applied_at": (mine or {}).get("applied_at") or memory.iso(_t(created)),
        "applied_by": "ncui" if mine and mine.get("applied_by") == "ncui" else "elsewhere",
    }
    mine_pods = sorted(
        (p for p in pods if owned_by(p, obj.get("kind", ""), obj["metadata"]["name"])),
        key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]),
    )
    pod = _current_pod(mine_pods)
    learned: dict[str, Any] = {"object": [kind, oname], "uid": uid, "recipe": r["job"]["recipe"], "stop": stop}
    learned["applied_at"] = r["job"]["applied_at"]
    r["job"]["gpus"] = _job_gpus(obj)  # what the job asks for (never summed over the pods a reclaim replaced)
    if pod is not None:
        r["job"]["pod"] = clean(pod["metadata"]["name"])
        r["job"]["pod_status"] = pod_status(pod)
    r["reclaims"] = _reclaims(mine_pods)
    node_name = _node_of(pod)
    first = next((p for p in mine_pods if _node_of(p)), None)  # the first pod placed on a node: the first node
    first_node = _node_of(first) or ""
    if mine and mine.get("node_arrived_at"):
        r["node"] = {"name": mine.get("node"), "arrived_at": mine["node_arrived_at"], "source": mine.get("node_source")}
    elif first is not None and first_node in nodes:
        ready = next(
            (c for c in (nodes[first_node].get("status") or {}).get("conditions") or () if c.get("type") == "Ready"),
            None,
        )
        if ready is not None and ready.get("status") == "True":
            at = memory.iso(_t(ready.get("lastTransitionTime")))
            r["node"] = {"name": clean(first_node), "arrived_at": at, "source": "the Node's Ready condition"}
        else:
            un.setdefault("node", f"{clean(first_node)} is joining: not Ready yet")
    elif first is not None and _t((first.get("status") or {}).get("startTime")):
        # the Node object is gone (released after the job, or reclaimed): the kubelet started the pod there, so
        # the node had joined by then
        at = memory.iso(_t(first["status"]["startTime"]))
        r["node"] = {
            "name": clean(first_node),
            "arrived_at": at,
            "source": f"its pod {clean(first['metadata']['name'])}'s start there; the Node object is gone",
        }
    else:
        un.setdefault("node", "no node yet: the job waits for one (a first node takes 10–15 minutes)")
    if r["node"] is not None:
        learned.update(node=r["node"]["name"], node_arrived_at=r["node"]["arrived_at"], node_source=r["node"]["source"])
    lines, lines_pod = await _job_loss_lines(kube, pod, mine_pods, mine, un)
    r["first_loss_lines"] = lines
    r["job"]["first_loss_pod"] = clean(lines_pod) if lines_pod else None
    if lines:
        learned.update(first_loss_lines=lines, first_loss_pod=lines_pod)
    conds = (obj.get("status") or {}).get("conditions") or ()
    if kind == "Job" and state in ("Complete", "Failed"):
        done: dict[str, Any] = next((c for c in conds if c.get("type") == state and c.get("status") == "True"), {})
        at = (obj.get("status") or {}).get("completionTime") or done.get("lastTransitionTime")
        r["completion"] = {"state": state, "at": memory.iso(_t(at))}
    elif kind == "Deployment":
        avail = next((c for c in conds if c.get("type") == "Available" and c.get("status") == "True"), None)
        if avail is not None:
            r["completion"] = {"state": "serving (READY)", "at": memory.iso(_t(avail.get("lastTransitionTime")))}
    if not lines and r["completion"] is None:
        un.setdefault("first_loss_lines", "no loss line logged yet" if node_name else "the job has not started")
    # What the run did cost is counted from the meter's charges for these nodes (collect: _cost), beside its quote.
    ran_on = [(r["node"] or {}).get("name"), clean(node_name) if node_name else None]
    for rc in r["reclaims"]:
        ran_on += [rc["node"], (rc.get("replaced_by") or {}).get("node")]
    learned["_nodes"] = [n for i, n in enumerate(ran_on) if n and n not in ran_on[:i]]
    learned["_quote"] = (mine or {}).get("quote")
    started = _t(((pod or {}).get("status") or {}).get("startTime"))
    ended = _t((r["completion"] or {}).get("at"))
    if kind == "Job" and state == "Complete" and started and ended and ended > started and recipe is not None:
        learned["_ran"] = (recipe.name, str(uid or oname), (ended - started).total_seconds() / 60)
    return learned


def _gone(r: dict[str, Any], mem: dict[str, Any], cluster: str) -> None:
    """The job ncui remembers is gone from the cluster (stopped, or cleaned up): what was seen of it."""
    kind, name = mem["object"]
    _remembered(
        r, mem, "gone from the cluster (deleted)", [f"nothing to stop: {kind.lower()}/{name} is no longer on {cluster}"]
    )


def _remembered(r: dict[str, Any], mem: dict[str, Any], state: str, stop: list[str]) -> None:
    """The job as ncui remembers it (its memory.py record), in ``state``: when the cluster cannot say more."""
    kind, name = mem["object"]
    r["job"] = {
        "kind": kind,
        "name": clean(str(name)),
        "recipe": mem.get("recipe"),
        "title": mem.get("title"),
        "state": state,
        "applied_at": mem.get("applied_at"),
        "applied_by": "ncui" if mem.get("applied_by") == "ncui" else "elsewhere",
    }
    if mem.get("node_arrived_at"):
        r["node"] = {"name": mem.get("node"), "arrived_at": mem["node_arrived_at"], "source": mem.get("node_source")}
    r["first_loss_lines"] = list(mem.get("first_loss_lines") or ())
    r["stop"] = stop


# ---- VM, Slurm, research node ----------------------------------------------------------------------

STARTER = "nanogpt"  # the container nanogpt-node.sh runs (its log: remote.node.NODE_LOG)
NodeFor = Callable[[str, str, int, str, str], Awaitable["Runner | None"]]
"""``node(id, host, port, user, alias)``: a runner on a VM or research node (``alias``: its Host name in the box's
ssh_config, or ""), or None when this process cannot reach it."""


def _login(user: str, host: str, port: int) -> str:
    """``ssh [-p PORT] user@host``, as the nodes' screens show it."""
    return f"ssh{'' if port == 22 else f' -p {port}'} {clean(user)}@{clean(host)}"


def _loss_lines(text: str) -> list[str]:
    """The first ``memory.FIRST_LINES`` loss lines of a log's text, cleaned."""
    out: list[str] = []
    for line in text.splitlines():
        if parse_loss(line) is not None:
            out.append(clean(line))
            if len(out) >= memory.FIRST_LINES:
                break
    return out


def _unreached(e: Exception, where: str) -> str:
    """Why a node or login node could not be read, as the report says it."""
    from .remote.runner import HostKeyUnknown

    if isinstance(e, HostKeyUnknown):
        return (
            f"ncui has not connected to {where} yet: its host key is not in ncui's known_hosts, and the report "
            "never accepts one (connect once on Workloads, 4, and answer the host key question)"
        )
    return clean(str(e) or type(e).__name__)[:300]


async def _read_node(runner: Runner, container: str | None) -> dict[str, Any]:
    """What runs on a node, read over ssh: ``docker ps -a`` (the remembered container, else the starter's, else
    the first listed) and the head of its log (the starter's file, else ``docker logs``). ``{"container",
    "status" (docker's STATUS, or None once removed), "lines"}``; ``{}`` when nothing ever ran there."""
    from .remote.node import NODE_LOG, docker_containers, head_command

    ps = await runner.run("docker ps -a", timeout=30)
    table = docker_containers(ps.stdout) if ps.ok else {}
    name = container if container in table else STARTER if STARTER in table else next(iter(table), container)
    if name is None:
        return {}
    starter = name == STARTER
    res = await runner.run(
        head_command(LOG_LINES_READ, path=NODE_LOG) if starter else head_command(LOG_LINES_READ, container=name),
        timeout=60,
    )
    status = table[name][1] if name in table else None
    return {"container": name, "status": status, "lines": _loss_lines(res.stdout)}


def _container_job(container: str, mine: dict[str, Any] | None, node_id: str, state: str | None) -> dict[str, Any]:
    """The report's ``job`` for a container on a VM or research node (``mine``: what ncui remembers of it)."""
    return {
        "kind": "container",
        "name": clean(container),
        "recipe": (mine or {}).get("recipe") or ("nanogpt-node" if container == STARTER else None),
        "title": None,
        "state": state,
        "applied_at": (mine or {}).get("applied_at"),
        "applied_by": "ncui" if mine and mine.get("applied_by") == "ncui" else "elsewhere",
        "node": clean(node_id),
    }


async def _node_job(
    r: dict[str, Any],
    node: NodeFor | None,
    where: tuple[str, str, int, str, str],
    mine: dict[str, Any] | None,
    un: _Unknown,
) -> dict[str, Any]:
    """The job on a VM or research node (``where``: id, host, port, user, alias): read over ssh where this process
    reaches it, else what ncui remembers. Fills ``job``, ``stop``, ``first_loss_lines``, ``completion``; returns
    what to remember."""
    from .remote.node import stop_command
    from .remote.runner import RemoteError

    node_id, host, port, user, alias = where
    seen: dict[str, Any] = {}
    if node is not None:
        try:
            runner = await node(*where)
            seen = await _read_node(runner, (mine or {}).get("container")) if runner is not None else {}
            if runner is None:
                un.setdefault("first_loss_lines", f"{clean(node_id)} is not reachable from here")
        except (RemoteError, OSError, asyncio.TimeoutError) as e:
            un.setdefault("first_loss_lines", _unreached(e, f"{clean(node_id)} ({_login(user, host, port)})"))
    container = seen.get("container") or (mine or {}).get("container")
    if container is None:
        if "first_loss_lines" in un:
            un.setdefault("job", un["first_loss_lines"])
        elif node is not None:
            un.setdefault("job", f"nothing runs on {clean(node_id)} (docker ps -a lists no container)")
        else:
            un.setdefault("job", f"{clean(node_id)} was not read over ssh, and ncui started nothing there")
        return {}
    status = seen.get("status")
    state = status if status else ("removed from the node (docker rm)" if seen else None)
    r["job"] = _container_job(container, mine, node_id, state)
    login = _login(user, host, port)
    if seen and not status:
        r["stop"] = [f"nothing to stop: {clean(container)} is no longer on {clean(node_id)}"]
    elif status and status.startswith("Exited"):
        r["stop"] = [f"nothing to stop: {clean(container)} has ended; {login} {stop_command(container)} removes it"]
    else:
        r["stop"] = [f"{login} {stop_command(container)}"]
    if status and status.startswith("Exited"):
        r["completion"] = {"state": clean(status.split(")")[0] + ")").lower(), "at": None}
    r["first_loss_lines"] = list(seen.get("lines") or ())
    learned: dict[str, Any] = {"container": container, "node": clean(node_id)}
    if r["first_loss_lines"]:
        learned["first_loss_lines"] = r["first_loss_lines"]
    return learned


def _same_node(mem: dict[str, Any] | None, node_id: str) -> dict[str, Any] | None:
    """What ncui remembers, when it is about this node (a released node's record is another job's)."""
    return mem if mem is not None and mem.get("node") in (None, node_id) else None


async def _vm(
    r: dict[str, Any],
    nc: NCClient,
    ref: m.ClusterRef,
    mem: dict[str, Any] | None,
    node: NodeFor | None,
    un: _Unknown,
    auth: str,
) -> dict[str, Any]:
    cap = await _try(un, "node", nc.vm_capacity)
    if cap is None:
        return {}
    live = [a for a in cap.allocations if a.state == "active"]
    alloc = live[0] if live else next((a for a in cap.allocations if a.state not in ("released", "reclaimed")), None)
    r["gpu_class"] = (alloc.gpu_model if alloc else None) or cap.gpu_model
    if cap.max_gpus is None:  # (not sent: whether capacity stands, and what it bills, is unknown)
        un.setdefault("standing", cap.unknown("max_gpus"))
    if cap.max_gpus:
        r["standing"].append(
            {
                "what": "declared capacity",
                "cluster": ref.name,
                "gpus": cap.max_gpus,
                "price_per_gpu_hour_ucredits": cap.max_price_per_gpu_hour,
                "note": "nodes are granted and billed until it is released (a released node loses its disk)",
                "withdraw": _release_vm(nc.endpoints.api, cap, auth),
                "in_ncui": "Lease (5), R",
            }
        )
    await _ticks_rate(r, nc, r["gpu_class"], alloc.gpus if alloc else None, un)
    if alloc is None and mem is not None and mem.get("container") and mem.get("node"):
        # ncui's run was on a node since released (or reclaimed): the node and its disk are gone, and what ncui saw
        # of the run (its node's arrival, its first loss lines) is what is left of it
        node_id = str(mem["node"])
        was = next((a.state_said for a in cap.allocations if a.id == node_id), "released")
        r["job"] = _container_job(str(mem["container"]), mem, node_id, f"ended: its node was {clean(was)}")
        if mem.get("node_arrived_at"):
            r["node"] = {"name": clean(node_id), "arrived_at": mem["node_arrived_at"], "source": mem.get("node_source")}
        r["first_loss_lines"] = list(mem.get("first_loss_lines") or ())
        r["stop"] = [f"nothing to stop: {clean(node_id)} was {clean(was)}, its disk with it"]
        return {}
    if alloc is None:
        un.setdefault("node", "no node granted")
        un.setdefault("job", "no node granted: declare capacity on Lease (5, d), then run the job on the node")
        return {}
    mine = _same_node(mem, alloc.id)
    if alloc.granted_at is not None:
        r["node"] = {
            "name": clean(alloc.id),
            "arrived_at": memory.iso(alloc.granted_at),
            "source": "the allocation's granted_at",
        }
    else:
        un.setdefault("node", f"{clean(alloc.id)} is {clean(alloc.state_said)}")
    if not alloc.public_ip or alloc.state != "active":
        un.setdefault("job", f"{clean(alloc.id)} is {clean(alloc.state_said)}: nothing runs on it yet")
        return {}
    user = cap.environment.ssh_user
    if user is None:  # (not sent: ncui cannot sign in to read the job)
        un.setdefault("job", cap.environment.unknown("ssh_user"))
        return {}
    learned = await _node_job(r, node, (alloc.id, alloc.public_ip, alloc.ssh_port, user, ""), mine, un)
    if r["job"] is not None:
        r["job"]["gpus"] = alloc.gpus
    if r["node"] is not None:
        learned.update(node_arrived_at=r["node"]["arrived_at"], node_source=r["node"]["source"])
    return {**learned, "_new": mine is None} if learned else {}


async def _ticks_rate(r: dict[str, Any], nc: NCClient, gpu_model: str | None, gpus: int | None, un: _Unknown) -> None:
    if not gpu_model:
        return
    ticks = await _try(un, "rate.market", lambda: nc.ticks(gpu_model=gpu_model, limit=1))
    if ticks is not None and ticks.ticks and ticks.ticks[-1].price_per_gpu_hour is None:
        un.setdefault("rate.market", ticks.ticks[-1].unknown("price_per_gpu_hour"))
    elif ticks is not None and ticks.ticks:
        t = ticks.ticks[-1]
        price = t.price_per_gpu_hour or 0  # (read: the branch above)
        r["rate"]["market"] = {
            "price_per_gpu_hour_ucredits": t.price_per_gpu_hour,
            "gpus": gpus or None,
            "ucredits_per_hour": price * gpus if gpus else None,
            "as_of": memory.iso(t.at),
            "source": "GET /api/market/ticks (what winners are assessed now)",
        }


def _slurm_gpu(fields: dict[str, str]) -> str | None:
    """The GPU type a Slurm job asked for (``TresPerNode=gres:gpu:h100:8``, ``gres/gpu:h100=8``), when it names one."""
    tres = fields.get("TresPerNode") or fields.get("Gres") or ""
    for part in tres.split(","):
        words = part.replace("gres/", "gres:").replace("=", ":").split(":")
        if len(words) >= 4 and words[0] == "gres" and words[1] == "gpu":
            return clean(words[2])
    return None


async def _slurm(
    r: dict[str, Any], ref: m.ClusterRef, runner: Runner | None, mem: dict[str, Any] | None, un: _Unknown
) -> dict[str, Any]:
    from .remote import slurm
    from .remote.runner import RemoteError

    r["rate"]["market"] = None
    un.setdefault("rate.market", "a Slurm job is not priced by the market: the metered rate is the organization's")
    jobs: list[slurm.SlurmJob] | None = None
    if runner is not None:
        try:
            jobs = await slurm.jobs(runner, finished=True)  # (ended ones too, while Slurm lists them)
        except (RemoteError, OSError, asyncio.TimeoutError) as e:
            un.setdefault("job", _unreached(e, f"{clean(ref.name)}'s login node (ssh {clean(ref.name)})"))
    elif "job" not in un:
        un["job"] = f"the login node was not reached (ssh {ref.name})"
    want = (mem or {}).get("slurm_job")
    job = next((j for j in jobs or () if j.id == want), None) or next(
        (j for j in sorted(jobs or (), key=lambda j: int(j.id) if j.id.isdigit() else 0, reverse=True)), None
    )
    jid = job.id if job else want
    if jid is None:
        un.setdefault("job", f"no job in {ref.name}'s queue")
        return {}
    mine = mem if mem is not None and mem.get("slurm_job") == jid else None
    gone = jobs is not None and job is None  # read the queue, and the remembered job has left it
    r["job"] = {
        "kind": "slurm job",
        "name": clean(job.name if job else (mine or {}).get("name") or "nanogpt"),
        "recipe": (mine or {}).get("recipe"),
        "title": None,
        "state": job.state if job else ("no longer in the queue (ended)" if gone else None),
        "applied_at": (mine or {}).get("applied_at"),
        "applied_by": "ncui" if mine and mine.get("applied_by") == "ncui" else "elsewhere",
        "id": clean(str(jid)),
    }
    r["stop"] = (
        [f"nothing to stop: job {clean(str(jid))} has ended"]
        if gone or (job is not None and not job.active)
        else [f"ssh {ref.name} {slurm.cancel_command(jid)}"]
    )
    learned: dict[str, Any] = {"slurm_job": jid, "name": r["job"]["name"]}
    if job is not None and job.start is not None:
        at = memory.iso(datetime.fromtimestamp(job.start, timezone.utc))
        r["node"] = {"name": clean(job.nodelist) or None, "arrived_at": at, "source": "the Slurm job's start"}
        learned.update(node=r["node"]["name"], node_arrived_at=at, node_source=r["node"]["source"])
    elif mine and mine.get("node_arrived_at"):
        r["node"] = {"name": mine.get("node"), "arrived_at": mine["node_arrived_at"], "source": "the Slurm job's start"}
    else:
        un.setdefault("node", "the job has not started" if job else "the job is no longer in the queue")
    if job is not None and not job.active:
        at = memory.iso(datetime.fromtimestamp(job.end, timezone.utc)) if job.end else None
        r["completion"] = {"state": clean(job.state), "at": at}
        learned["completion"] = r["completion"]
    elif gone and mine and mine.get("completion"):
        r["completion"] = mine["completion"]
    if runner is not None and job is not None:
        fields = await _try(un, "gpu_class", lambda: slurm.show_job(runner, jid))
        r["gpu_class"] = _slurm_gpu(fields or {})
        if r["gpu_class"] is None and fields is not None:
            tres = clean(fields.get("TresPerNode") or fields.get("Gres") or "none")
            un.setdefault("gpu_class", f"Slurm names no GPU model for job {jid} (TresPerNode={tres})")
        if job.start is not None:
            path = await _try(un, "first_loss_lines", lambda: slurm.find_output(runner, job))
            if path:
                learned["log"] = path
    path = learned.get("log") or (mine or {}).get("log")
    if runner is not None and path and (job is None or job.start is not None):
        from .remote.node import head_command

        res = await _try(
            un, "first_loss_lines", lambda: runner.run(head_command(LOG_LINES_READ, path=path), timeout=60)
        )
        r["first_loss_lines"] = _loss_lines(res.stdout) if res is not None else []
        if r["first_loss_lines"]:
            learned["first_loss_lines"] = r["first_loss_lines"]
    if r["gpu_class"] is None and mine and mine.get("gpu_class"):
        r["gpu_class"] = mine["gpu_class"]
    elif r["gpu_class"]:
        learned["gpu_class"] = r["gpu_class"]
    elif job is None:
        un.setdefault("gpu_class", f"job {clean(str(jid))} has left the queue: Slurm no longer says what it ran on")
    return {**learned, "_new": mine is None}


async def _research(
    r: dict[str, Any], nc: NCClient, mem: dict[str, Any] | None, node: NodeFor | None, un: _Unknown
) -> dict[str, Any]:
    s = await _try(un, "node", nc.research_status)
    if s is None:
        return {}
    if s.state == "unavailable":
        un.setdefault("node", "the node's status lives in Marshall's workspace (public_research_status)")
        un.setdefault("job", "the node's status lives in Marshall's workspace (public_research_status)")
        return {}
    r["gpu_class"] = s.gpu_model
    if s.state != "assigned" or not s.public_ip:
        un.setdefault("node", f"the node is {clean(s.state)}")
        un.setdefault("job", f"the node is {clean(s.state)}: a job runs on it once it is assigned")
        un.setdefault("rate.market", f"the node is {clean(s.state)}: no lease price until one is assigned")
        return {}
    node_id = s.hostname or s.ssh_host or "research-node"
    mine = _same_node(mem, node_id)
    if s.assigned_at is not None:
        r["node"] = {"name": clean(node_id), "arrived_at": memory.iso(s.assigned_at), "source": "the node's assignment"}
    r["standing"].append(
        {
            "what": "research node lease",
            "price_per_gpu_hour_ucredits": s.price_per_gpu_hour,
            "gpus": s.gpus,
            "note": "the meter runs until the node is released; copy results off first (its disk goes with it)",
            "withdraw": "public_research_release in Marshall's workspace (a confirmation card): ncui never does",
            "in_ncui": None,
        }
    )
    if s.price_per_gpu_hour is not None:
        r["rate"]["market"] = {
            "price_per_gpu_hour_ucredits": s.price_per_gpu_hour,
            "gpus": s.gpus,
            "ucredits_per_hour": s.price_per_gpu_hour * s.gpus if s.gpus else None,
            "as_of": None,
            "source": "the lease's price",
        }
    where = (node_id, s.public_ip, s.ssh_port or 22, s.ssh_user or "", s.ssh_host or "")
    learned = await _node_job(r, node, where, mine, un)
    if r["job"] is not None:
        r["job"]["gpus"] = s.gpus
    if r["node"] is not None:
        learned.update(node_arrived_at=r["node"]["arrived_at"], node_source=r["node"]["source"])
    return {**learned, "_new": mine is None} if learned else {}


async def node_runner(
    host: str,
    port: int,
    user: str,
    *,
    alias: str = "",
    ssh_config: Path | None = None,
    known_hosts: Path | None = None,
    history: History | None = None,
) -> Runner:
    """A runner on a node for the report, which never asks: ncui's known_hosts (``known_hosts``: the demo's), and a
    host key it does not know is refused (``HostKeyUnknown``, said as unknown) unless ssh's own known_hosts pin it
    (the research node's workspace pin, found through ``alias`` in ``ssh_config``), as Workloads trusts it. Nothing
    connects yet. ``history``: where its first connection is recorded (the app's; None: nowhere)."""
    from .config import known_hosts_path
    from .remote.research import pinned_keys, ssh_setup
    from .remote.runner import SshRunner

    setup = await ssh_setup(alias if ssh_config is not None else host, user, port, ssh_config) if alias else None

    async def pinned(h: str, p: int, fingerprint: str) -> bool:
        return setup is not None and fingerprint in {
            k.get_fingerprint("sha256") for k in pinned_keys(setup.known_hosts, h, p)
        }

    keys = list(setup.identities) if setup is not None and setup.identities else None
    known = known_hosts or known_hosts_path()
    return SshRunner(host, port, user, known_hosts=known, confirm_host_key=pinned, client_keys=keys, history=history)


# ---- the report ------------------------------------------------------------------------------------


def empty(now: datetime) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "generated_at": memory.iso(now),
        "organization": None,
        "cluster": None,
        "job": None,
        "gpu_class": None,
        "node": None,
        "first_loss_lines": [],
        "completion": None,
        "reclaims": None,
        "rate": {"market": None, "metered": None, "charged": None, "class_price": None, "leading": None},
        "spend_so_far": None,
        "cost": None,
        "stop": [],
        "standing": [],
        "unknown": {},
    }


KubeFor = Callable[[str], Awaitable["KubeClient | None"]]
RunnerFor = Callable[[str], Awaitable["Runner | None"]]


async def collect(
    nc: NCClient,
    *,
    now: datetime,
    cluster: str | None = None,
    kube: KubeFor | None = None,
    slurm: RunnerFor | None = None,
    node: NodeFor | None = None,
    remember: bool = True,
    token_from: str | None = None,
    history: History | None = None,
) -> dict[str, Any]:
    """The report for ``cluster`` (default: the one ncui remembers as active, else the first Kubernetes one).
    ``kube(name)``: a signed-in client of that cluster (it may raise ``KubeError``, ``NotSignedIn`` with the link:
    the job is then unknown with that reason, and the service's facts stay); ``slurm(name)``: a runner on its
    login node; ``node(id, host, port, user, alias)``: a runner on a VM or research node (``NodeFor``). With
    ``remember``, what it learned of the job (its node's arrival, its first loss lines) is kept
    in ``memory`` so the report holds once the pod is gone and after a restart. ``token_from``: where the session's
    token came from (``TokenSource.origin``): the printed withdraw commands use that credential. ``history``: this
    session's (the app's), whose kubectl lines name the kubeconfig while ~/.kube/config has no such context."""
    r = empty(now)  # (generated_at: moved to the service's clock below, when it says it)
    un = _Unknown()
    who = await _try(un, "organization", nc.whoami)
    if who is None:
        r["unknown"] = dict(un)
        return r
    key = memory.key_for(nc.endpoints.api, who.org_id)
    remembered = memory.recall(key)
    org = {f: clean(v) if (v := getattr(who, f)) is not None else None for f in ("org_name", "org_kind")}
    r["organization"] = {"id": clean(who.org_id), "name": org["org_name"], "kind": org["org_kind"]}
    for f, label in (("org_name", "organization.name"), ("org_kind", "organization.kind")):
        if who.unknown(f):
            un.setdefault(label, who.unknown(f))
    names = [c.name for c in who.clusters]
    want = cluster or remembered.get("active_cluster")
    ref = next((c for c in who.clusters if c.name == want), None)
    if cluster is not None and ref is None:
        un["cluster"] = (
            f"{clean(cluster)} is not one of {clean(who.org_said)}'s clusters ({', '.join(names) or 'none'})"
        )
    elif ref is None:
        ref = next((c for c in who.clusters if c.kind == "kubernetes"), who.clusters[0] if who.clusters else None)
    mem = memory.job(key, ref.name) if ref is not None else memory.job(key, "")
    balance, txs = await asyncio.gather(_try(un, "rate.metered", nc.balance), _try(un, "spend_so_far", nc.transactions))
    learned: dict[str, Any] = {}
    if ref is not None:
        r["cluster"] = {"name": clean(ref.name), "kind": ref.kind}
        if ref.kind is None:
            un.setdefault("cluster.kind", ref.unknown("kind"))
        if ref.kind == "kubernetes":
            name = ref.name
            client = await _try(un, "job", lambda: kube(name)) if kube is not None else None
            learned = await _kubernetes(r, nc, client, ref, mem, un, auth_header(token_from), history)
        elif ref.kind == "vm":
            learned = await _vm(r, nc, ref, mem, node, un, auth_header(token_from))
        elif ref.kind == "slurm":
            name = ref.name
            runner = await _try(un, "job", lambda: slurm(name)) if slurm is not None else None
            learned = await _slurm(r, ref, runner, mem, un)
    elif who.org_kind == "public_research":
        learned = await _research(r, nc, mem, node, un)
    else:
        un.setdefault("cluster", f"{clean(who.org_said)} has no cluster")
    if ref is None or ref.kind != "kubernetes":  # read over ssh where it could be; else what ncui's follower saw
        kept = list((mem or {}).get("first_loss_lines") or ()) if learned and not learned.get("_new") else []
        if len(kept) > len(r["first_loss_lines"]):
            r["first_loss_lines"] = kept
        if r["first_loss_lines"]:
            un.pop("first_loss_lines", None)
        elif r["completion"] is None and r["job"] is not None:
            un.setdefault("first_loss_lines", "no loss line logged yet")
    # The service's own clock (the Date of its answers: NCClient.clock), so the metered rate's lag is measured on it
    # (a simulated service keeps its own time); else ``now``.
    said = nc.clock.now()
    if said is not None:
        now = said
        r["generated_at"] = memory.iso(now)
    if balance is not None and balance.burn_ucredits_hr is None:
        un.setdefault("rate.metered", balance.unknown("burn_ucredits_hr") or "the burn rate was not sent")
    elif balance is not None:
        lag = (now - balance.assessed_at).total_seconds() if balance.assessed_at else None
        gpus = (r["job"] or {}).get("gpus") or (r["rate"]["market"] or {}).get("gpus")
        r["rate"]["metered"] = {
            "ucredits_per_hour": balance.burn_ucredits_hr,
            "per_gpu_hour_ucredits": balance.burn_ucredits_hr // gpus if gpus else None,
            "gpus": gpus or None,
            "assessed_at": memory.iso(balance.assessed_at),
            "lag_seconds": int(lag) if lag is not None else None,
            "source": "GET /api/billing/balance (organization-wide, assessed about every ten minutes)",
        }
    since = _t((r["job"] or {}).get("applied_at")) or _t((r["node"] or {}).get("arrived_at"))
    if txs is not None and since is not None:
        spent, some = charged_since(txs.transactions, since)
        if why := unread_charge(txs.transactions, since):  # (a charge without its amount: a floor, and why)
            un.setdefault("spend_so_far", why)
        r["spend_so_far"] = {"ucredits": spent, "since": memory.iso(since), "at_least": some or bool(why)}
        priced = [t for t in txs.transactions if t.kind == "charge" and t.price_per_gpu_hour]
        last = max((t for t in priced if t.at >= since), key=lambda t: t.at, default=None)
        if last is not None:  # what the meter charged per GPU hour last (a job that ended keeps its figure)
            r["rate"]["charged"] = {
                "price_per_gpu_hour_ucredits": last.price_per_gpu_hour,
                "at": memory.iso(last.at),
                "source": "the newest charge since the job was applied (GET /api/billing/transactions)",
            }
    elif txs is not None:
        un.setdefault("spend_so_far", "no job to count from")
    nodes, quoted, ran = learned.pop("_nodes", None), learned.pop("_quote", None), learned.pop("_ran", None)
    if nodes is not None:
        _cost(r, txs.transactions if txs is not None else None, nodes, quoted, un)
    r["rate"]["leading"] = _leading(r)
    r["unknown"] = dict(un)
    if remember and ran is not None:  # how long it took: the next quote's duration when the catalog has none
        memory.remember_duration(key, *ran)
    if remember and learned:
        fresh = learned.pop("_new", False) or (
            mem is not None and "uid" in learned and mem.get("uid") not in (None, learned["uid"])
        )
        where = ref.name if ref is not None else ""  # (a research node's: "", as the app keeps it)
        memory.remember_job(key, where, {k: v for k, v in learned.items() if v is not None}, new=fresh or not mem)
    return r


def _cost(
    r: dict[str, Any],
    txs: list[m.Transaction] | None,
    nodes: list[str],
    quoted: dict[str, Any] | None,
    un: _Unknown,
) -> None:
    """What the run did cost (``r["cost"]``): the meter's charges naming the cluster and a node the run ran on
    (its first, and any that replaced a reclaimed one), from its start (the later of its apply and its first node's
    arrival) to its end and its node's release (``quote.spent``); charges that name no node, counted apart; the
    quote it was given beside it (None when ncui gave none: applied by hand)."""
    from datetime import timedelta

    from . import quote as Q

    if txs is None:
        un.setdefault("cost", un.get("spend_so_far", "the transactions were not read"))
        return
    starts = [t for t in (_t((r["job"] or {}).get("applied_at")), _t((r["node"] or {}).get("arrived_at"))) if t]
    if not starts or not nodes:
        un.setdefault("cost", "the run has not started on a node")
        r["cost"] = {"ucredits": 0, "quote": quoted, "nodes": [], "charges": 0, "untied_ucredits": 0,
                     "from": None, "to": None, "at_least": False, "by_node": {}, "source": None}  # fmt: skip
        return
    start = max(starts)
    end = _t((r["completion"] or {}).get("at")) if r["job"] and r["job"].get("kind") == "Job" else None
    lag = timedelta(minutes=METER_MINUTES + Q.RELEASE_MAX_MINUTES)
    got = Q.spent(txs, (r["cluster"] or {}).get("name"), nodes, start, end, lag)
    _, partial = charged_since(txs, start)
    if why := unread_charge(txs, start):  # a charge without its amount: the rest is a floor, said with why
        un.setdefault("cost", why)
    r["cost"] = {
        **got,
        "nodes": nodes,
        "from": memory.iso(start),
        "to": memory.iso(end + lag) if end is not None else None,
        "at_least": partial or bool(why),
        "quote": quoted,
        "source": "the meter's charges naming the run's nodes (GET /api/billing/transactions)",
    }


METER_MINUTES = 10  # the meter assesses about every ten minutes (shared/CONTRACT.md, Billing)


def cost_lines(r: dict[str, Any]) -> list[str]:
    """What the run cost beside the quote it was given, as Report and ``ncui report`` say it."""
    from .quote import RELEASE_MAX_MINUTES

    c = r.get("cost")
    if not c:
        return [unknown_text(r.get("unknown") or {}, "cost", "spend_so_far")]
    out: list[str] = []
    if c.get("from"):
        ran = ", ".join(c["nodes"])
        to = "until now (it runs)" if c.get("to") is None else f"its end + {METER_MINUTES + RELEASE_MAX_MINUTES} min"
        spent = f"{'at least ' if c.get('at_least') else ''}{fmt_usd(c['ucredits'])}"
        out.append(f"{spent} on {ran} ({c['charges']} charges, {_when(c['from'])} to {to})")
    else:
        out.append(unknown_text(r.get("unknown") or {}, "cost"))
    if c.get("untied_ucredits"):
        out.append(f"apart: {fmt_usd(c['untied_ucredits'])} charged then that names no node (not counted in)")
    q = c.get("quote")
    if q and q.get("kind") == "run":
        out.append(
            f"quoted: about {fmt_usd(q.get('expected'))}, range {fmt_usd(q.get('low'))}–{fmt_usd(q.get('high'))}"
        )
    elif q and q.get("kind") == "idle":
        out.append("quoted: nothing new (idle nodes already held hosted it)")
    elif q and q.get("per_hour") is not None:
        most = f", at most {fmt_usd(q['per_hour_max'])}/h" if q.get("per_hour_max") is not None else ""
        out.append(f"quoted: {fmt_usd(q['per_hour'])}/h{most} (no length known)")
    elif c.get("from"):
        out.append("quoted: none (not applied through ncui)")
    return out


def _leading(r: dict[str, Any]) -> str | None:
    """Which rate the report leads with (the guide's Ceiling step): on a Kubernetes market cluster the market's live
    rate, on a VM cluster what winners are assessed (the ticks) and a research node its lease's price: ``market``;
    where no market prices the nodes (a fixed cluster, Slurm) the human's own charges, else the metered rate."""
    rate, c = r["rate"], r.get("cluster") or {}
    priced = c.get("kind") == "vm" or (c.get("kind") == "kubernetes" and c.get("market") is not False)
    mk = rate["market"]
    if (priced or c == {}) and mk is not None:
        if mk.get("price_per_gpu_hour_ucredits") is None and rate.get("charged") is not None:
            return "charged"  # no market node held now (the job ended, or waits again): what it ran at
        return "market"
    return next((k for k in ("charged", "metered") if rate.get(k) is not None), None)


# ---- drawing: markdown and the screen -----------------------------------------------------------


def _when(iso_text: str | None) -> str:
    t = _t(iso_text)
    return t.strftime("%Y-%m-%d %H:%M UTC") if t else "—"


def _lag(seconds: int | None) -> str:
    if seconds is None:
        return "lag unknown"
    return f"about {max(0, seconds) // 60} min behind" if seconds >= 60 else "just assessed"


def rate_lines(r: dict[str, Any]) -> list[str]:
    """The assessed rates, one line each saying what it is: first the ``running rate``, the one the guide reports for
    the cluster's kind (``rate.leading``), then the others."""
    un = r.get("unknown") or {}
    rate, c = r["rate"], r.get("cluster") or {}
    kind, lead = c.get("kind"), rate.get("leading")
    fixed = kind == "kubernetes" and c.get("market") is False
    said: dict[str, tuple[str, str]] = {}  # rate → (what it is, its figure)
    mk, mt, ch = rate["market"], rate["metered"], rate.get("charged")
    if fixed:
        held = f": its {mk['gpus']} GPUs are not priced by the market" if mk and mk.get("gpus") else ""
        said["market"] = ("market rate", f"none — {c.get('name')} is a fixed cluster{held}")
    elif mk:
        held = f" on {mk['gpus']} GPUs ({fmt_usd(mk['ucredits_per_hour'])}/h)" if mk.get("gpus") else ""
        asof = f", as of {_when(mk['as_of'])}" if mk.get("as_of") else ""
        price = (
            fmt_price(mk["price_per_gpu_hour_ucredits"])
            if mk["price_per_gpu_hour_ucredits"] is not None
            else "none: no market node held now"
        )
        what = {
            "kubernetes": "the market's live rate, as the guide reports it on Kubernetes",
            "vm": "what winners are assessed now, as the guide reports it on a VM cluster",
        }.get(str(kind), "the lease's price")
        said["market"] = (what if lead == "market" else "market rate", f"{price}{held}{asof}")
    else:
        said["market"] = ("market rate" if c else "lease price", unknown_text(un, "rate.market"))
    if ch:
        said["charged"] = (
            "charged, your newest charge",
            f"{fmt_price(ch['price_per_gpu_hour_ucredits'])}, {_when(ch['at'])}",
        )
    if mt:
        hourly = f"{fmt_usd(mt['ucredits_per_hour'])}/h"
        per = (
            f"{fmt_price(mt['per_gpu_hour_ucredits'])} over {mt['gpus']} GPUs ({hourly})"
            if mt.get("per_gpu_hour_ucredits") is not None
            else hourly
        )
        said["metered"] = (  # (a node up for part of the ten minutes lowers the average)
            "metered, the organization's ten-minute average",
            f"{per}, assessed {_when(mt['assessed_at'])}, {_lag(mt['lag_seconds'])}",
        )
    else:
        said["metered"] = ("metered, the organization's ten-minute average", unknown_text(un, "rate.metered"))
    cp = rate.get("class_price")
    if cp:
        said["class_price"] = (
            f"market price of {cp['gpu_model']}",
            f"{fmt_price(cp['price_per_gpu_hour_ucredits'])} now (an apply's balance check uses it; not this "
            "cluster's rate)",
        )
    out: list[str] = []
    if lead in said:
        what, figure = said.pop(lead)
        if lead == "charged" and not fixed and kind in ("kubernetes", "vm"):
            what = "your newest charge: the market holds no node for the cluster now"
        elif lead == "charged":
            what = "your newest charge: no market prices this cluster's nodes"
        elif lead == "metered" and not c:
            what = "the organization's meter: no node leased now"
        elif lead == "metered":
            what = "the organization's meter: no market prices this cluster's nodes"
        out.append(f"running rate ({what}): {figure}")
    return out + [f"{what}: {figure}" for what, figure in said.values()]


def unknown_text(un: dict[str, str], *fields: str) -> str:
    why = next((un[f] for f in fields if f in un), "not read")
    return f"unknown ({why})"


def rows(r: dict[str, Any], history: History | None = None) -> list[tuple[str, list[str]]]:
    """The report as (label, lines) rows, in the guide's order: what markdown and the screen draw. Its Stop
    commands as ``history`` (the app's) writes kubectl lines: ``KUBECONFIG=<file> kubectl …`` where needed."""
    un = r.get("unknown") or {}
    unknown = partial(unknown_text, un)
    out: list[tuple[str, list[str]]] = []
    org, c, job = r.get("organization") or {}, r.get("cluster"), r.get("job")
    if c:
        kind = (
            f"{c['kind']}, market"
            if c.get("market")
            else f"{c['kind']}, fixed"
            if c.get("market") is False
            else c["kind"]
        )
        where = f"{c['name']} ({kind})"
    elif org.get("kind") == "public_research" and "cluster" not in un:
        where = "none: a public-research organization has no cluster (one whole node from Marshall's workspace)"
    else:
        where = unknown("cluster")
    out.append(("Cluster", [f"{where} · {org.get('name', '?')}"]))
    if job:
        what = f"{job['kind']} {job['name']}"
        if job.get("id"):
            what += f" (id {job['id']})"
        if job.get("title"):
            what += f" — {job['title']}"
        bits = [what + (f": {job['state']}" if job.get("state") else "")]
        if job.get("applied_at"):
            by = "by ncui" if job.get("applied_by") == "ncui" else "not by ncui (kubectl or another tool)"
            bits.append(f"applied {_when(job['applied_at'])}, {by}")
        if job.get("pod"):
            gpus = f", {job['gpus']} GPUs" if job.get("gpus") else ""
            bits.append(f"pod {job['pod']}: {job.get('pod_status') or '?'}{gpus}")
        out.append(("Job", bits))
    else:
        out.append(("Job", [unknown("job")]))
    out.append(("GPU class", [r["gpu_class"] or unknown("gpu_class", "node")]))
    n = r.get("node")
    out.append(
        (
            "Node arrived",
            [f"{_when(n['arrived_at'])} — {n['name'] or '?'} ({n['source']})"] if n else [unknown("node", "job")],
        )
    )
    reclaims: list[str] = []
    for rc in r.get("reclaims") or ():
        reclaims.append(f"{rc['pod']} on {rc['node'] or '?'} at {_when(rc['at'])}: {rc['reason']}")
        rep = rc.get("replaced_by")
        if rep is None:
            ended = r.get("completion") is not None or not (job or {}).get("state")
            reclaims.append("not replaced" if ended else "no replacement pod yet")
        elif rep.get("started_at"):
            reclaims.append(f"replaced by {rep['pod']}, started on {rep['node'] or '?'} at {_when(rep['started_at'])}")
        else:
            reclaims.append(f"replaced by {rep['pod']}: it waits for a node")
    if reclaims:
        out.append(("Reclaimed", reclaims))
    if r.get("first_loss_lines"):
        out.append(("First loss lines", list(r["first_loss_lines"])))
        whose, now_pod = (job or {}).get("first_loss_pod"), (job or {}).get("pod")
        if whose and now_pod and whose != now_pod:
            out.append(("Logged by", [f"{whose}, the pod before {now_pod} (which has logged no loss line yet)"]))
    if r.get("completion"):
        comp = r["completion"]
        out.append(("Completion", [f"{comp['state']}" + (f" at {_when(comp['at'])}" if comp.get("at") else "")]))
    if not r.get("first_loss_lines") and not r.get("completion"):
        out.append(("First loss lines", [unknown("first_loss_lines", "job")]))
    out.append(("Assessed rate", rate_lines(r)))
    s = r.get("spend_so_far")
    if s:
        spent = f"{'at least ' if s['at_least'] else ''}{fmt_usd(s['ucredits'])}"
        out.append(("Spend so far", [f"{spent} charged since {_when(s['since'])} (the meter's charges)"]))
    else:
        out.append(("Spend so far", [unknown("spend_so_far")]))
    if r.get("cost") is not None or "cost" in un:
        out.append(("Cost", cost_lines(r)))
    stop = [history.with_kubeconfigs(x) for x in r["stop"]] if history is not None else list(r["stop"])
    out.append(("Stop it", stop or [unknown("job")]))
    stands: list[str] = []
    for st in r.get("standing") or ():
        price = (
            fmt_price(st.get("price_per_gpu_hour_ucredits"))
            if st.get("price_per_gpu_hour_ucredits") is not None
            else ""
        )
        gpus = f"{st['gpus']} GPUs at up to " if st.get("gpus") else ""
        stands.append(f"{st['what']}: {gpus}{price} — {st['note']}")
        stands.append(f"withdraw: {st['withdraw']}")
        if st.get("in_ncui"):
            stands.append(f"in ncui: {st['in_ncui']}")
    out.append(("Still standing", stands or ["nothing: no limit price and no capacity stand"]))
    if "standing" in un:
        out[-1][1].append(unknown("standing"))
    return out


def markdown(r: dict[str, Any], history: History | None = None) -> str:
    """The report for a chat or an issue: a heading, one bullet per fact, commands and log lines as code (its
    Stop commands as ``rows`` gives them)."""
    code_rows = {"First loss lines", "Stop it"}
    out = [f"### Report back — {_when(r.get('generated_at'))}", ""]
    for label, lines in rows(r, history):
        if label in code_rows and not lines[0].startswith("unknown ("):
            out.append(f"- **{label}:**")
            out.append("  ```")
            out += [f"  {x}" for x in lines]
            out.append("  ```")
        elif label == "Still standing" and r.get("standing"):
            out.append(f"- **{label}:**")
            for x in lines:
                if x.startswith("withdraw: "):
                    out.append(f"  - withdraw: `{x[len('withdraw: ') :]}`")
                else:
                    out.append(f"  - {x}")
        elif len(lines) == 1:
            out.append(f"- **{label}:** {lines[0]}")
        else:
            out.append(f"- **{label}:**")
            out += [f"  - {x}" for x in lines]
    return "\n".join(out) + "\n"


def to_json(r: dict[str, Any]) -> str:
    return json.dumps(r, indent=2, sort_keys=False) + "\n"


__all__ = [
    "SCHEMA",
    "NodeFor",
    "node_runner",
    "collect",
    "rows",
    "markdown",
    "to_json",
    "pick_job",
    "first_loss_lines",
    "empty",
]
