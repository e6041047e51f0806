"""Reading and writing objects: list, get, create (with the API server's defaults and the GPU admission), update,
patch (JSON, merge, strategic merge, server-side apply's YAML), delete (a running pod's grace period), and the
``scale`` subresource. The work runs in the thread pool under the World lock."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from .. import managed, protowire, tables
from ..apiserver import Kube
from ..cluster import Cluster
from ..objects import (
    KubeError,
    Resource,
    fields_match,
    iso,
    json_patch,
    labels_match,
    merge_patch,
    normalize_pod_spec,
    not_found,
    parse_field_selector,
    parse_label_selector,
    strategic_merge,
)
from .call import Call, Target
from .http import jresp, too_large


async def objects(call: Call) -> Response:
    """An object verb on a resource path: the body read (JSON or apply YAML; protobuf refused), then ``_VERBS``."""
    t, request, method = call.target, call.request, call.method
    body = None
    if method in ("POST", "PUT", "PATCH"):
        raw = await request.body()
        ctype = request.headers.get("content-type", "application/json").split(";")[0].strip()
        if ctype == "application/apply-patch+yaml":
            import yaml

            body = yaml.safe_load(raw)
        elif "protobuf" in ctype:
            body = _from_protobuf(raw, t.r)
        else:
            body = json.loads(raw or b"null")
    else:
        ctype = ""
    accept = request.headers.get("accept", "")
    op = Op(call.kube, call.c, t, method, dict(call.q), body, ctype, accept, request.headers.get("user-agent", ""))
    return await run_in_threadpool(_sync_op, op)


def _from_protobuf(raw: bytes, r: Resource) -> dict:
    """The JSON object of a protobuf body (``kubectl create secret|configmap|job|deployment…`` sends one); a kind
    the box's schema does not hold is a 415, as from a server that does not read it."""
    try:
        return protowire.decode(raw)
    except KeyError as e:
        kind = r.kind.lower()
        raise KubeError(
            415,
            "UnsupportedMediaType",
            f"this cluster reads {e.args[0]} as JSON or YAML, not protobuf. Write the {r.kind} as YAML and apply "
            f"it: kubectl create {kind} NAME ... --dry-run=client -o yaml > {kind}.yaml && "
            f"kubectl apply -f {kind}.yaml",
        ) from None
    except protowire.WireError as e:
        raise KubeError(400, "BadRequest", f"the {r.kind} sent as protobuf could not be read ({e})") from None


@dataclass
class Op:
    """An object verb as the thread pool runs it (``now``: the clock when it took the World lock)."""

    kube: Kube
    c: Cluster
    t: Target
    method: str
    q: dict
    body: Any
    ctype: str
    accept: str
    agent: str = ""  # the client's User-Agent (a write's field manager when it names none)
    now: datetime | None = None

    @property
    def name(self) -> str:
        assert self.t.name is not None
        return self.t.name

    @property
    def manager(self) -> str:
        return managed.manager_of(self.q, self.agent)


def _sync_op(op: Op) -> Response:
    kube, c, t, method = op.kube, op.c, op.t, op.method
    with kube.world.lock:
        op.now = now = kube.tick()
        r = t.r
        if t.ns is not None and r.plural != "namespaces" and c.store.peek("namespaces", "", t.ns) is None:
            if method == "POST" or t.name is not None:
                raise KubeError(404, "NotFound", f'namespaces "{t.ns}" not found', {"name": t.ns, "kind": "namespaces"})
        if t.sub == "scale":
            return _scale(c, t, method, op.body, op.ctype, now, op.manager)
        if t.sub not in (None, "status"):
            raise KubeError(404, "NotFound", "the server could not find the requested resource")
        verb = _VERBS.get((method, t.name is not None))
        if verb is None:
            raise KubeError(405, "MethodNotAllowed", f"{method} is not supported on {r.plural}")
        return verb(op)


def _get(op: Op) -> Response:
    r, t, q = op.t.r, op.t, op.q
    obj = op.c.store.get(r.plural, t.ns or "", op.name)
    if obj is None:
        raise not_found(r, op.name)
    typed(obj, r)
    if tables.wants_table(op.accept):
        rv = obj["metadata"]["resourceVersion"]
        return jresp(tables.table(r.plural, [obj], _now(op), rv, q.get("includeObject", "Metadata")))
    return jresp(obj)


# A PATCH's body by its content type (anything else: a JSON merge patch)
_PATCHES: dict[str, Callable[[Any, Any], Any]] = {
    "application/json-patch+json": json_patch,
    "application/strategic-merge-patch+json": strategic_merge,
    "application/apply-patch+yaml": strategic_merge,
}


def _patch(op: Op) -> Response:
    r, t = op.t.r, op.t
    if op.ctype == "application/apply-patch+yaml" and t.sub is None:
        return _apply(op)
    cur = op.c.store.get(r.plural, t.ns or "", op.name)
    if cur is None:
        raise not_found(r, op.name)
    new = _PATCHES.get(op.ctype, merge_patch)(cur, op.body)
    return _update(op.c, r, t.ns, op.name, new, op.q, _now(op), t.sub == "status", patched=True, manager=op.manager)


def _apply(op: Op) -> Response:
    """Server-side apply (``kubectl apply --server-side``): create the object, or apply the configuration onto it
    by its field manager's ownership (managed.py: 409 Conflict on another manager's field unless ``force``)."""
    r, t, body = op.t.r, op.t, op.body
    if not op.q.get("fieldManager"):
        raise KubeError(400, "BadRequest", "PATCH with apply-patch+yaml requires a fieldManager query parameter")
    if not isinstance(body, dict):
        raise KubeError(400, "BadRequest", "the applied configuration must be an object")
    name = (body.get("metadata") or {}).get("name")
    if name != op.name:
        raise KubeError(
            400, "BadRequest", f"the name of the object ({name}) does not match the name on the URL ({op.name})"
        )
    force = str(op.q.get("force", "")).lower() in ("true", "1")
    cur = op.c.store.get(r.plural, t.ns or "", op.name)
    if cur is None:
        return _create(op.kube, op.c, r, t.ns, body, op.q, _now(op), op.agent, applied=True)
    if body.get("kind") != r.kind or body.get("apiVersion") != r.api_version:
        raise KubeError(400, "BadRequest", f"the applied configuration is a {body.get('kind')}, not a {r.kind}")
    new = managed.apply(cur, body, op.manager, force, r.api_version, iso(_now(op)), strategic_merge)
    return _update(op.c, r, t.ns, op.name, new, op.q, _now(op), False, patched=True)


def _now(op: Op) -> datetime:
    assert op.now is not None
    return op.now


# The verbs on a resource path: (method, whether the path names an object) → what answers; others are a 405.
_VERBS: dict[tuple[str, bool], Callable[[Op], Response]] = {
    ("GET", False): lambda op: _list(op.c, op.t.r, op.t.ns, op.q, op.accept, _now(op)),
    ("GET", True): _get,
    ("POST", False): lambda op: _create(op.kube, op.c, op.t.r, op.t.ns, op.body, op.q, _now(op), op.agent),
    ("PUT", True): lambda op: _update(
        op.c, op.t.r, op.t.ns, op.name, op.body, op.q, _now(op), op.t.sub == "status", manager=op.manager
    ),
    ("PATCH", True): _patch,
    ("DELETE", True): lambda op: _delete(op.c, op.t.r, op.t.ns, op.name, op.q, _now(op)),
}


def typed(obj: dict, r: Resource) -> dict:
    obj.setdefault("apiVersion", r.api_version)
    obj.setdefault("kind", r.kind)
    return obj


def _list(c: Cluster, r: Resource, ns: str | None, q: dict, accept: str, now: datetime) -> Response:
    items, rv = _items(c, r, ns if r.namespaced else None, q)
    lsel = parse_label_selector(q.get("labelSelector"))
    fsel = parse_field_selector(q.get("fieldSelector"))
    items = [
        typed(o, r) for o in items if labels_match(o["metadata"].get("labels") or {}, lsel) and fields_match(o, fsel)
    ]
    if tables.wants_table(accept):
        return jresp(tables.table(r.plural, items, now, str(rv), q.get("includeObject", "Metadata")))
    return jresp(
        {"kind": f"{r.kind}List", "apiVersion": r.api_version, "metadata": {"resourceVersion": str(rv)}, "items": items}
    )


def _items(c: Cluster, r: Resource, ns: str | None, q: dict) -> tuple[list[dict], int]:
    """A list's objects and version, by its ``resourceVersion`` and ``resourceVersionMatch``: unset or ``0``, the
    newest; ``NotOlderThan`` (the default with a version), the newest once the store has reached it; ``Exact``, the
    objects as they were then, 410 Expired once that version is compacted (store.py)."""
    text, match = str(q.get("resourceVersion") or ""), str(q.get("resourceVersionMatch") or "")
    if match and not text:
        raise KubeError(
            400, "BadRequest", f'resourceVersionMatch "{match}" is forbidden unless resourceVersion is provided'
        )
    if match not in ("", "Exact", "NotOlderThan"):
        raise KubeError(
            400,
            "BadRequest",
            f'resourceVersionMatch: Unsupported value: "{match}": supported values: "Exact", "NotOlderThan"',
        )
    if not text or text == "0":
        if match == "Exact":
            raise KubeError(400, "BadRequest", 'resourceVersionMatch "Exact" is forbidden for resourceVersion "0"')
        return c.store.list(r.plural, ns)
    try:
        want = int(text)
    except ValueError:
        raise KubeError(400, "BadRequest", f"invalid resource version: {text[:40]}") from None
    if want > c.store.rv:
        raise too_large(want, c.store.rv)
    if match != "Exact":
        return c.store.list(r.plural, ns)
    items = c.store.list_at(r.plural, ns, want)
    if items is None:
        raise KubeError(410, "Expired", "The resourceVersion for the provided list is too old.")
    return items, want


def _create(
    kube: Kube,
    c: Cluster,
    r: Resource,
    ns: str | None,
    body: Any,
    q: dict,
    now: datetime,
    agent: str = "",
    applied: bool = False,
) -> Response:
    """A create (POST), or server-side apply's (``applied``: its manager owns only what its configuration sets)."""
    if not isinstance(body, dict):
        raise KubeError(400, "BadRequest", "the body must be a JSON object")
    if r.plural == "nodes":
        raise KubeError(403, "Forbidden", "nodes are managed by National Compute's market: they cannot be created")
    kind, api = body.get("kind") or r.kind, body.get("apiVersion") or r.api_version  # (unsaid: the path's)
    if kind != r.kind or api != r.api_version:
        raise KubeError(
            400,
            "BadRequest",
            f"the API version in the data ({api}) does not match the expected API version ({r.api_version})"
            if api != r.api_version
            else f"kind {kind} does not match {r.kind}",
        )
    obj = copy.deepcopy(body)
    obj.update(kind=kind, apiVersion=api)
    meta = obj.setdefault("metadata", {})
    if not meta.get("name"):
        if meta.get("generateName"):
            meta["name"] = meta["generateName"] + c.suffix()
        else:
            raise KubeError(
                422,
                "Invalid",
                f'{r.kind}.{r.group or "core"} "" is invalid: metadata.name: '
                f"Required value: name or generateName is required",
                {
                    "kind": r.plural,
                    "causes": [
                        {
                            "reason": "FieldValueRequired",
                            "message": "Required value: name or generateName is required",
                            "field": "metadata.name",
                        }
                    ],
                },
            )
    name = meta["name"]
    if r.namespaced:
        if meta.get("namespace") and ns and meta["namespace"] != ns:
            raise KubeError(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the request",
            )
        meta["namespace"] = ns or meta.get("namespace") or "default"
    else:
        meta.pop("namespace", None)
    if c.store.peek(r.plural, meta.get("namespace", ""), name) is not None:
        gr = f"{r.plural}.{r.group}" if r.group else r.plural
        raise KubeError(
            409, "AlreadyExists", f'{gr} "{name}" already exists', {"name": name, "group": r.group, "kind": r.plural}
        )
    meta.update(uid=c.uid(), creationTimestamp=iso(now), generation=1)
    meta.pop("managedFields", None)
    _defaults(c, r, obj, now)
    _admit(c, r, obj)
    meta.pop("resourceVersion", None)
    manager = managed.manager_of(q, agent)
    if applied:
        meta["managedFields"] = managed.created_by_apply(body, manager, r.api_version, iso(now))
    else:
        managed.record_update(None, obj, manager, r.api_version, iso(now))
    if q.get("dryRun"):
        return jresp(obj, 201)
    out = c.store.put(r.plural, obj)
    c.created(r.plural, c.store.peek(r.plural, meta.get("namespace", ""), name), now)
    c.controllers(now)
    out = c.store.get(r.plural, meta.get("namespace", ""), name) or out
    return jresp(typed(out, r), 201)


def _defaults(c: Cluster, r: Resource, obj: dict, now: datetime) -> None:
    spec = (
        obj.setdefault("spec", {})
        if r.plural not in ("serviceaccounts", "configmaps", "secrets", "roles", "rolebindings", "events")
        else None
    )
    if r.plural == "jobs":
        uid_probe = obj["metadata"]["uid"]
        job_spec_defaults(spec)
        tmpl = spec.setdefault("template", {})
        labels = tmpl.setdefault("metadata", {}).setdefault("labels", {})
        if not spec.get("selector"):
            extra = {
                "batch.kubernetes.io/controller-uid": uid_probe,
                "batch.kubernetes.io/job-name": obj["metadata"]["name"],
                "controller-uid": uid_probe,
                "job-name": obj["metadata"]["name"],
            }
            labels.update(extra)
            spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid_probe}}
            jl = obj["metadata"].setdefault("labels", {})
            for k in (
                "batch.kubernetes.io/controller-uid",
                "batch.kubernetes.io/job-name",
                "controller-uid",
                "job-name",
            ):
                jl.setdefault(k, extra[k])
        normalize_pod_spec(tmpl.setdefault("spec", {}))
        obj["status"] = {}
    elif r.plural in ("deployments", "replicasets"):
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        if r.plural == "deployments":
            spec.setdefault("progressDeadlineSeconds", 600)
            st = spec.setdefault("strategy", {"type": "RollingUpdate"})
            if st.get("type", "RollingUpdate") == "RollingUpdate":
                st.setdefault("rollingUpdate", {"maxSurge": "25%", "maxUnavailable": "25%"})
        normalize_pod_spec(spec.setdefault("template", {}).setdefault("spec", {}))
        if not spec.get("selector"):
            raise KubeError(
                422, "Invalid", f'{r.kind}.apps "{obj["metadata"]["name"]}" is invalid: spec.selector: Required value'
            )
        obj["status"] = {}
    elif r.plural == "services":
        spec.setdefault("type", "ClusterIP")
        if not spec.get("clusterIP"):
            n = next(c.service_ips)
            spec["clusterIP"] = f"10.96.{n // 250}.{n % 250 + 2}"
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        for p in spec.get("ports") or []:
            p.setdefault("protocol", "TCP")
            p.setdefault("targetPort", p.get("port"))
        obj["status"] = {"loadBalancer": {}}
    elif r.plural == "pods":
        normalize_pod_spec(spec)
        obj["status"] = {"phase": "Pending"}
    elif r.plural == "namespaces":
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
    elif r.plural == "secrets":
        obj.setdefault("type", "Opaque")
        string_data(obj)


def string_data(secret: dict) -> None:
    """A Secret's ``stringData`` goes into its ``data`` (base64), over the same keys, and is not kept (write only)."""
    extra = secret.pop("stringData", None)
    if isinstance(extra, dict) and extra:
        data = secret.get("data") if isinstance(secret.get("data"), dict) else {}
        secret["data"] = {**data, **{str(k): base64.b64encode(str(v).encode()).decode() for k, v in extra.items()}}


def job_spec_defaults(spec: dict) -> None:
    """A Job's spec defaults (SetDefaults_Job), on create and on every update."""
    spec.setdefault("parallelism", 1)
    spec.setdefault("completions", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("manualSelector", False)
    spec.setdefault("podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")


def _admit(c: Cluster, r: Resource, obj: dict) -> None:
    name = obj["metadata"]["name"]
    if r.plural == "jobs":
        c.admit("Job", name, obj["spec"]["template"].get("spec", {}), int(obj["spec"].get("parallelism", 1)))
    elif r.plural in ("deployments", "replicasets"):
        c.admit(r.kind, name, obj["spec"]["template"].get("spec", {}), int(obj["spec"].get("replicas", 1)))
    elif r.plural == "pods":
        c.admit("Pod", name, obj["spec"], 1)


def _update(
    c: Cluster,
    r: Resource,
    ns: str | None,
    name: str,
    body: Any,
    q: dict,
    now: datetime,
    status_only: bool,
    patched: bool = False,
    manager: str | None = None,
) -> Response:
    """A PUT or a PATCH's result (``body``); ``manager``: the field manager its changes are recorded for (None: the
    body's managedFields are already what they become, server-side apply's)."""
    cur = c.store.peek(r.plural, ns or "", name)
    if cur is None:
        raise not_found(r, name)
    if not isinstance(body, dict):
        raise KubeError(400, "BadRequest", "the body must be a JSON object")
    new = copy.deepcopy(body)
    meta = new.setdefault("metadata", {})
    rv = meta.get("resourceVersion")
    if rv and not patched and rv != cur["metadata"]["resourceVersion"]:
        raise KubeError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {r.plural} "{name}": the object has been '
            f"modified; please apply your changes to the latest version and try again",
        )
    for k in ("uid", "creationTimestamp", "namespace", "name", "generation", "ownerReferences", "finalizers"):
        if k in cur["metadata"]:
            meta[k] = cur["metadata"][k]
    if status_only or (manager is not None and not meta.get("managedFields")):
        # (what a write leaves unsaid stays as it was; a client may set them, as kubectl's upgrade from
        # client-side to server-side apply does with a JSON patch)
        meta.pop("managedFields", None)
        if "managedFields" in cur["metadata"]:
            meta["managedFields"] = copy.deepcopy(cur["metadata"]["managedFields"])
    if r.plural == "pods":  # only its images change (the rest of a pod's spec is kept)
        new["spec"] = _pod_spec_update(cur["spec"], new.get("spec") or {})
    if status_only:
        new["spec"] = cur.get("spec")
    elif "status" in cur:
        new["status"] = cur["status"]
    if r.plural == "secrets":
        string_data(new)
    if r.plural in ("deployments", "replicasets", "jobs", "pods") and isinstance(new.get("spec"), dict):
        tmpl = new["spec"].get("template")
        if isinstance(tmpl, dict):
            normalize_pod_spec(tmpl.setdefault("spec", {}))
        if r.plural == "jobs" and not status_only:
            job_spec_defaults(new["spec"])
            _job_immutable(r, name, cur, new)  # validation, then the admission webhook (as the API server orders them)
            more = int(new["spec"].get("parallelism", 1)) > int(cur["spec"].get("parallelism", 1))
            if more or new["spec"].get("template") != cur["spec"].get("template"):  # (more GPUs asked for)
                c.admit("Job", name, new["spec"]["template"].get("spec", {}), int(new["spec"].get("parallelism", 1)))
        if r.plural == "deployments" and new["spec"].get("template") != cur["spec"].get("template"):
            c.admit("Deployment", name, new["spec"]["template"].get("spec", {}), int(new["spec"].get("replicas", 1)))
    if new.get("spec") != cur.get("spec"):
        meta["generation"] = cur["metadata"].get("generation", 1) + 1
    new.setdefault("apiVersion", r.api_version)
    new.setdefault("kind", r.kind)
    meta["resourceVersion"] = cur["metadata"]["resourceVersion"]
    if new == typed(copy.deepcopy(cur), r):  # nothing changed: no new resourceVersion (kubectl: "(no change)")
        return jresp(new)
    if manager is not None and not status_only:
        managed.record_update(cur, new, manager, r.api_version, iso(now))
    if q.get("dryRun"):
        return jresp(new)
    if r.plural == "pods":  # keep the controller's own copy in step
        run = c.runs.get((ns or "", name))
        if run is not None:
            run.obj["metadata"]["labels"] = meta.get("labels", {})
            run.obj["metadata"]["annotations"] = meta.get("annotations", {})
            new = run.obj
    if r.plural == "jobs":
        ctl = c.jobs.get((ns or "", name))
        if ctl is not None and ctl.suspended_by_us and new["spec"].get("suspend") is False:
            new["spec"]["suspend"] = True  # still waiting for its node
    out = c.store.put(r.plural, new)
    c.dirty = True
    c.controllers(now)
    out = c.store.get(r.plural, ns or "", name) or out
    return jresp(typed(out, r))


def _pod_spec_update(cur: dict, new: dict) -> dict:
    out = copy.deepcopy(cur)
    for i, ctr in enumerate(new.get("containers") or []):
        if i < len(out.get("containers", [])) and "image" in ctr:
            out["containers"][i]["image"] = ctr["image"]
    return out


# A Job's fields that cannot change once it is created (pkg/apis/batch/validation: ValidateJobSpecUpdate), in the
# order the API server checks them; completions may change only on an Indexed Job, with parallelism
JOB_IMMUTABLE = (
    "completions",
    "selector",
    "template",
    "completionMode",
    "podFailurePolicy",
    "backoffLimitPerIndex",
    "managedBy",
    "successPolicy",
)
# What may change in the template of a Job that is suspended and has never started (a queue's scheduling directives)
SCHEDULING_DIRECTIVES = ("nodeSelector", "tolerations", "schedulingGates", "affinity")


def _job_immutable(r: Resource, name: str, cur: dict, new: dict) -> None:
    """422 Invalid, as the API server answers, when ``new`` changes a field of ``JOB_IMMUTABLE`` of ``cur``:
    ``Job.batch "NAME" is invalid: spec.template: Invalid value: core.PodTemplateSpec{…}: field is immutable``,
    each change a cause with its field path."""
    old_spec, spec = cur.get("spec") or {}, new.get("spec") or {}
    old_tmpl = copy.deepcopy(old_spec.get("template"))
    if old_spec.get("suspend") and not (cur.get("status") or {}).get("startTime") and isinstance(old_tmpl, dict):
        tmpl = spec.get("template") or {}
        old_meta = old_tmpl.setdefault("metadata", {})
        for k in ("labels", "annotations"):
            old_meta.pop(k, None)
            if k in (tmpl.get("metadata") or {}):
                old_meta[k] = copy.deepcopy(tmpl["metadata"][k])
        old_pod = old_tmpl.setdefault("spec", {})
        for k in SCHEDULING_DIRECTIVES:
            old_pod.pop(k, None)
            if k in (tmpl.get("spec") or {}):
                old_pod[k] = copy.deepcopy(tmpl["spec"][k])
    causes = []
    for k in JOB_IMMUTABLE:
        was = old_tmpl if k == "template" else old_spec.get(k)
        if k == "completions" and spec.get("completionMode") == "Indexed":
            if spec.get(k) != was and spec.get(k) is not None and spec.get(k) != spec.get("parallelism"):
                causes.append((k, spec.get(k), "can only be modified in tandem with spec.parallelism"))
            continue
        if spec.get(k) != was:
            causes.append((k, spec.get(k), "field is immutable"))
    if not causes:
        return
    kind = f"{r.api_version}/{r.kind}"
    said = []
    for k, value, why in causes:
        shown = protowire.go_value(protowire.field_type(kind, f"spec.{k}"), value)
        said.append({"reason": "FieldValueInvalid", "message": f"Invalid value: {shown}: {why}", "field": f"spec.{k}"})
    errors = [f"{x['field']}: {x['message']}" for x in said]
    text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    raise KubeError(
        422,
        "Invalid",
        f'{r.kind}.{r.group} "{name}" is invalid: {text}',
        {"name": name, "group": r.group, "kind": r.kind, "causes": said},
    )


def _delete(c: Cluster, r: Resource, ns: str | None, name: str, q: dict, now: datetime) -> Response:
    if r.plural == "nodes":
        raise KubeError(
            403,
            "Forbidden",
            "nodes are managed by National Compute's market: withdraw the limit "
            "price (PUT /api/k8s/bid 0) to let them go",
        )
    if r.plural == "namespaces" and name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        raise KubeError(403, "Forbidden", f'namespaces "{name}" is forbidden: this namespace may not be deleted')
    if q.get("dryRun"):
        obj = c.store.get(r.plural, ns or "", name)
        if obj is None:
            raise not_found(r, name)
        return jresp(typed(obj, r))
    if r.plural == "pods" and (ns or "", name) in c.runs:
        obj = c.store.get(r.plural, ns or "", name)
        if obj is None:
            raise not_found(r, name)
        try:
            grace = int(q["gracePeriodSeconds"]) if q.get("gracePeriodSeconds") not in (None, "") else None
        except ValueError:
            raise KubeError(400, "BadRequest", "gracePeriodSeconds must be a whole number of seconds") from None
        if not c.delete_pod(ns or "", name, grace, now):  # Terminating for its grace period
            obj = c.store.get(r.plural, ns or "", name) or obj
        c.controllers(now)
        return jresp(typed(obj, r))
    obj = c.store.delete(r.plural, ns or "", name)
    if obj is None:
        raise not_found(r, name)
    c.deleted(r.plural, ns or "", name, now)
    c.controllers(now)
    return jresp(typed(obj, r))


def _scale(c: Cluster, t: Target, method: str, body: Any, ctype: str, now: datetime, manager: str) -> Response:
    r = t.r
    if r.plural not in ("deployments", "replicasets") or not t.name:
        raise KubeError(404, "NotFound", "the server could not find the requested resource")
    obj = c.store.peek(r.plural, t.ns or "", t.name)
    if obj is None:
        raise not_found(r, t.name)

    def scale_obj(o: dict) -> dict:
        sel = tables.selector_to_text(o["spec"].get("selector") or {})
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                "name": t.name,
                "namespace": t.ns,
                "uid": o["metadata"]["uid"],
                "resourceVersion": o["metadata"]["resourceVersion"],
                "creationTimestamp": o["metadata"]["creationTimestamp"],
            },
            "spec": {"replicas": int(o["spec"].get("replicas", 1))},
            "status": {"replicas": int(o.get("status", {}).get("replicas", 0)), "selector": sel},
        }

    if method == "GET":
        return jresp(scale_obj(obj))
    cur = scale_obj(obj)
    if method == "PUT":
        new = body
    elif ctype == "application/json-patch+json":
        new = json_patch(cur, body)
    else:
        new = merge_patch(cur, body)
    replicas = int((new.get("spec") or {}).get("replicas", cur["spec"]["replicas"]))
    if replicas < 0:
        raise KubeError(422, "Invalid", "spec.replicas: must be greater than or equal to 0")
    if replicas > int(obj["spec"].get("replicas", 1)):
        c.admit(r.kind, t.name, obj["spec"]["template"].get("spec", {}), replicas)
    if replicas == int(obj["spec"].get("replicas", 1)):
        return jresp(cur)
    before = copy.deepcopy(obj)
    obj["spec"]["replicas"] = replicas
    obj["metadata"]["generation"] = obj["metadata"].get("generation", 1) + 1
    managed.record_update(before, obj, manager, "autoscaling/v1", iso(now), "scale")
    c.store.put(r.plural, obj)
    c.dirty = True
    c.controllers(now)
    return jresp(scale_obj(c.store.peek(r.plural, t.ns or "", t.name)))
