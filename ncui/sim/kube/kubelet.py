"""The kubelet's side of a cluster: a pod's run on its node on the virtual clock, and how it ends.

``start`` turns a bound pod into its plan (``profiles.make_plan``: states, log lines, what it leaves on the shared
volume and the node's disk) and wakes the states in turn; ``kill`` (a user's or an owner's delete), ``terminate``
(a node gone) and ``gone`` end it; ``render_put`` writes the pod object as the run stands. The events a kubelet
records (Pulling, Started, Killing, …) are said here, and the finance-analyst launcher's scaling.
"""

from __future__ import annotations

import base64
import math
from datetime import datetime, timedelta

from . import profiles
from .events import ref
from .objects import iso
from .podstatus import pod_status
from .state import TERMINAL, ClusterState, PodRun


class Kubelet:
    """Runs the pods of the cluster whose state is ``s``."""

    def __init__(self, s: ClusterState) -> None:
        self.s = s

    def render_put(self, r: PodRun, t: datetime) -> None:
        """Write the pod's object as its run stands now (its status, its node)."""
        if not r.alive:
            return
        obj = r.obj
        obj["status"] = pod_status(r, len(self.s.nodes), self.s.node_ip(r.node), self.s.pod_ip)
        if r.node and r.start and r.state not in ("gated", "pending"):
            obj["spec"]["nodeName"] = r.node
        elif r.state in ("gated", "pending"):
            obj["spec"].pop("nodeName", None)
        self.s.store.put("pods", obj)

    def delete_pod(self, ns: str, name: str, grace: int | None, t: datetime) -> bool:
        """A user's DELETE of a pod the controllers run: True when it is gone at once, False while it is
        Terminating (None-run pods are the caller's to delete)."""
        r = self.s.runs.get((ns, name))
        if r is None or not r.alive:
            return True
        return self.kill(r, t, grace)

    def kill(self, r: PodRun, t: datetime, grace: int | None = None) -> bool:
        """Deleted (by a user or its owner). A pod whose containers run stays, Terminating, for its grace
        period (``grace``, else the pod's terminationGracePeriodSeconds) after a Killing event, then goes; one
        that never started or has ended goes at once. True when the pod is gone already."""
        if r.deleting is not None:
            if grace is not None and t + timedelta(seconds=grace) < r.deleting:
                r.deleting = t + timedelta(seconds=grace)
                self.s.wake(r.deleting, lambda tt, r=r: self.gone(r, tt))
            return False
        started = r.active and r.start is not None and r.start <= t and r.state not in ("gated", "pending")
        if grace is None:
            grace = int(r.obj["spec"].get("terminationGracePeriodSeconds", 30) or 0)
        if r.active:
            r.ended = t
            r.exit_code = 143
            self.undo_future(r, t)
        r.accounted = True
        self.s.dirty = True
        if started and grace > 0:
            self.killing(r, t)
            r.deleting = t + timedelta(seconds=grace)
            meta = r.obj["metadata"]
            meta["deletionTimestamp"] = iso(r.deleting)
            meta["deletionGracePeriodSeconds"] = grace
            self.s.store.put("pods", r.obj)
            self.s.wake(r.deleting, lambda tt, r=r: self.gone(r, tt))
            return False
        self.gone(r, t)
        return True

    def gone(self, r: PodRun, t: datetime) -> None:
        if not r.alive:
            return
        r.alive = False
        if self.s.runs.get(r.key) is r:
            self.s.runs.pop(r.key, None)
        self.s.store.delete("pods", r.ns, r.name)
        self.s.dirty = True

    def terminate(self, r: PodRun, t: datetime, code: int, reason: str, disruption: str | None = None) -> None:
        r.state = "failed"
        r.ended = t
        r.exit_code = code
        r.times["failed"] = t
        r.term_reason = reason
        if disruption:
            r.times["disrupted"] = t
            r.disruption = disruption
        self.undo_future(r, t)
        self.render_put(r, t)
        self.s.dirty = True
        if r.owner_kind == "ReplicaSet":  # the pod GC removes pods of a node that is gone
            self.s.store.delete("pods", r.ns, r.name)
            r.alive = False

    def undo_future(self, r: PodRun, t: datetime) -> None:
        for flag, entries in self.s.shared.items():
            kept = []
            for at, present, owner in entries:
                if owner == r.key and at > t:
                    if not present:
                        kept.append((t, False, owner))  # an EXIT trap still runs
                    continue
                kept.append((at, present, owner))
            self.s.shared[flag] = kept
        if r.node and r.plan:
            for flag, _off in r.plan.node_local:
                at = self.s.node_local.get(r.node, {}).get(flag)
                if at is not None and at > t:
                    self.s.node_local[r.node].pop(flag, None)
        if r.plan and r.start:
            for eng, off in r.plan.warms:
                if self.s.warm.get(eng) == r.start + timedelta(seconds=off) and self.s.warm[eng] > t:
                    self.s.warm.pop(eng)

    # ---- a pod's run on its node ------------------------------------------------------------------

    def env(self, container: dict, ns: str) -> dict[str, str]:
        """A container's environment as the kubelet sets it: ``value``s, and ``valueFrom`` a Secret's or a
        ConfigMap's key in the pod's namespace (a missing optional one is left unset)."""
        out: dict[str, str] = {}
        for e in container.get("env") or []:
            if not isinstance(e, dict) or "name" not in e:
                continue
            src = e.get("valueFrom") or {}
            if "value" in e or not src:
                out[e["name"]] = str(e.get("value", ""))
                continue
            for kind, field in (("secrets", "secretKeyRef"), ("configmaps", "configMapKeyRef")):
                ref = src.get(field)
                if not isinstance(ref, dict):
                    continue
                obj = self.s.store.peek(kind, ns, str(ref.get("name", "")))
                data = (obj or {}).get("data") or {}
                key = str(ref.get("key", ""))
                if key in data:
                    val = str(data[key])
                    try:
                        out[e["name"]] = base64.b64decode(val).decode("utf-8", "replace") if kind == "secrets" else val
                    except ValueError:  # (not base64: the API server refuses such a Secret; nothing set)
                        pass
        return out

    def start(self, key: tuple[str, str], t: datetime) -> None:
        r = self.s.runs.get(key)
        if r is None or not r.active or r.node is None or r.start is None or r.start > t:
            return
        R = r.start
        spec = r.obj["spec"]
        main = (spec.get("containers") or [{}])[0]
        env = self.env(main, r.ns)
        for ic in spec.get("initContainers") or []:
            for e in ic.get("env") or []:
                if "name" in e and "value" in e:
                    env.setdefault(e["name"], str(e["value"]))
        local = {k for k, at in self.s.node_local.get(r.node, {}).items() if at <= R}
        ctx = profiles.Context(
            seed=self.s.world.seed,
            pod=f"{r.owner}:{r.attempt}" if r.owner_kind == "Job" else r.name,
            node=r.node,
            gpus=r.gpus,
            vendor=self.s.spec.gpu_vendor,
            gpu_model=self.s.spec.gpu_model,
            attempt=r.attempt,
            shared_at=lambda flag: _offset(self.shared_from(flag, R), R),
            local=local,
            warm=lambda e: e in self.s.warm and self.s.warm[e] <= R,
            env=env,
            image=str(main.get("image", "")),
            command=[str(x) for x in (main.get("command") or []) + (main.get("args") or [])],
            defective=self.tune_defective() if r.profile == "tune" else False,
            backend_ready_at=self.backend_ready(R),
        )
        plan = profiles.make_plan(r.profile, ctx, r.containers())
        if r.profile == "generic" and spec.get("restartPolicy", "Always") == "Always" and plan.end() is not None:
            plan.steps = plan.steps[:-1]  # a Deployment's (or `kubectl run`'s) server keeps running
            plan.logs = {k: v[:-1] for k, v in plan.logs.items()}  # no "done"
        ctl = self.s.jobs.get((r.ns, r.owner)) if r.owner_kind == "Job" else None
        end = plan.end()
        if ctl is not None and ctl.doomed and end is not None:  # /_sim/k8s/fail: this Job's pods exit 1
            plan.steps[-1] = (end, "failed")
            plan.exit_code = 1
            for lines in plan.logs.values():
                lines.append((end, "[ncui sim] exit 1: a failure the box was asked for (/_sim/k8s/fail)"))
        r.plan = plan
        self.pod_event(
            r,
            R,
            "Scheduled",
            f"Successfully assigned {r.ns}/{r.name} to {r.node}",
            component="default-scheduler",
            host="",
        )
        first = (spec.get("initContainers") or spec.get("containers") or [{}])[0]
        self.pod_event(r, R, "Pulling", f'Pulling image "{first.get("image", "")}"', container=first.get("name"))
        for flag, off, present in plan.shared:
            self.s.shared.setdefault(flag, []).append((R + timedelta(seconds=off), present, r.key))
        for flag, off in plan.node_local:
            self.s.node_local.setdefault(r.node, {})[flag] = R + timedelta(seconds=off)
        for eng, off in plan.warms:
            at = R + timedelta(seconds=off)
            if eng not in self.s.warm or self.s.warm[eng] > at:
                self.s.warm[eng] = at
        for off, state in plan.steps:
            self.s.wake(R + timedelta(seconds=off), lambda tt, s=state: self.to_state(key, s, tt))
        if r.profile == "tune":
            ready_off = next((off for f, off, p in plan.shared if p and f.endswith(".ready")), None)
            if ready_off is not None:
                self.s.wake(R + timedelta(seconds=ready_off), self.launcher_check)
        if r.profile == "launcher":
            run_off = plan.offset_of("running") or 0
            self.s.wake(R + timedelta(seconds=run_off), self.launcher_check)

    def to_state(self, key: tuple[str, str], state: str, t: datetime) -> None:
        r = self.s.runs.get(key)
        if r is None or not r.active or r.start is None:
            return
        r.state = state
        r.times[state] = t
        if state in TERMINAL:
            r.ended = t
            r.exit_code = r.plan.exit_code if r.plan else 0
        self.render_put(r, t)
        self.container_events(r, state, t)
        self.s.dirty = True

    # ---- events about pods ----------------------------------------------------------------------

    def pod_event(
        self,
        r: PodRun,
        t: datetime,
        reason: str,
        message: str,
        *,
        container: str | None = None,
        warning: bool = False,
        component: str = "kubelet",
        host: str | None = None,
    ) -> None:
        fp = ""
        if container:
            fp = f"spec.{'initContainers' if container in r.init_containers() else 'containers'}{{{container}}}"
        self.s.events.emit(
            t,
            ref(r.obj, fp),
            reason,
            message,
            warning=warning,
            component=component,
            host=r.node or "" if host is None else host,
        )

    def container_events(self, r: PodRun, state: str, t: datetime) -> None:
        """Pulled, Created, Started for the containers a state starts; a readiness probe's first failure."""
        spec = r.obj["spec"]
        if state.startswith("init:"):
            i = int(state.split(":")[1])
            started = [(spec.get("initContainers") or [])[i]]
        elif state == "running":
            started = list(spec.get("containers") or [])
        else:
            return
        since = r.start or t
        first = ((spec.get("initContainers") or spec.get("containers") or [{}])[0]).get("name")
        for c in started:
            name, image = c.get("name", ""), c.get("image", "")
            took = (t - since).total_seconds() if name == first else 0
            if took > 0:
                self.pod_event(r, t, "Pulled", f'Successfully pulled image "{image}" in {took:g}s', container=name)
            else:
                self.pod_event(r, t, "Pulled", f'Container image "{image}" already present on machine', container=name)
            self.pod_event(r, t, "Created", f"Created container: {name}", container=name)
            self.pod_event(r, t, "Started", f"Started container {name}", container=name)
        for c in started if state == "running" else []:
            probe = (c.get("readinessProbe") or {}).get("httpGet")
            if probe:
                port = probe.get("port", "")
                self.pod_event(
                    r,
                    t,
                    "Unhealthy",
                    f'Readiness probe failed: Get "http://{self.s.pod_ip(r)}:{port}{probe.get("path", "/")}": '
                    f"dial tcp {self.s.pod_ip(r)}:{port}: connect: connection refused (the engine is still loading)",
                    container=c.get("name"),
                    warning=True,
                )

    def killing(self, r: PodRun, t: datetime) -> None:
        if r.start is not None and r.start <= t and r.state not in ("gated", "pending"):
            for name in r.containers():
                self.pod_event(r, t, "Killing", f"Stopping container {name}", container=name)

    # ---- shared volume, node disks, compile caches ------------------------------------------

    def shared_present(self, flag: str, t: datetime) -> bool:
        state = False
        for at, present, _ in self.s.shared.get(flag, []):
            if at <= t:
                state = present
        return state

    def shared_from(self, flag: str, t: datetime) -> datetime | None:
        if self.shared_present(flag, t):
            return t
        for at, present, _ in sorted(self.s.shared.get(flag, []), key=lambda x: x[0]):
            if at > t and present:
                return at
        return None

    # ---- the finance-analyst launcher: scales the engine up once the tune wrote .ready --------

    def launcher_check(self, t: datetime) -> None:
        for r in list(self.s.runs.values()):
            if r.profile != "launcher" or not r.active or "running" not in r.times:
                continue
            L = r.times["running"]
            if not self.shared_present("finance-analyst/model/.ready", t):
                continue
            S = max(t, L)
            k = math.ceil((S - L).total_seconds() / 20 - 1e-9)
            at = L + timedelta(seconds=20 * k)
            if at <= t:
                self.launcher_scale(r, t)
            else:
                self.s.wake(at, self.launcher_check)

    def launcher_scale(self, launcher: PodRun, t: datetime) -> None:
        d = self.s.store.peek("deployments", launcher.ns, "finance-analyst")
        if d is None or int(d["spec"].get("replicas", 1)) != 0:
            return
        if not self.shared_present("finance-analyst/model/.ready", t):
            return
        d["spec"]["replicas"] = 1
        d["metadata"]["generation"] = d["metadata"].get("generation", 1) + 1
        self.s.store.put("deployments", d)
        launcher.extra_logs.append(
            (t, "launcher", f"{iso(t)} the tuned model is ready: scaling deploy/finance-analyst to 1")
        )
        launcher.extra_logs.append((t, "launcher", "deployment.apps/finance-analyst scaled"))
        self.s.dirty = True

    def tune_defective(self) -> bool:
        """Whether the finance-analyst tune starting now comes out defective: the next ``tune_defects`` attempts
        are (a scenario's or a sim control's count, one used per attempt), else what the control forced, else
        not: a tune passes by default, and every new attempt gets its own outcome."""
        if self.s.defaults.get("tune_defects", 0) > 0:
            self.s.defaults["tune_defects"] -= 1
            return True
        return bool(self.s.defaults.get("tune_defective"))

    def backend_ready(self, R: datetime) -> float | None:
        best = None
        for r in self.s.runs.values():
            if r.profile == "kimi-worker" and r.active and r.plan and r.start:
                off = r.plan.offset_of("ready")
                if off is not None:
                    at = r.start + timedelta(seconds=off)
                    best = at if best is None or at < best else best
        return None if best is None else (best - R).total_seconds()


def _offset(at: datetime | None, R: datetime) -> float | None:
    return None if at is None else (at - R).total_seconds()
