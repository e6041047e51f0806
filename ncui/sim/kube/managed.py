"""Field ownership as the API server keeps it (``metadata.managedFields``) and server-side apply's conflicts.

Every write names a field manager (``?fieldManager=``, else the client's User-Agent up to its first ``/``). A
create or an update (``operation: Update``) makes its manager the owner of every field it set or changed, taken
from whoever owned it before; an apply (``PATCH`` with ``application/apply-patch+yaml``, ``operation: Apply``)
makes its manager own exactly the fields of its configuration, and is refused (409 Conflict) when it would change
a field another manager owns, unless ``?force=true`` (``kubectl apply --server-side --force-conflicts``), which
takes the field over. A field an applier stops naming is removed when no one else owns it. Fields are paths as
``fieldsV1`` writes them: ``f:spec``, ``f:containers``, ``k:{"name":"main"}`` (a list item by its merge key,
``objects.MERGE_KEYS``; other lists are one field), ``.`` (the item itself). Close to structured-merge-diff for
what the box serves; its schema's finer points (maps of atomic structs, sets of scalars) are not modelled.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from .objects import MERGE_KEYS, KubeError

Path = tuple[str, ...]
_SKIP_META = {
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
}
_ITEM = "."
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def manager_of(q: dict, agent: str) -> str:
    """The field manager of a write: ``?fieldManager=``, else the User-Agent's first part (as the API server)."""
    m = str(q.get("fieldManager") or "")
    if m:
        return m
    return (agent.split("/", 1)[0].strip() or "unknown")[:128]


def _item_key(item: dict, key: str) -> str:
    return "k:" + json.dumps({key: item.get(key)}, separators=(",", ":"), sort_keys=True)


def leaves(obj: dict) -> dict[Path, Any]:
    """Every field an object sets that a manager may own (not its status, kind or identity): path → value."""
    out: dict[Path, Any] = {}

    def walk(v: Any, path: Path, name: str) -> None:
        mk = MERGE_KEYS.get(name)
        if isinstance(v, dict) and v:
            for k, x in v.items():
                walk(x, (*path, f"f:{k}"), k)
        elif isinstance(v, list) and mk and v and all(isinstance(x, dict) and mk in x for x in v):
            for x in v:
                item = (*path, _item_key(x, mk))
                out[(*item, _ITEM)] = None
                for k, y in x.items():
                    walk(y, (*item, f"f:{k}"), k)
        else:
            out[path] = v  # a scalar, an empty map, an atomic list

    for k, v in obj.items():
        if k in ("apiVersion", "kind", "status"):
            continue
        if k == "metadata" and isinstance(v, dict):
            for mk_, mv in v.items():
                if mk_ not in _SKIP_META:
                    walk(mv, ("f:metadata", f"f:{mk_}"), mk_)
            continue
        walk(v, (f"f:{k}",), k)
    return out


def to_fields(paths: set[Path]) -> dict:
    """The ``fieldsV1`` tree of a set of paths."""
    tree: dict = {}
    for p in sorted(paths):
        node = tree
        for seg in p:
            node = node.setdefault(seg, {})
    return tree


def from_fields(tree: Any) -> set[Path]:
    out: set[Path] = set()

    def walk(node: Any, path: Path) -> None:
        if not isinstance(node, dict) or not node:
            if path:
                out.add(path)
            return
        for k, v in node.items():
            walk(v, (*path, k))

    walk(tree, ())
    return out


def _value(obj: Any, path: Path) -> tuple[bool, Any]:
    """(present, value) at ``path``."""
    cur = obj
    for seg in path:
        if seg == _ITEM:
            return True, None
        if seg.startswith("f:"):
            if not isinstance(cur, dict) or seg[2:] not in cur:
                return False, None
            cur = cur[seg[2:]]
        elif seg.startswith("k:") and isinstance(cur, list):
            key = json.loads(seg[2:])
            cur = next((x for x in cur if isinstance(x, dict) and all(x.get(a) == b for a, b in key.items())), None)
            if cur is None:
                return False, None
        else:
            return False, None
    return True, cur


def show(path: Path) -> str:
    """A path as structured-merge-diff prints it: ``.spec.template.spec.containers[name="main"].image``."""
    out = ""
    for seg in path:
        if seg.startswith("f:"):
            out += "." + seg[2:]
        elif seg.startswith("k:"):
            key = json.loads(seg[2:])
            out += "[" + ",".join(f"{a}={json.dumps(b)}" for a, b in key.items()) + "]"
    return out


def _entries(obj: dict) -> list[dict]:
    return [e for e in (obj.get("metadata") or {}).get("managedFields") or [] if isinstance(e, dict)]


def _entry(manager: str, operation: str, api_version: str, at: str, paths: set[Path]) -> dict:
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": at,
        "fieldsType": "FieldsV1",
        "fieldsV1": to_fields(paths),
    }


def _who(e: dict) -> str:
    """A manager as a conflict names it (managedfields/internal/conflict.go printManager)."""
    s = json.dumps(str(e.get("manager", "")))
    if e.get("subresource"):
        s += f" with subresource {json.dumps(str(e['subresource']))}"
    if e.get("operation") == "Update":
        s += f" using {e.get('apiVersion', '')}"
    return s


def _store(obj: dict, entries: list[dict]) -> None:
    kept = [e for e in entries if e.get("fieldsV1")]
    meta = obj.setdefault("metadata", {})
    if kept:
        meta["managedFields"] = kept
    else:
        meta.pop("managedFields", None)


def record_update(cur: dict | None, new: dict, manager: str, api_version: str, at: str, subresource: str = "") -> None:
    """A create (``cur`` None) or an update by ``manager`` (through ``subresource``, e.g. ``scale``): it owns what
    it set or changed, taken from the others; what it removed no one owns any more. Written into ``new``'s
    managedFields."""
    before = leaves(cur) if cur is not None else {}
    after = leaves(new)
    changed = {p for p, v in after.items() if p not in before or before[p] != v}
    removed = set(before) - set(after)
    entries = copy.deepcopy(_entries(cur) if cur is not None else [])
    mine: dict | None = None
    for e in entries:
        owned = from_fields(e.get("fieldsV1")) - removed
        if e.get("manager") == manager and e.get("operation") == "Update" and e.get("subresource", "") == subresource:
            mine = e
        else:
            owned -= changed
        e["fieldsV1"] = to_fields(owned)
    if changed:
        if mine is None:
            mine = _entry(manager, "Update", api_version, at, set())
            if subresource:
                mine["subresource"] = subresource
            entries.append(mine)
        mine.update(fieldsV1=to_fields(from_fields(mine["fieldsV1"]) | changed), time=at, apiVersion=api_version)
    _store(new, entries)


def created_by_apply(config: dict, manager: str, api_version: str, at: str) -> list[dict]:
    """The managedFields of an object server-side apply creates: its manager owns what the configuration sets."""
    return [_entry(manager, "Apply", api_version, at, set(leaves(config)))]


def apply(cur: dict, config: dict, manager: str, force: bool, api_version: str, at: str, merge: Any) -> dict:
    """Server-side apply of ``config`` by ``manager`` onto ``cur``: the object to store, its managedFields set;
    409 Conflict (``KubeError``) when it changes another manager's field and not ``force``. ``merge(cur,
    config)`` is how the configuration's values go onto the object."""
    applied = leaves(config)
    mine = set(applied)
    entries = copy.deepcopy(_entries(cur))
    conflicts: list[tuple[dict, Path]] = []
    before = set()
    others: set[Path] = set()
    for e in entries:
        owned = from_fields(e.get("fieldsV1"))
        if e.get("manager") == manager and e.get("operation") == "Apply":
            before = owned
            continue
        for p in sorted(owned & mine):
            if p[-1] == _ITEM:
                continue
            present, value = _value(cur, p)
            if present and value != applied[p]:
                conflicts.append((e, p))
    if conflicts and not force and manager == "kubectl":  # kubectl's move from client-side apply: no conflicts
        allowed = _from_last_applied(cur)
        remaining = [(e, p) for e, p in conflicts if p not in allowed]
        if remaining:
            conflicts = remaining
        else:
            force = True  # (the fields are taken over, as with --force-conflicts)
    if conflicts and not force:
        raise _conflict(conflicts)
    taken = {p for _, p in conflicts}
    for e in entries:
        if not (e.get("manager") == manager and e.get("operation") == "Apply"):
            e["fieldsV1"] = to_fields(from_fields(e.get("fieldsV1")) - taken)
            others |= from_fields(e["fieldsV1"])
    obj = merge(copy.deepcopy(cur), config)
    for p in sorted(before - mine - others, key=len, reverse=True):  # dropped from the configuration, unowned
        _remove(obj, p)
    old = next((e for e in entries if e.get("manager") == manager and e.get("operation") == "Apply"), None)
    entries = [e for e in entries if e is not old]
    same = old is not None and before == mine
    entries.append(_entry(manager, "Apply", api_version, str(old.get("time")) if same and old else at, mine))
    _store(obj, entries)
    return obj


def _from_last_applied(cur: dict) -> set[Path]:
    """The fields a client-side ``kubectl apply`` set (its last-applied-configuration) that the object still holds
    as it set them: ``kubectl apply --server-side`` takes these over without a conflict (the API server's
    lastAppliedManager; for the field manager ``kubectl`` only)."""
    text = ((cur.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        last = json.loads(text) if text else None
    except ValueError:
        return set()
    if not isinstance(last, dict):
        return set()
    return {p for p, v in leaves(last).items() if p[-1] == _ITEM or _value(cur, p) == (True, v)}


def _remove(obj: dict, path: Path) -> None:
    if path[-1] == _ITEM:
        path = path[:-1]
    present, parent = _value(obj, path[:-1])
    if not present or not path:
        return
    last = path[-1]
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(parent, list):
        key = json.loads(last[2:])
        parent[:] = [x for x in parent if not (isinstance(x, dict) and all(x.get(a) == b for a, b in key.items()))]


def _conflict(conflicts: list[tuple[dict, Path]]) -> KubeError:
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {_who(e)}", "field": show(p)}
        for e, p in conflicts
    ]
    if len(conflicts) == 1:
        e, p = conflicts[0]
        msg = f"Apply failed with 1 conflict: conflict with {_who(e)}: {show(p)}"
    else:
        lines: list[str] = []
        for who in sorted({_who(e) for e, _ in conflicts}):
            lines.append(f"conflicts with {who}:")
            lines += [f"- {show(p)}" for e, p in conflicts if _who(e) == who]
        msg = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return KubeError(409, "Conflict", msg, {"causes": causes})
