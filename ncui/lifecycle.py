"""A recipe's life on a Kubernetes cluster after its apply, as the guide tells it. No Textual.

- Which objects are a recipe's: every object the catalog's files create carries the label
  ``first-job.nationalcompute.com/recipe: <recipe>`` (pods too, through their templates), and the catalog
  lists each recipe's ``objects``; Stop deletes all of them, as ``kubectl delete -f <file>`` and
  ``kubectl delete job …`` would, and says what stays on the shared volume.
- One serving recipe at a time (the guide): which serve recipes have a Deployment on the cluster now.
- Kimi K3's optional load test: running (then ncui sends none of the human's own requests), and its summary.
- The runs that hold GPU nodes (what a spending limit stops at 100% when the human chose it): the Jobs and
  Deployments whose pods sit on GPU nodes, each by its recipe when it has one (stopped whole, as Stop does).
- Post-train: a tune that graded its model defective (the serve leg keeps waiting; delete the Job and tune
  again), and a serve pod that started before the new tune finished (it serves the previous model).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .kube.kinds import KINDS, RECIPE_LABEL
from .kube.status import deployment_ready, human_duration, is_gpu_node, job_status, owned_by, parse_time

# (recipes.py and kube/chat.py are imported where they are used, not here: ncui imports this module before its
# first frame, and neither is needed for it)

if TYPE_CHECKING:
    from .api import models as m
    from .kube.client import KubeClient
    from .store import Store

NAME_LABEL = "app.kubernetes.io/name"

# The serve recipes (one at a time) and the service each answers at (the Deployments behind each service:
# ncui/kube/chat.py's ENDPOINTS).
SERVING = {"kimi-k3": "infera", "inkling": "inkling", "finance-analyst": "finance-analyst"}
# The kinds a recipe creates, in the order Stop deletes them: what runs first (a launcher would scale up what
# goes next), then what only routes or grants.
STOP_KINDS = ("deployments", "jobs", "services", "rolebindings", "roles", "serviceaccounts", "configmaps")
# What a recipe leaves behind on purpose: the Stop question says it stays.
STAYS = {
    "nanogpt": "Nothing of the run stays on the cluster: its log goes with its pod.",
    "kimi-k3": "The staged weights stay on the shared volume (/mnt/shared/kimi-k3/weights) for the next start.",
    "inkling": "The staged checkpoint and the engine's compile caches stay on the shared volume "
    "(/mnt/shared/inkling) for the next start.",
    "finance-analyst": "The tuned model and the document folder stay on the shared volume "
    "(/mnt/shared/finance-analyst/model and …/docs), with the last tune's log (last-tune.log).",
    "something-else": "Whatever your container wrote to /mnt/shared stays there.",
}

LOADTEST_JOB = "kimi-k3-loadtest"
LOADTEST_MINUTES = 17  # the guide's "about 17 minutes"
TUNE_JOB = "finance-analyst-tune"
TUNE_SERVE = "finance-analyst"  # the Deployment that serves the tuned model
TUNE_LOG = "/mnt/shared/finance-analyst/last-tune.log"
# The tune writes the merged model, then its .ready marker, then exits: a serve pod that started within this
# much of the Job's completion loaded the new model (the launcher scales up as soon as .ready is there).
LANDED_MARGIN = timedelta(seconds=60)


# ---- whose object is it --------------------------------------------------------------------------


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def recipe_of(obj: Mapping[str, Any], catalog: Iterable[m.Recipe] = ()) -> str | None:
    """The name of the recipe that created ``obj``: the catalog's (``recipes.recipe_of``: its recipe label, else the
    recipe that lists its kind and name), else its label alone (the catalog not read yet)."""
    from .recipes import recipe_of as recipe_of_catalog

    r = recipe_of_catalog(catalog, dict(obj))
    if r is not None:
        return r.name
    label = (_meta(obj).get("labels") or {}).get(RECIPE_LABEL)
    return str(label) if label else None


def pod_recipe(
    pod: Mapping[str, Any],
    jobs: Mapping[str, dict[str, Any]],
    deployments: Mapping[str, dict[str, Any]],
    catalog: Iterable[m.Recipe] = (),
) -> str | None:
    """The recipe a pod runs for: its own label (from the template), else its Job's or Deployment's."""
    catalog = list(catalog)
    own = (_meta(pod).get("labels") or {}).get(RECIPE_LABEL)
    if own:
        return str(own)
    for ref in _meta(pod).get("ownerReferences") or []:
        if ref.get("kind") == "Job" and ref.get("name") in jobs:
            return recipe_of(jobs[ref["name"]], catalog)
        if ref.get("kind") == "ReplicaSet":
            dep = next((d for n, d in deployments.items() if str(ref.get("name", "")).startswith(n + "-")), None)
            if dep is not None:
                return recipe_of(dep, catalog)
    return None


@dataclass(frozen=True)
class Obj:
    plural: str  # jobs, deployments, services, …
    name: str
    state: str = ""  # Complete, READY 1/1, … ('' for what only routes or grants)

    @property
    def ref(self) -> str:
        """kubectl's TYPE/NAME: ``deployment/infera-router``, ``job/nanogpt``, ``service/infera``."""
        return f"{KINDS[self.plural].kind.lower()}/{self.name}"


def stop_list(objs: Iterable[Obj]) -> str:
    """``job/nanogpt (Running), service/infera``: what Stop deletes, as its question lists it."""
    return ", ".join(o.ref + (f" ({o.state})" if o.state else "") for o in objs)


def stays(recipe: str) -> str:
    """What stays when ``recipe`` is stopped (the shared volume's contents, staged weights, a tuned model)."""
    return STAYS.get(recipe, "What it wrote to the shared volume stays there.")


def _plural(kind: str) -> str | None:
    return next((p for p, k in KINDS.items() if k.kind == kind), None)


def _state(plural: str, obj: dict[str, Any]) -> str:
    if plural == "jobs":
        return job_status(obj)
    if plural == "deployments":
        return f"READY {deployment_ready(obj)}"
    return ""


async def recipe_objects(kube: KubeClient, recipe: m.Recipe, namespace: str = "default") -> list[Obj]:
    """Everything ``recipe`` created that is on the cluster now, in Stop's order: the objects with its label,
    and those the catalog lists for it by kind and name (unless another recipe's label claims them)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for plural in STOP_KINDS:
        items, _ = await kube.list(plural, namespace, label_selector=f"{RECIPE_LABEL}={recipe.name}")
        for o in items:
            found[(plural, str(_meta(o).get("name")))] = o
    for ro in recipe.objects:
        kind = _plural(ro.kind)
        if kind is None or (kind, ro.name) in found:  # (SlurmJob, DockerContainer: not Kubernetes kinds)
            continue
        got = await kube.get(kind, ro.name, namespace)
        if got is not None and (_meta(got).get("labels") or {}).get(RECIPE_LABEL) in (None, recipe.name):
            found[(kind, ro.name)] = got
    order = {p: i for i, p in enumerate(STOP_KINDS)}
    return [
        Obj(p, n, _state(p, o)) for (p, n), o in sorted(found.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0]))
    ]


def serve_ready(deployments: Mapping[str, dict[str, Any]], service: str) -> bool:
    """Every Deployment behind ``service`` is READY (1/1 or more)."""
    from .kube.chat import ENDPOINTS, endpoint_ready

    return endpoint_ready(ENDPOINTS[service], deployments)


def serving_now(deployments: Mapping[str, dict[str, Any]], catalog: Iterable[m.Recipe] = ()) -> list[str]:
    """The serve recipes that have a Deployment on the cluster now (loading, ready, or held at 0 by a launcher)."""
    catalog = list(catalog)
    return sorted({r for d in deployments.values() if (r := recipe_of(d, catalog)) in SERVING})


# ---- Kimi K3's load test -------------------------------------------------------------------------


def load_test_running(jobs: Mapping[str, dict[str, Any]]) -> dict[str, Any] | None:
    job = jobs.get(LOADTEST_JOB)
    return job if job is not None and job_status(job) not in ("Complete", "Failed") else None


def load_test_guard(store: Store, now: datetime | None = None) -> str | None:
    """Why ncui must not send the human's own requests now (Kimi K3's load test runs: the guide says send none
    during the run), or None. The chat and the prompt call this before every request."""
    job = load_test_running(store.value("k8s_jobs") or {})
    if job is None:
        return None
    since = (job.get("status") or {}).get("startTime")
    if since and now:
        ran = f"running for {human_duration((now - parse_time(since)).total_seconds())} of about {LOADTEST_MINUTES} min"
    else:  # (a line that stays on screen: when it started, not a count that would go stale)
        ran = f"running{f' since {parse_time(since):%H:%M}' if since else ''} (about {LOADTEST_MINUTES} minutes)"
    return (
        f"Kimi K3's load test is {ran}: ncui sends none of your own requests until it ends, as the guide asks (they "
        "would mix into its numbers). Its summary shows when it ends."
    )


def load_test_summary(lines: Iterable[str]) -> str | None:
    """The benchmark's result block from the load test's log (the banner to the closing rule), or None."""
    out: list[str] = []
    for line in lines:
        if "Serving Benchmark Result" in line:
            out = [line]
        elif out:
            out.append(line)
            if line.startswith("=====") and "Result" not in line:
                break
    return "\n".join(out) if out else None


def _figures(summary: str) -> dict[str, str]:
    out = {}
    for line in summary.splitlines():
        key, sep, value = line.partition(":")
        if sep and value.strip():
            out[key.strip()] = value.strip()
    return out


def summary_text(summary: str) -> str:
    """The result block in a few lines a person reads at 80×24 (the whole block when its shape is unknown)."""
    f = _figures(summary)
    rows = [
        ("Requests", [("Successful requests", ""), ("Benchmark duration (s)", " s")]),
        (
            "Throughput",
            [
                ("Request throughput (req/s)", " req/s"),
                ("Output token throughput (tok/s)", " tok/s out"),
                ("Total Token throughput (tok/s)", " tok/s in all"),
            ],
        ),
        ("Time to first token", [(f"{q} TTFT (ms)", f" ms {q.lower()}") for q in ("Mean", "Median", "P90", "P99")]),
        ("Time per output token", [(f"{q} TPOT (ms)", f" ms {q.lower()}") for q in ("Mean", "Median", "P90", "P99")]),
    ]
    lines = [
        f"{head}: " + " · ".join(f[k] + unit for k, unit in keys if k in f)
        for head, keys in rows
        if any(k in f for k, _ in keys)
    ]
    return "\n".join(lines) if len(lines) == len(rows) else summary


def summary_figures(summary: str) -> str:
    """One line from a result block: requests, output tokens a second, mean time to first token."""
    want = {"Successful requests": "requests", "Output token throughput": "tok/s out", "Mean TTFT": "ms mean TTFT"}
    parts = []
    for line in summary.splitlines():
        key, _, value = line.partition(":")
        for k, unit in want.items():
            if key.startswith(k) and value.strip():
                parts.append(f"{value.strip()} {unit}")
    return ", ".join(parts)


# ---- Post-train: the tune's verdict and a re-tune ------------------------------------------------


def tune_failed(jobs: Mapping[str, dict[str, Any]]) -> bool:
    job = jobs.get(TUNE_JOB)
    return job is not None and job_status(job) == "Failed"


def stale_serve(
    pods: Mapping[str, dict[str, Any]], jobs: Mapping[str, dict[str, Any]]
) -> tuple[str, datetime, datetime] | None:
    """A serve pod that started before the tune that finished last (it keeps the weights it loaded at startup,
    so it serves the PREVIOUS model): (its name, when it started, when the tune finished), or None."""
    job = jobs.get(TUNE_JOB)
    done = ((job or {}).get("status") or {}).get("completionTime")
    if job is None or job_status(job) != "Complete" or not done:
        return None
    landed = parse_time(done)
    for name, p in sorted(pods.items()):
        meta, status = _meta(p), p.get("status") or {}
        serves = (meta.get("labels") or {}).get(NAME_LABEL) == TUNE_SERVE and any(
            r.get("kind") == "ReplicaSet" for r in meta.get("ownerReferences") or []
        )
        started = status.get("startTime") or meta.get("creationTimestamp")
        if serves and started and not meta.get("deletionTimestamp") and status.get("phase") in ("Pending", "Running"):
            at = parse_time(started)
            if at < landed - LANDED_MARGIN:
                return name, at, landed
    return None


# ---- what Workloads says about them ----------------------------------------------------------------


def advice(store: Store) -> list[tuple[str, str]]:
    """Lines for the Workloads screen, as (level, text) with level ``bad``, ``warn`` or ``info``: the guide's way
    on from where the recipes stand, with the key that takes it."""
    jobs, pods = store.value("k8s_jobs") or {}, store.value("k8s_pods") or {}
    deps = store.value("k8s_deployments") or {}
    out: list[tuple[str, str]] = []
    if tune_failed(jobs):
        out.append(
            (
                "bad",
                "The tune graded its model DEFECTIVE and did not bless it (its log ends with the grade and the memos): "
                "the serve leg keeps waiting at 0 replicas, holding no GPU node. The way on: delete the Job and "
                "tune again; T does both (asked first), and a new attempt gets a new outcome.",
            )
        )
    stale = stale_serve(pods, jobs)
    if stale is not None:
        name, started, landed = stale
        out.append(
            (
                "warn",
                f"deploy/{TUNE_SERVE} serves the PREVIOUS model: its pod started {started:%H:%M}, before the new tune "
                f"finished at {landed:%H:%M}. R restarts it on the new one (kubectl rollout restart "
                f"deploy/{TUNE_SERVE}; asked first).",
            )
        )
    why = load_test_guard(store)  # (no "running for": a line that stays on screen says when it started)
    if why:
        out.append(("info", why))
    elif serve_ready(deps, "infera"):
        done = store.meta.get("loadtest_summary")
        out.append(
            (
                "info",
                "Kimi K3 is up (READY 1/1): m sends a request · "
                + (
                    f"load test done: {summary_figures(done)} (L runs it again)"
                    if done
                    else f"L runs the optional load test (about {LOADTEST_MINUTES} minutes, from inside the cluster)"
                ),
            )
        )
    else:  # the other endpoints: that m talks to them (the footer's "m Chat" alone says little)
        from .kube.chat import ENDPOINTS

        for service, ep in ENDPOINTS.items():
            if service != "infera" and serve_ready(deps, service):
                out.append(("info", f"{ep.recipe} is up (READY 1/1): m talks to it (svc/{service})."))
    return out


# ---- the runs that hold GPU nodes ----------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """A Job or Deployment with a pod on a GPU node: its recipe's (stopped whole) or the human's own."""

    recipe: str | None
    plural: str  # jobs | deployments
    name: str


def runs_on_gpu_nodes(
    pods: Iterable[dict[str, Any]],
    jobs: Iterable[dict[str, Any]],
    deployments: Iterable[dict[str, Any]],
    nodes: Iterable[dict[str, Any]],
    catalog: Iterable[m.Recipe] = (),
) -> list[Run]:
    """The runs whose pods (not finished) sit on a GPU node, one per recipe (or per object of the human's own),
    by name."""
    catalog = list(catalog)
    gpu = {_meta(n).get("name") for n in nodes if is_gpu_node(n)}
    by_job = {str(_meta(j).get("name")): j for j in jobs}
    by_dep = {str(_meta(d).get("name")): d for d in deployments}
    found: dict[tuple[str, str], Run] = {}
    for p in pods:
        if (p.get("spec") or {}).get("nodeName") not in gpu or (p.get("status") or {}).get("phase") in (
            "Succeeded",
            "Failed",
        ):
            continue
        owner: tuple[str, str] | None = None
        for ref in _meta(p).get("ownerReferences") or []:
            if ref.get("kind") == "Job" and ref.get("name") in by_job:
                owner = ("jobs", str(ref["name"]))
            elif ref.get("kind") == "ReplicaSet":
                dep = next((n for n in by_dep if str(ref.get("name", "")).startswith(n + "-")), None)
                owner = ("deployments", dep) if dep else owner
        recipe = pod_recipe(p, by_job, by_dep, catalog)
        if recipe is not None:
            found.setdefault(("recipe", recipe), Run(recipe, *(owner or ("", ""))))
        elif owner is not None:
            found.setdefault(owner, Run(None, *owner))
    return sorted(found.values(), key=lambda r: (r.recipe or "~", r.plural, r.name))


# ---- an apply whose Job is already on the cluster --------------------------------------------------


def _condition_time(job: Mapping[str, Any], ctype: str) -> str | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype and c.get("status") == "True":
            return c.get("lastTransitionTime") or None
    return None


def job_moment(job: Mapping[str, Any]) -> tuple[str, datetime | None]:
    """What a Job is now (kubectl's STATUS) and since when, by the service's clock: when it completed or failed,
    else when it started (or was created, for one still waiting for its node)."""
    status, st = job_status(dict(job)), job.get("status") or {}
    if status == "Complete":
        at = st.get("completionTime") or _condition_time(job, "Complete")
    elif status == "Failed":
        at = _condition_time(job, "Failed")
    elif status == "Suspended":
        at = _condition_time(job, "Suspended") or _meta(job).get("creationTimestamp")
    else:
        at = st.get("startTime") or _meta(job).get("creationTimestamp")
    return status, parse_time(at) if at else None


def job_ended(job: Mapping[str, Any]) -> bool:
    return job_status(dict(job)) in ("Complete", "Failed")


def job_standing(name: str, job: Mapping[str, Any], cluster: str, now: datetime) -> str:
    """One sentence for a Job that an apply finds already on the cluster: its state and when it got there, with
    how long ago by the service's clock (as Workloads' AGE counts)."""
    status, at = job_moment(job)
    ago = f" ({human_duration(max(0.0, (now - at).total_seconds()))} ago by the service's clock)" if at else ""
    when = f" at {at:%H:%M}{ago}" if at else " (when is not known)"
    since = f" since {at:%H:%M}{ago}" if at else ""
    if status == "Complete":
        return f"job/{name} is on {cluster}: Completed{when}."
    if status == "Failed":
        return f"job/{name} is on {cluster}: Failed{when}."
    if status == "Suspended":
        return f"job/{name} is on {cluster}, waiting for its GPU node (suspended{since})."
    if status == "Terminating":
        return f"job/{name} is on {cluster} and is being deleted."
    return f"job/{name} is on {cluster} and runs now ({status}{since})."


def kept_log_path(cluster: str, name: str, job: Mapping[str, Any]) -> Path:
    """Where the log of Job ``name`` is kept before ncui deletes it to run it again:
    ``$XDG_STATE_HOME/ncui/logs/<cluster>-<job>-<created>.log`` (the Job's own creation time: one file per run)."""
    from .config import state_dir

    created = _meta(job).get("creationTimestamp")
    stamp = f"{parse_time(created):%Y%m%d-%H%M%S}" if created else str(_meta(job).get("uid") or "run")[:8]
    return state_dir() / "logs" / f"{cluster}-{name}-{stamp}.log"


def job_pods(pods: Mapping[str, dict[str, Any]], name: str) -> list[str]:
    """The pods of Job ``name``, oldest first."""
    mine = [p for p in pods.values() if owned_by(p, "Job", name)]
    mine.sort(key=lambda p: (_meta(p).get("creationTimestamp") or "", _meta(p).get("name") or ""))
    return [str(_meta(p)["name"]) for p in mine]


async def keep_job_log(kube: KubeClient, name: str, pods: Mapping[str, dict[str, Any]], path: Path) -> int:
    """Write the log of every pod of Job ``name`` to ``path`` (mode 600; each pod under a ``==> pod/NAME <==``
    line when there are several), cleaned of escape sequences as the log pane shows it. The number of pods whose
    log was written (0: the Job has no pod, nothing written). Raises KubeError or OSError."""
    import os

    from .kube.logs import default_container
    from .textsafe import clean

    names = job_pods(pods, name)
    if not names:
        return 0
    lines: list[str] = []
    for pod in names:
        if len(names) > 1:
            lines.append(f"==> pod/{pod} <==")
        async for batch in kube.pod_log_batches(pod, default_container(pods[pod]), follow=False, timestamps=False):
            lines.extend(clean(x) for x in batch)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("".join(x + "\n" for x in lines))
    return len(names)
