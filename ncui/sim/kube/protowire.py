"""The Kubernetes protobuf wire format, read as the API server reads it: ``application/vnd.kubernetes.protobuf``.

kubectl's typed commands (``kubectl create secret generic …``, ``create configmap|job|deployment|namespace…``, and
``auth can-i``'s reviews) send their object as protobuf and do not fall back to JSON on a 415. The body is the
``k8s\\0`` magic, then a ``runtime.Unknown`` (1: typeMeta {1: apiVersion, 2: kind}, 2: raw, the object's own
message). The object's fields, numbers and JSON names are the Go types' (``proto_schema.json.gz``, written by
tools/gen_proto_schema.py from k8s.io/api's and k8s.io/apimachinery's struct tags); ``decode`` gives the JSON the
API server would store, by Go's rules: a field the Go type omits when empty (``omitempty``) is left out when it is
empty (``""``, 0, false, no items), a struct field never is (``template: {}``), a zero time is ``null``
(``creationTimestamp: null``), ``[]byte`` is base64. ``go_value`` prints a value as the API server's validation
messages do (Go syntax: ``core.PodTemplateSpec{…}``; here with the fields that are set).
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import struct
from datetime import datetime, timedelta, timezone
from importlib import resources
from typing import Any

MAGIC = b"k8s\x00"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class WireError(ValueError):
    """The body is not the protobuf it says it is."""


@functools.cache
def schema() -> dict:
    with resources.files(__package__).joinpath("proto_schema.json.gz").open("rb") as f:
        return json.loads(gzip.decompress(f.read()))


def fields(buf: bytes) -> dict[int, list]:
    """A protobuf message's fields: number → values in order (varints as ints, length-delimited as bytes,
    fixed64/fixed32 as their bytes)."""
    out: dict[int, list] = {}
    i, n = 0, len(buf)

    def varint() -> int:
        nonlocal i
        v = shift = 0
        while True:
            if i >= n:
                raise WireError("a varint runs past the end")
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v
            if shift > 70:
                raise WireError("a varint is too long")

    while i < n:
        key = varint()
        num, wire = key >> 3, key & 7
        val: Any
        if wire == 0:
            val = varint()
        elif wire == 2:
            size = varint()
            if i + size > n:
                raise WireError("a field runs past the end")
            val, i = buf[i : i + size], i + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if i + size > n:
                raise WireError("a field runs past the end")
            val, i = buf[i : i + size], i + size
        else:
            raise WireError(f"protobuf wire type {wire}")
        out.setdefault(num, []).append(val)
    return out


def envelope(raw: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, the object's message) of a ``k8s\\0`` body."""
    if not raw.startswith(MAGIC):
        raise WireError("no k8s protobuf envelope")
    unknown = fields(raw[len(MAGIC) :])
    tm = fields(_last(unknown, 1, b""))
    return _text(_last(tm, 1, b"")), _text(_last(tm, 2, b"")), _last(unknown, 2, b"")


def decode(raw: bytes) -> dict:
    """The JSON object of a ``k8s\\0`` body, with its apiVersion and kind; WireError when it cannot be read, or is of
    a kind the schema does not hold (``KeyError``: the kind's ``apiVersion/kind``)."""
    api, kind, body = envelope(raw)
    name = schema()["kinds"].get(f"{api}/{kind}")
    if name is None:
        raise KeyError(f"{api}/{kind}")
    obj = {"kind": kind, "apiVersion": api}
    obj.update(_message(name, body))
    return obj


# ---- one value by its schema type ------------------------------------------------------------------


def _last(f: dict[int, list], num: int, default: Any) -> Any:
    vals = f.get(num)
    return vals[-1] if vals else default


def _text(b: Any) -> str:
    if not isinstance(b, bytes):
        raise WireError("a string field is not length-delimited")
    try:
        return b.decode()
    except UnicodeDecodeError:
        raise WireError("a string field is not UTF-8") from None


def _signed(v: Any, bits: int) -> int:
    if not isinstance(v, int):
        raise WireError("an integer field is not a varint")
    v &= (1 << 64) - 1
    if v >= 1 << 63:
        v -= 1 << 64
    if bits == 32:  # (a negative int32 is sent sign-extended to 64 bits)
        v = (v + (1 << 31)) % (1 << 32) - (1 << 31)
    return v


def _time(b: bytes, micro: bool) -> str | None:
    f = fields(b)
    secs, nanos = _signed(_last(f, 1, 0), 64), _signed(_last(f, 2, 0), 32)
    if not f:
        return None  # the zero time: Go's JSON is null
    t = _EPOCH + timedelta(seconds=secs, microseconds=nanos // 1000)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _duration(ns: int) -> str:
    """Go's ``time.Duration.String`` (``1h0m0s``, ``1.5s``, ``0s``)."""
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return f"{sign}{_frac(ns, size)}{unit}"
    h, rest = divmod(ns, 3_600_000_000_000)
    m, rest = divmod(rest, 60_000_000_000)
    s = _frac(rest, 1_000_000_000) + "s"
    return sign + (f"{h}h{m}m{s}" if h else f"{m}m{s}" if m else s)


def _frac(v: int, size: int) -> str:
    whole, part = divmod(v, size)
    digits = str(part).rjust(len(str(size)) - 1, "0").rstrip("0") if part else ""
    return f"{whole}.{digits}" if digits else str(whole)


def _one(t: Any, raw: Any) -> Any:
    """One occurrence's value."""
    if t == "string":
        return _text(raw)
    if t == "bool":
        return bool(_signed(raw, 64))
    if t in ("int32", "int64", "byte"):
        return _signed(raw, 32 if t == "int32" else 64)
    if t == "float64":
        if not isinstance(raw, bytes) or len(raw) != 8:
            raise WireError("a double field is not fixed64")
        v = struct.unpack("<d", raw)[0]
        return int(v) if v.is_integer() else v
    if not isinstance(raw, bytes):
        raise WireError(f"a {t} field is not length-delimited")
    if t == "bytes":
        return base64.b64encode(raw).decode()
    if t == "quantity":
        return _text(_last(fields(raw), 1, b"")) or "0"
    if t == "intstr":
        f = fields(raw)
        return _text(_last(f, 3, b"")) if _signed(_last(f, 1, 0), 64) == 1 else _signed(_last(f, 2, 0), 32)
    if t in ("time", "microtime"):
        return _time(raw, t == "microtime")
    if t == "duration":
        return _duration(_signed(_last(fields(raw), 1, 0), 64))
    if t in ("fieldsv1", "rawext"):
        data = _last(fields(raw), 1, b"")
        try:
            return json.loads(data) if data else None
        except ValueError:
            raise WireError(f"a {t} field is not JSON") from None
    if isinstance(t, dict) and "msg" in t:
        return _message(t["msg"], raw)
    if isinstance(t, dict) and "map" in t:
        kt, vt = t["map"]
        f = fields(raw)
        key = _one(kt, f[1][-1]) if 1 in f else _zero(kt)
        return key, (_value(vt, f[2]) if 2 in f else _zero(vt))
    raise WireError(f"unreadable type {t!r}")


def _zero(t: Any) -> Any:
    """Go's zero value of ``t``, as its JSON."""
    if t == "string":
        return ""
    if t == "bool":
        return False
    if t in ("int32", "int64", "byte", "float64"):
        return 0
    if t == "quantity":
        return "0"
    if t == "intstr":
        return 0
    if t == "duration":
        return "0s"
    if isinstance(t, dict) and "msg" in t:
        return _message(t["msg"], b"")
    return None  # a nil pointer, slice, map or []byte; a zero time; no raw JSON


def _value(t: Any, raws: list) -> Any:
    """A field's value from all its occurrences (none: the zero value)."""
    if not raws:
        return _zero(t)
    if isinstance(t, dict) and "ptr" in t:
        return _value(t["ptr"], raws)
    if isinstance(t, dict) and "list" in t:
        et = t["list"]
        out = []
        for raw in raws:
            if isinstance(raw, bytes) and et in ("int32", "int64", "bool", "byte"):  # packed
                out.extend(_one(et, v) for v in _packed(raw))
            elif isinstance(raw, bytes) and et == "float64" and len(raw) % 8 == 0 and len(raw) != 8:
                out.extend(_one(et, raw[i : i + 8]) for i in range(0, len(raw), 8))
            else:
                out.append(_one(et, raw))
        return out
    if isinstance(t, dict) and "map" in t:
        return dict(_one(t, raw) for raw in raws)
    if isinstance(t, dict) and "msg" in t:
        return _message(t["msg"], b"".join(raws))  # a message sent in parts is their merge
    return _one(t, raws[-1])


def _packed(raw: bytes) -> list[int]:
    """The varints of a packed repeated field."""
    out, v, shift = [], 0, 0
    for b in raw:
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            out.append(v)
            v = shift = 0
    if shift:
        raise WireError("a packed field ends inside a varint")
    return out


def _empty(v: Any) -> bool:
    """Go's ``omitempty``: false, 0, "", nil, no items. (A struct is never empty: its JSON is a dict here only when
    the type is a struct or a pointer that was set, so a dict is kept.)"""
    return v is None or v is False or (v == 0 and not isinstance(v, bool)) or (isinstance(v, (str, list)) and not v)


def _message(name: str, raw: bytes) -> dict:
    msg = schema()["messages"][name]
    f = fields(raw)
    out: dict = {}
    for num, js, _go, flags, t in msg["fields"]:
        v = _value(t, f.get(num, []))
        if "i" in flags:
            if isinstance(v, dict):
                out.update(v)
            continue
        if "o" in flags and (_empty(v) or (isinstance(v, dict) and not v and _is_map(t))):
            continue
        out[js] = v
    return out


def _is_map(t: Any) -> bool:
    while isinstance(t, dict) and "ptr" in t:
        t = t["ptr"]
    return isinstance(t, dict) and "map" in t


# ---- a value as the API server's messages print it ---------------------------------------------------


def field_type(kind: str, path: str) -> Any:
    """The schema type of ``path`` (``spec.template``) in ``kind`` (``batch/v1/Job``), None if unknown."""
    t: Any = {"msg": schema()["kinds"].get(kind)}
    for part in path.split("."):
        while isinstance(t, dict) and "ptr" in t:
            t = t["ptr"]
        if not (isinstance(t, dict) and t.get("msg")):
            return None
        found = _field(t["msg"], part)
        if found is None:
            return None
        t = found
    return t


def _field(msg: str, js: str) -> Any:
    for _num, name, _go, flags, t in schema()["messages"][msg]["fields"]:
        if name == js:
            return t
        if "i" in flags and isinstance(t, dict) and "msg" in t:
            inner = _field(t["msg"], js)
            if inner is not None:
                return inner
    return None


def go_value(t: Any, v: Any) -> str:
    """``v`` (JSON) of schema type ``t`` in Go syntax, as ``field.Invalid`` prints a value: a struct with the fields
    that are set (``core.PodTemplateSpec{Spec:core.PodSpec{Containers:[]core.Container{…}}}``)."""
    while isinstance(t, dict) and "ptr" in t:
        t = t["ptr"]
    if v is None:
        return "null"  # (a nil pointer, as field.Invalid prints one)
    if isinstance(t, dict) and "msg" in t and isinstance(v, dict):
        msg = schema()["messages"][t["msg"]]
        parts = []
        for _num, js, go, flags, ft in msg["fields"]:
            if "i" in flags:
                inner = go_value(ft, v)
                if not inner.endswith("{}"):
                    parts.append(f"{go}:{inner}")
            elif js in v and v[js] not in (None, "", [], {}):
                parts.append(f"{go}:{go_value(ft, v[js])}")
        return f"{msg['go']}{{{', '.join(parts)}}}"
    if isinstance(t, dict) and "list" in t and isinstance(v, list):
        return f"{_go_type(t)}{{{', '.join(go_value(t['list'], x) for x in v)}}}"
    if isinstance(t, dict) and "map" in t and isinstance(v, dict):
        kt, vt = t["map"]
        inner = ", ".join(f"{go_value(kt, k)}:{go_value(vt, x)}" for k, x in sorted(v.items()))
        return f"{_go_type(t)}{{{inner}}}"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _go_type(t: Any) -> str:
    if isinstance(t, dict):
        if "ptr" in t:
            return "*" + _go_type(t["ptr"])
        if "list" in t:
            return "[]" + _go_type(t["list"])
        if "map" in t:
            return f"map[{_go_type(t['map'][0])}]{_go_type(t['map'][1])}"
        if "msg" in t:
            return schema()["messages"][t["msg"]]["go"]
    return {
        "bytes": "[]uint8",
        "quantity": "resource.Quantity",
        "intstr": "intstr.IntOrString",
        "time": "v1.Time",
        "microtime": "v1.MicroTime",
        "duration": "v1.Duration",
        "fieldsv1": "v1.FieldsV1",
        "rawext": "runtime.RawExtension",
    }.get(t, str(t))
