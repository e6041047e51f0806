"""The controllers that move a cluster's workloads: the Job controller (pods until done, the backoff limit, the
pod failure policy, suspended while it waits for a GPU node) and the Deployment / ReplicaSet controllers
(rollouts, Recreate and RollingUpdate, scaling). Each pass reads the store and the runs and writes status."""

from __future__ import annotations

import copy
import hashlib
import json
import math
from datetime import datetime

from ..world import Node
from .events import ref
from .kubelet import Kubelet
from .objects import iso, owned_by, owner_ref
from .pods import Pods
from .scheduler import Scheduler
from .state import NAME_CHARS, ClusterState, JobCtl, PodRun


class JobController:
    """The Jobs of the cluster whose state is ``s``: ``pods`` makes their pods, ``scheduler`` finds them a node,
    ``kubelet`` stops them."""

    def __init__(self, s: ClusterState, pods: Pods, scheduler: Scheduler, kubelet: Kubelet) -> None:
        self.s, self.pods, self.scheduler, self.kubelet = s, pods, scheduler, kubelet

    def sync(self, job: dict, t: datetime) -> None:
        """Count the Job's finished pods into its status, decide it (Complete, Failed), or give it its next pod."""
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        ctl = self.s.jobs.get((ns, name))
        if ctl is None or ctl.done:
            return
        spec = job["spec"]
        runs = [r for r in self.s.runs.values() if r.owner_kind == "Job" and r.owner == name and r.ns == ns]
        before = json.dumps(job.get("status", {}), sort_keys=True) + json.dumps(spec.get("suspend"))
        status = copy.deepcopy(job.get("status") or {})
        conds = list(status.get("conditions") or [])
        finished_at: datetime | None = None
        verdict: tuple[str, str, str] | None = None
        completions = int(spec.get("completions") or 1)
        succeeded = sum(1 for r in runs if r.ended is not None and r.exit_code == 0)
        for r in sorted(runs, key=lambda r: (r.ended or t, r.name)):
            if r.ended is None or r.accounted:
                continue
            r.accounted = True
            if r.exit_code == 0:
                if succeeded >= completions:
                    finished_at = r.ended
                    verdict = ("Complete", "CompletionsReached", "Reached expected number of succeeded pods")
                continue
            action = _failure_action(spec, r)
            if action == "Ignore":
                continue
            if action == "FailJob":
                finished_at = r.ended
                verdict = (
                    "Failed",
                    "PodFailurePolicy",
                    f"Container main for pod {ns}/{r.name} failed with exit code {r.exit_code} matching FailJob rule",
                )
                continue
            ctl.failed += 1
            if ctl.failed > int(spec.get("backoffLimit", 6)):
                finished_at = r.ended
                verdict = ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
        active = [r for r in runs if r.active]
        status["active"] = len(active)
        status["ready"] = sum(1 for r in active if r.state == "ready" or (r.state == "running" and not has_probe(r)))
        status["succeeded"] = succeeded
        status["failed"] = ctl.failed
        status["terminating"] = 0
        status["uncountedTerminatedPods"] = {}
        if verdict is not None:
            ctl.done = True
            self.s.claims.pop((ns, name), None)
            for r in active:
                self.kubelet.kill(r, finished_at or t)
            kind, reason, msg = verdict
            target = "SuccessCriteriaMet" if kind == "Complete" else "FailureTarget"
            conds = [c for c in conds if c["type"] not in (target, kind)]
            for ctype in (target, kind):
                conds.append(
                    {
                        "type": ctype,
                        "status": "True",
                        "reason": reason,
                        "message": msg,
                        "lastProbeTime": iso(finished_at or t),
                        "lastTransitionTime": iso(finished_at or t),
                    }
                )
            if kind == "Complete":
                status["completionTime"] = iso(finished_at or t)
                self.s.events.emit(finished_at or t, ref(job), "Completed", "Job completed", component="job-controller")
            else:
                self.s.events.emit(finished_at or t, ref(job), reason, msg, warning=True, component="job-controller")
            status["active"] = 0
            status["ready"] = 0
        elif spec.get("suspend") and not ctl.suspended_by_us:
            pass  # the user suspended it
        elif ctl.gpus <= 0 and (want := min(int(spec.get("parallelism", 1)), completions - succeeded)) > len(active):
            for _ in range(want - len(active)):  # pods without GPUs run in parallel on the CPU worker
                self.pods.new_pod(job, "Job", t, None)
        elif not active and (ns, name) not in self.s.claims:
            self.needs_pod(job, ctl, t, conds)
        status["conditions"] = conds
        if not conds:
            status.pop("conditions")
        if "startTime" not in status and not spec.get("suspend") and (active or runs):
            status["startTime"] = iso(min(r.created for r in runs))
        job["status"] = status
        after = json.dumps(status, sort_keys=True) + json.dumps(spec.get("suspend"))
        if after != before:
            self.s.store.put("jobs", job)
            self.s.dirty = True

    def needs_pod(self, job: dict, ctl: JobCtl, t: datetime, conds: list) -> None:
        """Its next pod on a free node now, else the Job waits for one (suspended on its first attempt)."""
        ns, name = ctl.ns, ctl.name
        if ctl.gpus <= 0:
            self.pods.new_pod(job, "Job", t, None)
            return
        node = self.scheduler.free_node(ctl.gpus, t)
        if node is not None:
            self.pods.new_pod(job, "Job", t, node)
            return
        self.s.claims[(ns, name)] = t
        if ctl.attempts == 0 and not job["spec"].get("suspend"):
            job["spec"]["suspend"] = True
            ctl.suspended_by_us = True
            self.s.events.emit(t, ref(job), "Suspended", "Job suspended", component="job-controller")
            conds.append(
                {
                    "type": "Suspended",
                    "status": "True",
                    "reason": "JobSuspended",
                    "message": "Job suspended: waiting for a GPU node "
                    + ("from the market" if self.s.spec.market else "to free up"),
                    "lastProbeTime": iso(t),
                    "lastTransitionTime": iso(t),
                }
            )
        self.s.dirty = True

    def resume(self, key: tuple[str, str], node: Node, t: datetime) -> None:
        """The scheduler found the waiting Job ``key`` a node: resume it (if it was suspended for one), make its pod."""
        self.s.claims.pop(key, None)
        job = self.s.store.peek("jobs", key[0], key[1])
        ctl = self.s.jobs.get(key)
        if job is None or ctl is None:
            return
        if ctl.suspended_by_us:
            ctl.suspended_by_us = False
            job["spec"]["suspend"] = False
            st = job.setdefault("status", {})
            st["conditions"] = [c for c in st.get("conditions", []) if c["type"] != "Suspended"] + [
                {
                    "type": "Suspended",
                    "status": "False",
                    "reason": "JobResumed",
                    "message": f"Job resumed: its node {node.name} was granted",
                    "lastProbeTime": iso(t),
                    "lastTransitionTime": iso(t),
                }
            ]
            st["startTime"] = iso(t)
            self.s.events.emit(t, ref(job), "Resumed", "Job resumed", component="job-controller")
        self.pods.new_pod(job, "Job", t, node)
        self.s.store.put("jobs", job)


class DeploymentController:
    """The Deployments and ReplicaSets of the cluster whose state is ``s``: ``pods`` makes their pods, ``kubelet``
    stops them."""

    def __init__(self, s: ClusterState, pods: Pods, kubelet: Kubelet) -> None:
        self.s, self.pods, self.kubelet = s, pods, kubelet

    def sync_deployment(self, d: dict, t: datetime) -> None:
        """The Deployment's ReplicaSet for its template, its rollout, its status and conditions."""
        ns, name = d["metadata"]["namespace"], d["metadata"]["name"]
        spec = d["spec"]
        tmpl = spec["template"]
        h = hashlib.sha256(json.dumps(tmpl, sort_keys=True).encode()).hexdigest()
        phash = "".join(NAME_CHARS[int(h[i : i + 2], 16) % len(NAME_CHARS)] for i in range(0, 20, 2))
        rs_name = f"{name}-{phash}"
        replicas = int(spec.get("replicas", 1))
        cur = self.s.store.peek("replicasets", ns, rs_name)
        olds = [
            rs
            for rs in self.s.store.iter("replicasets", ns)
            if owned_by(rs, "Deployment", name) and rs["metadata"]["name"] != rs_name
        ]
        if cur is None:
            labels = dict(tmpl.get("metadata", {}).get("labels") or {})
            labels["pod-template-hash"] = phash
            rtmpl = copy.deepcopy(tmpl)
            rtmpl.setdefault("metadata", {})["labels"] = labels
            sel = copy.deepcopy(spec["selector"])
            sel.setdefault("matchLabels", {})["pod-template-hash"] = phash
            revs = [
                int(r["metadata"].get("annotations", {}).get("deployment.kubernetes.io/revision", "0"))
                for r in self.s.store.iter("replicasets", ns)
                if owned_by(r, "Deployment", name)
            ]
            cur = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": rs_name,
                    "namespace": ns,
                    "uid": self.s.uid(),
                    "creationTimestamp": iso(t),
                    "generation": 1,
                    "labels": labels,
                    "annotations": {
                        "deployment.kubernetes.io/desired-replicas": str(replicas),
                        "deployment.kubernetes.io/max-replicas": str(replicas),
                        "deployment.kubernetes.io/revision": str(max(revs, default=0) + 1),
                    },
                    "ownerReferences": [owner_ref(d)],
                },
                "spec": {"replicas": 0, "selector": sel, "template": rtmpl},
                "status": {"replicas": 0},
            }
            self.s.store.put("replicasets", cur)
            cur = self.s.store.peek("replicasets", ns, rs_name)
            self.s.dirty = True
        self.roll(d, cur, olds, replicas, t)
        pods = [
            r
            for r in self.s.runs.values()
            if r.owner_kind == "ReplicaSet"
            and r.ns == ns
            and r.active
            and any(
                owned_by(rs, "Deployment", name) and rs["metadata"]["name"] == r.owner
                for rs in self.s.store.iter("replicasets", ns)
            )
        ]
        updated = [r for r in pods if r.owner == rs_name]
        ready = [r for r in pods if is_ready(r)]
        status = {
            "observedGeneration": d["metadata"].get("generation", 1),
            "replicas": len(pods),
            "updatedReplicas": len(updated),
            "readyReplicas": len(ready),
            "availableReplicas": len(ready),
        }
        if len(pods) - len(ready):
            status["unavailableReplicas"] = len(pods) - len(ready)
        status = {k: v for k, v in status.items() if v or k in ("observedGeneration", "replicas")}
        old = d.get("status") or {}
        avail = len(ready) >= replicas
        conds = []
        for c in old.get("conditions", []):
            conds.append(c)

        def cond(ctype, ok, reason, msg):
            for c in conds:
                if c["type"] == ctype:
                    if c["status"] != ("True" if ok else "False"):
                        c.update(
                            status="True" if ok else "False", reason=reason, message=msg, lastTransitionTime=iso(t)
                        )
                    c["lastUpdateTime"] = c.get("lastUpdateTime", iso(t))
                    return
            conds.append(
                {
                    "type": ctype,
                    "status": "True" if ok else "False",
                    "reason": reason,
                    "message": msg,
                    "lastUpdateTime": iso(t),
                    "lastTransitionTime": iso(t),
                }
            )

        cond(
            "Available",
            avail,
            "MinimumReplicasAvailable" if avail else "MinimumReplicasUnavailable",
            "Deployment has minimum availability." if avail else "Deployment does not have minimum availability.",
        )
        cond(
            "Progressing",
            True,
            "NewReplicaSetAvailable" if avail else "ReplicaSetUpdated",
            f'ReplicaSet "{rs_name}" ' + ("has successfully progressed." if avail else "is progressing."),
        )
        status["conditions"] = conds
        if json.dumps(status, sort_keys=True) != json.dumps(old, sort_keys=True):
            d["status"] = status
            self.s.store.put("deployments", d)

    def rs_pods(self, rs: dict, *, present: bool = False) -> list[PodRun]:
        """The RS's active pods (``present``: also those still terminating)."""
        ns, name = rs["metadata"]["namespace"], rs["metadata"]["name"]
        return [
            r
            for r in self.s.runs.values()
            if r.owner_kind == "ReplicaSet"
            and r.owner == name
            and r.ns == ns
            and (r.active or (present and r.alive and r.deleting is not None))
        ]

    def scale_rs(self, d: dict, rs: dict, n: int, t: datetime) -> None:
        """Set the ReplicaSet ``rs`` of Deployment ``d`` to ``n`` replicas (a ScalingReplicaSet event)."""
        was = int(rs["spec"].get("replicas", 0))
        if n == was:
            return
        rs["spec"]["replicas"] = n
        rs["metadata"]["generation"] = rs["metadata"].get("generation", 1) + 1
        ann = rs["metadata"].setdefault("annotations", {})
        ann["deployment.kubernetes.io/desired-replicas"] = str(d["spec"].get("replicas", 1))
        self.s.store.put("replicasets", rs)
        self.s.events.emit(
            t,
            ref(d),
            "ScalingReplicaSet",
            f"Scaled {'up' if n > was else 'down'} replica set {rs['metadata']['name']} from {was} to {n}",
            component="deployment-controller",
        )
        self.s.dirty = True

    def roll(self, d: dict, new: dict, olds: list[dict], replicas: int, t: datetime) -> None:
        """The deployment controller's rollout: Recreate stops every old pod (and waits until they are gone)
        before the new ones start; RollingUpdate keeps at most replicas + maxSurge pods and at least
        replicas - maxUnavailable available, so old pods stay until new ones are Ready."""
        olds = sorted(olds, key=lambda rs: rs["metadata"]["creationTimestamp"])
        strategy = d["spec"].get("strategy") or {}
        if strategy.get("type", "RollingUpdate") == "Recreate":
            for rs in olds:
                self.scale_rs(d, rs, 0, t)
            if any(self.rs_pods(rs, present=True) for rs in olds):
                return
            self.scale_rs(d, new, replicas, t)
            return
        live_olds = [rs for rs in olds if int(rs["spec"].get("replicas", 0)) > 0]
        if not live_olds:
            self.scale_rs(d, new, replicas, t)
            return
        ru = strategy.get("rollingUpdate") or {}
        surge = _intstr(ru.get("maxSurge", "25%"), replicas, up=True)
        unavail = _intstr(ru.get("maxUnavailable", "25%"), replicas, up=False)
        if surge == 0 and unavail == 0:
            unavail = 1
        every = [new] + olds

        def total() -> int:
            return sum(int(rs["spec"].get("replicas", 0)) for rs in every)

        def available(rs: dict) -> int:
            return sum(1 for r in self.rs_pods(rs) if is_ready(r))

        have = int(new["spec"].get("replicas", 0))
        if have > replicas:
            self.scale_rs(d, new, replicas, t)
        elif total() < replicas + surge:
            self.scale_rs(d, new, have + min(replicas + surge - total(), replicas - have), t)
        min_avail = replicas - unavail
        budget = total() - min_avail - (int(new["spec"].get("replicas", 0)) - available(new))
        if budget <= 0:
            return
        for rs in olds:  # old pods that are not available go first
            unhealthy = int(rs["spec"].get("replicas", 0)) - available(rs)
            cut = min(budget, max(0, unhealthy))
            if cut:
                self.scale_rs(d, rs, int(rs["spec"]["replicas"]) - cut, t)
                budget -= cut
        spare = sum(available(rs) for rs in every) - min_avail
        for rs in olds:
            if spare <= 0:
                break
            cut = min(spare, int(rs["spec"].get("replicas", 0)))
            if cut:
                self.scale_rs(d, rs, int(rs["spec"]["replicas"]) - cut, t)
                spare -= cut

    def sync_rs(self, rs: dict, t: datetime) -> None:
        """The ReplicaSet's pods to its replicas (deleting the least started first), and its status."""
        ns, name = rs["metadata"]["namespace"], rs["metadata"]["name"]
        want = int(rs["spec"].get("replicas", 1))
        pods = sorted(
            [
                r
                for r in self.s.runs.values()
                if r.owner_kind == "ReplicaSet" and r.owner == name and r.ns == ns and r.active
            ],
            key=lambda r: (r.created, r.name),
        )
        # the controller deletes unscheduled, then not yet running, then unready, then the newest pods first
        rank = sorted(
            pods,
            key=lambda r: (
                r.node is not None,
                r.state not in ("gated", "pending"),
                is_ready(r),
                -r.created.timestamp(),
            ),
        )
        for r in rank[: max(0, len(pods) - want)]:
            self.kubelet.kill(r, t)
            self.s.events.emit(
                t, ref(rs), "SuccessfulDelete", f"Deleted pod: {r.name}", component="replicaset-controller"
            )
            self.s.dirty = True
        for _ in range(want - len(pods)):
            self.pods.new_pod(rs, "ReplicaSet", t, None)
            self.s.dirty = True
        pods = [
            r
            for r in self.s.runs.values()
            if r.owner_kind == "ReplicaSet" and r.owner == name and r.ns == ns and r.active
        ]
        ready = sum(1 for r in pods if is_ready(r))
        status = {
            "replicas": len(pods),
            "fullyLabeledReplicas": len(pods),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        status = {k: v for k, v in status.items() if v or k in ("replicas", "observedGeneration")}
        if status != rs.get("status"):
            rs["status"] = status
            self.s.store.put("replicasets", rs)


# ---- helpers ----------------------------------------------------------------------------------


def _intstr(v: object, total: int, up: bool) -> int:
    """maxSurge / maxUnavailable: a count, or a percentage of ``total`` (surge rounds up, unavailable down)."""
    text = str(v).strip()
    if text.endswith("%"):
        x = total * float(text[:-1] or 0) / 100
        return max(0, math.ceil(x) if up else math.floor(x))
    try:
        return max(0, int(text))
    except ValueError:
        return 0


def has_probe(r: PodRun) -> bool:
    return any(c.get("readinessProbe") for c in r.obj["spec"].get("containers", []))


def is_ready(r: PodRun) -> bool:
    return r.active and (r.state == "ready" or (r.state == "running" and not has_probe(r)))


def _failure_action(spec: dict, r: PodRun) -> str:
    """The Job's podFailurePolicy verdict on a failed pod: Ignore | FailJob | Count."""
    pfp = spec.get("podFailurePolicy") or {}
    for rule in pfp.get("rules") or []:
        for pc in rule.get("onPodConditions") or []:
            if pc.get("type") == "DisruptionTarget" and r.disrupted and str(pc.get("status", "True")) == "True":
                return rule.get("action", "Count")
        ec = rule.get("onExitCodes")
        if ec and r.exit_code is not None:
            vals = [int(v) for v in ec.get("values") or []]
            hit = r.exit_code in vals
            if (ec.get("operator", "In") == "In" and hit) or (
                ec.get("operator") == "NotIn" and not hit and r.exit_code != 0
            ):
                return rule.get("action", "Count")
    if r.disrupted and not pfp:
        return "Count"
    return "Count"
