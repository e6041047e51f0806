"""Recipes: which ones a cluster can run, what exactly will be applied, and the money check. No Textual.

The vendor rule (the guide): where a manifest has a vendor variant, try ``<stem>-<vendor>.yaml`` first; a 404
means the default ``<stem>.yaml``; a serve recipe with neither is not offered on this cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config import ACCESS_ORIGIN
from .formatting import COVER_HOURS, plan_sentence, topup_words
from .kube.kinds import RECIPE_LABEL, spec_gpus
from .money import CENT, cost_ucredits, fmt_price, fmt_usd

if TYPE_CHECKING:
    from .api import models as m
    from .api.client import NCClient

VENDOR = "<vendor>"
DEFAULT_RECIPE = "nanogpt"
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


# ---- which recipes this cluster can run ----------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    runnable: bool
    reasons: tuple[str, ...] = ()  # why not, or what will be skipped
    skipped_steps: tuple[str, ...] = ()


def fit(recipe: m.Recipe, cluster: m.K8sCluster) -> Fit:
    """Can ``cluster`` (a K8sCluster) run ``recipe``? Reasons in plain words."""
    needs = set(recipe.needs)
    reasons: list[str] = []
    if "shared_volume" in needs and not cluster.shared_volume:
        reasons.append("needs a shared volume at /mnt/shared; this cluster has none")
    if "cpu_worker" in needs and not cluster.cpu_worker:
        reasons.append("needs a CPU worker; this cluster has none")
    if cluster.gpu_vendor is None:  # (not sent: which files to apply is never guessed)
        reasons.append(f"its GPU vendor is unknown ({cluster.unknown('gpu_vendor')}): ncui cannot pick its files")
    elif recipe.category == "serve" and cluster.gpu_vendor not in recipe.vendor_variants:
        reasons.append(f"not offered on {cluster.gpu_vendor} GPUs (no {cluster.gpu_vendor} variant)")
    skipped: list[str] = []
    for s in recipe.steps:
        missing = [
            n
            for n in s.needs
            if (n == "shared_volume" and not cluster.shared_volume) or (n == "cpu_worker" and not cluster.cpu_worker)
        ]
        if missing and not reasons:
            skipped.append(s.stem)
    if skipped:
        reasons.append(
            "without a shared volume the weights are not staged first: the engine downloads them itself (slower)"
        )
    return Fit(not [r for r in reasons if not r.startswith("without")], tuple(reasons), tuple(skipped))


def for_kind(catalog: Iterable[m.Recipe], kind: str) -> list[m.Recipe]:
    """The catalog's recipes for a cluster kind, Train first."""
    rs = [r for r in catalog if r.cluster_kind == kind]
    return sorted(
        rs,
        key=lambda r: (
            r.name != DEFAULT_RECIPE,
            ["train", "serve", "post-train", "something-else"].index(r.category)
            if r.category in ("train", "serve", "post-train", "something-else")
            else 9,
        ),
    )


# The guide's words for a recipe in a hand-off: "run its Serve recipe" means Kimi K3.
CATEGORY_PICK = {"train": DEFAULT_RECIPE, "serve": "kimi-k3", "post-train": "finance-analyst"}


def find(catalog: Iterable[m.Recipe], text: str, kind: str | None = None) -> m.Recipe | None:
    """The recipe a hand-off names: its catalog name, its title, one of its files (a stem, a vendor variant,
    a file name or its URL: ``inkling-serve``, ``nanogpt-job-nvidia.yaml``), or a category (train, serve,
    post-train). Among several, the one for cluster ``kind``. None when nothing matches."""
    rs = list(catalog)
    want = text.strip().lower().rsplit("/", 1)[-1].removesuffix(".yaml").removesuffix(".yml").removesuffix(".sh")
    want = CATEGORY_PICK.get(want.replace(" ", "-").replace("posttrain", "post-train"), want)

    def stems(r: m.Recipe) -> set[str]:
        out = {s.stem.lower() for s in r.steps}
        out |= {f"{s}-{v}" for s in list(out) for v in r.vendor_variants}
        if r.default_file:
            out.add(r.default_file.lower().rsplit(".", 1)[0])
        return out

    for match in (
        lambda r: r.name.lower() == want,
        lambda r: r.title.lower() == text.strip().lower(),
        lambda r: want in stems(r),
    ):
        found = [r for r in rs if match(r)]
        if found:
            return next((r for r in found if r.cluster_kind == kind), found[0])
    return None


# ---- what will be applied -----------------------------------------------------------------------


@dataclass(frozen=True)
class PlanStep:
    stem: str
    title: str
    file: str  # the file used
    url: str
    note: str  # the vendor rule's note, e.g. "nanogpt-job-amd.yaml: 404, using nanogpt-job.yaml"
    text: str
    docs: tuple[dict[str, Any], ...]
    optional: bool = False


@dataclass(frozen=True)
class Plan:
    recipe: str
    title: str
    steps: tuple[PlanStep, ...]
    skipped: tuple[str, ...] = ()
    gpus: int = 0  # the most GPUs any step asks for at once (the money check's GPUs)
    stop: tuple[str, ...] = ()
    summary: str = ""  # what the apply confirmation states besides the objects (Something else: image, command)
    # Objects deleted after the yes and before the apply, as (plural, name, why): a finished Job applied again
    # would be left "unchanged" (tune again deletes the old finance-analyst-tune first, as the guide does).
    replace: tuple[tuple[str, str, str], ...] = ()

    def all_docs(self, include_optional: bool = False) -> list[dict[str, Any]]:
        return [d for s in self.steps if include_optional or not s.optional for d in s.docs]


class NotOffered(Exception):
    pass


async def resolve(nc: NCClient, recipe: m.Recipe, cluster: m.K8sCluster) -> Plan:
    """Fetch every file the recipe applies on ``cluster``, with the vendor rule, in order."""
    from .api.errors import NotFound

    f = fit(recipe, cluster)
    if not f.runnable:
        raise NotOffered(f"{recipe.title}: " + "; ".join(f.reasons))
    steps: list[PlanStep] = []
    for s in recipe.steps:
        if s.stem in f.skipped_steps:
            continue
        try:
            steps.append(await fetch_step(nc, s, cluster))
        except NotFound as e:
            raise NotOffered(f"{recipe.title} is not offered on this cluster: {e}") from None
    gpus = max((gpus_of(st.docs, cluster.gpu_vendor) for st in steps), default=0)
    stop = stop_commands(recipe, cluster, nc.endpoints.catalog_url)
    return Plan(recipe.name, recipe.title, tuple(steps), f.skipped_steps, gpus, stop)


async def fetch_step(nc: NCClient, s: m.RecipeStep, cluster: m.K8sCluster) -> PlanStep:
    """One step's file, with the vendor rule when its name has ``<vendor>`` (NotFound when not offered)."""
    if VENDOR in s.file:
        rf = await nc.recipe_file(s.stem, cluster.gpu_vendor)
    else:
        from .api.client import RecipeFile

        text = await nc.catalog_file(s.file)
        rf = RecipeFile(requested=s.file, used=s.file, url=nc.catalog_file_url(s.file), text=text)
    docs = parse_manifests(rf.text, rf.used)
    return PlanStep(s.stem, s.title or s.stem, rf.used, rf.url, rf.note, rf.text, tuple(docs), s.optional)


def stop_commands(recipe: m.Recipe, cluster: m.K8sCluster, catalog_url: str | None) -> tuple[str, ...]:
    """The catalog's stop commands for this recipe on ``cluster`` (its name as the context, its vendor's file);
    with ``catalog_url`` (``Endpoints.catalog_url``), a file named at the catalog's address is named where ncui
    fetched it (the box's catalog in the demo: the file that was applied)."""
    home = ACCESS_ORIGIN + "/first-job/"
    return tuple(
        c.replace("<cluster>", cluster.name)
        .replace(VENDOR, cluster.gpu_vendor or VENDOR)  # (not sent: the placeholder stays, never a guessed vendor)
        .replace(home, catalog_url or home)
        for c in recipe.stop
    )


def recipe_of(catalog: Iterable[m.Recipe], obj: dict[str, Any]) -> m.Recipe | None:
    """The catalog recipe a cluster object belongs to: by its recipe label, else by the catalog's object list
    (kind and name), for a job applied by hand from an older copy of the file; None for the human's own."""
    meta = obj.get("metadata") or {}
    rs = [r for r in catalog if r.cluster_kind == "kubernetes"]
    label = (meta.get("labels") or {}).get(RECIPE_LABEL)
    by_label = next((r for r in rs if label and r.name == label), None)
    if by_label is not None:
        return by_label
    kind, name = obj.get("kind"), meta.get("name")
    return next((r for r in rs if any(o.kind == kind and o.name == name for o in r.objects)), None)


def parse_manifests(text: str, name: str = "manifest") -> list[dict[str, Any]]:
    import yaml  # (here: ncui imports this module before its first frame, which needs no yaml)

    try:
        docs = [d for d in yaml.safe_load_all(text) if d]
    except yaml.YAMLError as e:
        raise ValueError(f"{name} is not valid YAML: {str(e).splitlines()[0]}") from None
    for d in docs:
        if not isinstance(d, dict) or not d.get("kind") or not (d.get("metadata") or {}).get("name"):
            raise ValueError(f"{name} has a document without kind or metadata.name")
    return docs


def gpus_of(docs: Iterable[dict[str, Any]], vendor: str | None) -> int:
    """GPUs the documents ask for at once: each pod template's ``kinds.spec_gpus`` × pods (Job parallelism,
    Deployment replicas).

    A Deployment held at 0 replicas by a launcher (finance-analyst) counts as one replica: it takes the
    node the tune frees, funded by the same limit price.
    """
    total = 0
    for d in docs:
        kind = d.get("kind")
        spec: dict[str, Any] = d.get("spec") or {}
        tmpl: dict[str, Any]
        if kind == "Job":
            pods, tmpl = int(spec.get("parallelism") or 1), spec.get("template") or {}
        elif kind in ("Deployment", "StatefulSet"):
            replicas = spec.get("replicas")
            pods, tmpl = max(1, int(replicas if replicas is not None else 1)), spec.get("template") or {}
        elif kind == "Pod":
            pods, tmpl = 1, {"spec": spec}
        else:
            continue
        total += pods * spec_gpus(tmpl.get("spec") or {})
    return total


# ---- Something else ------------------------------------------------------------------------------

MAX_NODES = 64  # nodes one Job may ask for: the contract states no cluster size, so a sane maximum; more is a typo


def parse_count(text: str, what: str) -> int:
    """A whole number a person typed (nodes, GPUs per pod): ASCII digits only, nothing read another way
    ('٣', '1_0', '+2', '8e22' are refused, not reinterpreted). The bounds are ``custom_job``'s."""
    t = str(text).strip()
    if not re.fullmatch(r"[0-9]+", t):
        shown = repr(t if len(t) <= 20 else t[:20] + "…")
        raise ValueError(f"{what}: {shown} is not a whole number; type digits 0-9, like 1")
    if len(t.lstrip("0")) > 6:  # no arithmetic on a paste of 10 kB of digits; custom_job says the bound
        return 10**6
    return int(t)


def _control(text: str) -> bool:
    """A character a terminal or sh would not show as itself (newlines, escapes); a tab is allowed."""
    return any(ord(ch) < 32 and ch != "\t" or 0x7F <= ord(ch) < 0xA0 or ch in "\u2028\u2029" for ch in text)


@dataclass
class CustomJob:
    image: str
    command: str
    nodes: int = 1
    name: str = "my-job"
    gpus_per_pod: int | None = None  # None: whole nodes
    reclaim_tolerant: bool = True
    errors: list[str] = field(default_factory=list)


def custom_job(job: CustomJob, cluster: m.K8sCluster) -> dict[str, Any]:
    """The guide's Something-else skeleton for ``cluster``; ValueError with every reason when invalid."""
    errors: list[str] = []
    image, command, name = job.image.strip(), job.command.strip(), job.name.strip()
    if not image:
        errors.append("the image is empty")
    elif any(ch.isspace() or _control(ch) for ch in image):
        errors.append("the image name cannot contain spaces or control characters")
    if not command:
        errors.append("the command is empty")
    elif _control(command):
        errors.append("the command has a line break or control character: type it as one line (sh -c runs it)")
    if not NAME_RE.match(name or ""):
        errors.append("the job name must be lowercase letters, digits and '-' (at most 63)")
    if type(job.nodes) is not int or job.nodes < 1 or job.nodes > MAX_NODES:
        errors.append(f"nodes must be a whole number from 1 to {MAX_NODES}")
    gpn = cluster.gpus_per_node
    gpus = job.gpus_per_pod if job.gpus_per_pod is not None else gpn
    if type(gpus) is not int:
        errors.append("GPUs per pod must be a whole number")
    elif gpus < 1:
        errors.append("a GPU job asks for at least one GPU")
    elif gpus > gpn:  # a pod runs on one node: more never schedules (and would be bid for in vain)
        errors.append(
            f"{gpus} GPUs per pod is more than a node holds: a pod runs on one node of {gpn} GPUs "
            f"(for more, ask for more nodes)"
        )
    elif gpus % gpn and not cluster.reservation_packing:
        errors.append(
            f"{gpus} GPUs is a partial node: every pod must ask for a multiple of {gpn} GPUs "
            f"(only a cluster with reservation packing takes fewer)"
        )
    if errors:
        raise ValueError("; ".join(errors))
    res = f"{cluster.gpu_vendor}.com/gpu"
    spec: dict[str, Any] = {
        "backoffLimit": 0,
        "template": {
            "metadata": {
                "labels": {"app.kubernetes.io/name": name, "first-job.nationalcompute.com/recipe": "something-else"}
            },
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 60,
                "tolerations": [{"key": res, "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [
                    {
                        "name": "main",
                        "image": image,
                        "command": ["sh", "-c", command],
                        "resources": {"limits": {res: str(gpus)}},
                        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
                    }
                ],
                "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
            },
        },
    }
    if job.nodes > 1:
        spec["parallelism"] = spec["completions"] = job.nodes
    if job.reclaim_tolerant:
        spec["podReplacementPolicy"] = "Failed"
        spec["podFailurePolicy"] = {
            "rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [143]}},
            ]
        }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"first-job.nationalcompute.com/recipe": "something-else"}},
        "spec": spec,
    }


def custom_plan(job: CustomJob, cluster: m.K8sCluster) -> Plan:
    import yaml

    doc = custom_job(job, cluster)
    text = yaml.safe_dump(doc, sort_keys=False)
    c = doc["spec"]["template"]["spec"]["containers"][0]
    nodes, gpus = doc["spec"].get("parallelism", 1), c["resources"]["limits"][f"{cluster.gpu_vendor}.com/gpu"]
    summary = (
        f"Image: {c['image']}\nCommand (sh -c, exactly): {c['command'][2]}\n"
        f"{nodes} pod{'s' if nodes > 1 else ''} × {gpus} GPUs"
    )
    return Plan(
        "something-else",
        "Something else",
        (PlanStep("my-job", "Your container as one Job", f"{doc['metadata']['name']}.yaml", "", "", text, (doc,)),),
        gpus=gpus_of([doc], cluster.gpu_vendor),
        stop=(f"kubectl --context {cluster.name} delete job {doc['metadata']['name']}",),
        summary=summary,
    )


# ---- the money check -----------------------------------------------------------------------------


@dataclass(frozen=True)
class MoneyCheck:
    ok: bool  # the balance covers two hours at the ceiling
    sentence: str
    topup: int  # µcredits short (0 when covered)
    cost_per_hour: int  # at the ceiling


def money_check(gpus: int, ceiling: int, balance: int, purchases: bool) -> MoneyCheck:
    sentence, short = plan_sentence(gpus, ceiling, balance, purchases)
    return MoneyCheck(short == 0, sentence, short, cost_ucredits(ceiling, gpus, 1))


_REFUSED = re.compile(
    r"the balance \(\$([0-9,]+\.[0-9]{2})\) does not cover two hours of this job at .*?= \$([0-9,]+\.[0-9]{2})"
)


def admission_topup(refusal: str, purchases: bool) -> str | None:
    """The cluster's admission refused a job the balance does not cover for two hours: the exact top-up, in
    ``money_check``'s words ("You have $60.74; two hours need $64.00: top up $3.26 on the console's Billing
    page."), or None for any other refusal."""
    found = _REFUSED.search(refusal)
    if found is None:
        return None
    have, need = (int(round(float(x.replace(",", "")) * 100)) * CENT for x in found.groups())
    if need <= have:
        return None
    return f"You have {fmt_usd(have)}; two hours need {fmt_usd(need)}: {topup_words(need - have, purchases)}."


@dataclass(frozen=True)
class CeilingVerdict:
    ok: bool  # may be set (after the human's yes)
    level: str  # "refuse" | "warn" | "ok"
    message: str
    nodes_won: int = 0


def judge_ceiling(ceiling: int, ladder: m.Ladder, nodes_needed: int) -> CeilingVerdict:
    """Compare a ceiling with the market's own numbers before anything is bid."""
    floor = ladder.floor_price_per_gpu_hour or 0
    if ceiling <= 0:
        return CeilingVerdict(False, "refuse", "A limit price must be more than $0.")
    if ceiling < floor:
        return CeilingVerdict(
            False,
            "refuse",
            f"{fmt_price(ceiling)} is under the market's floor of "
            f"{fmt_price(floor)}: it would never clear (bid-too-low).",
        )
    won = 0
    for r in ladder.rungs:
        if r.price_per_gpu_hour is not None and ceiling >= r.price_per_gpu_hour:  # (questions ask on whole ladders)
            won = max(won, r.nodes)
    if won < nodes_needed:
        need = next((r.price_per_gpu_hour for r in ladder.rungs if r.nodes >= nodes_needed), None)
        more = f"; {fmt_price(need)} wins {nodes_needed} now" if need else ""
        return CeilingVerdict(
            True,
            "warn",
            f"{fmt_price(ceiling)} would not win {'a node' if nodes_needed == 1 else f'{nodes_needed} nodes'} "
            f"right now{more}. The job waits until the price falls.",
            won,
        )
    return CeilingVerdict(
        True, "ok", f"{fmt_price(ceiling)} clears now: it wins up to {won} node{'s' if won > 1 else ''}.", won
    )


def bid_confirmation(
    cluster: str, ceiling: int, gpus: int, assessed: int | None, verdict: CeilingVerdict | None = None
) -> str:
    """The question before ``PUT /api/k8s/bid``: the figure in it is exactly the one sent (``fmt_price`` never
    rounds a price), with the ladder's verdict for that figure (``judge_ceiling``)."""
    per_hour = cost_ucredits(ceiling, gpus, 1)
    now = f" (winners are assessed {fmt_price(assessed)} now)" if assessed else ""
    said = f"{'! ' if verdict.level == 'warn' else '✓ '}{verdict.message}\n\n" if verdict and verdict.ok else ""
    return (
        f"Set a limit price of {fmt_price(ceiling)} on {cluster}?\n\n"
        + said
        + f"For {gpus} GPUs that is at most {fmt_usd(per_hour, exact=True)} per hour; you pay the assessed price, "
        f"never more than your limit{now}.\n\n"
        f"The limit stands until you withdraw it (Lease screen, w): it keeps pulling nodes for any GPU job "
        f"you apply later."
    )


__all__ = [
    "fit",
    "for_kind",
    "resolve",
    "Plan",
    "PlanStep",
    "NotOffered",
    "custom_job",
    "custom_plan",
    "CustomJob",
    "parse_count",
    "MAX_NODES",
    "money_check",
    "admission_topup",
    "judge_ceiling",
    "bid_confirmation",
    "gpus_of",
    "parse_manifests",
    "COVER_HOURS",
]
