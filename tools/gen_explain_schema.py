"""Write the schema the box's ``kubectl explain`` reads: ``ncui/sim/kube/explain_schema.json.gz``.

    .venv/bin/python tools/gen_explain_schema.py          # write it (after adding a kind the box serves,
                                                           # or moving the test extra's `kubernetes` pin)
    .venv/bin/python tools/gen_explain_schema.py --check  # exit 1 when the file is not what it would write

It is derived from the models of the official ``kubernetes`` package (a test-extra dependency; ncui itself does
not install it): for each kind the box serves (``ncui.sim.kube.objects.BY_GV``), each field's JSON name, type and
description, and those of the types its fields use. ``ncui/sim/kube/openapi.py`` builds kubectl's OpenAPI v3
documents from it; tests/test_explain_schema.py fails when the file is stale.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "ncui" / "sim" / "kube" / "explain_schema.json.gz"


def _model_of(models: Any, version: str, kind: str) -> Any:
    v = version.capitalize()
    return getattr(models, f"Core{v}{kind}", None) or getattr(models, f"{v}{kind}", None)  # CoreV1Event first


def _ref_name(model_name: str) -> str:
    """``V1PodSpec`` → ``io.k8s.ncui.v1.PodSpec``: kubectl explain names a field's type by the last part."""
    m = re.match(r"^(?:Core)?(V\d+(?:alpha\d+|beta\d+)?)(.+)$", model_name)
    return f"io.k8s.ncui.{m.group(1).lower()}.{m.group(2)}" if m else f"io.k8s.ncui.{model_name}"


def _type_schema(models: Any, t: str, schemas: dict) -> dict:
    t = t.strip()
    if t[:5] in ("List[", "list["):
        return {"type": "array", "items": _bare(_type_schema(models, t[5:-1], schemas))}
    if t[:5] in ("Dict[", "dict("):  # Dict[str, X]
        value = _type_schema(models, t[5:-1].split(",", 1)[1], schemas)
        return {"type": "object", "additionalProperties": _bare(value)}
    simple = {
        "str": {"type": "string"},
        "int": {"type": "integer", "format": "int32"},
        "float": {"type": "number", "format": "double"},
        "bool": {"type": "boolean"},
        "datetime": {"type": "string", "format": "date-time"},
        "date": {"type": "string", "format": "date"},
        "object": {"type": "object", "x-kubernetes-int-or-string": True},
    }
    if t in simple:
        return dict(simple[t])
    model = getattr(models, t, None)
    if model is None:
        return {"type": "object"}
    _schemas_of(models, model, schemas)
    return {"allOf": [{"$ref": f"#/components/schemas/{_ref_name(t)}"}]}


def _bare(schema: dict) -> dict:
    """An array's items or a map's values name their type with a plain ``$ref`` (kubectl explain follows it)."""
    return schema["allOf"][0] if "allOf" in schema else schema


def _schemas_of(models: Any, model: Any, schemas: dict, name: str | None = None) -> None:
    """Add ``model``'s schema (and those of the types its fields use) to ``schemas``: each field's JSON name,
    type and description as the package's generated model carries them."""
    name = name or _ref_name(model.__name__)
    if name in schemas:
        return
    doc = (model.__doc__ or "").strip().split("\n\n")[0].strip()
    out: dict = {"type": "object", "description": doc, "properties": {}}
    schemas[name] = out  # before the fields: a type may refer to itself
    fields = getattr(model, "model_fields", {})
    required = []
    for attr, t in model.openapi_types.items():
        key = model.attribute_map.get(attr, attr)
        prop = _type_schema(models, t, schemas)
        info = fields.get(attr)
        if info is not None and info.description:
            prop["description"] = info.description
        if info is not None and info.is_required():
            required.append(key)
        out["properties"][key] = prop
    if required:
        out["required"] = required


def generate() -> dict:
    """``{"kinds": {"group/version/Kind": schema or None}, "types": {ref name: schema}, "generated_from": …}``:
    a kind's own schema (its fields' types as ``$ref``s into ``types``); None for a kind the package lacks."""
    import kubernetes
    from kubernetes.client import models

    sys.path.insert(0, str(ROOT))
    from ncui.sim.kube.objects import BY_GV

    kinds: dict[str, dict | None] = {}
    types: dict[str, dict] = {}
    for (group, version), resources in BY_GV.items():
        for r in resources:
            model = _model_of(models, version, r.kind)
            key = f"{group}/{version}/{r.kind}"
            if model is None:
                kinds[key] = None
                continue
            schemas: dict = {}
            _schemas_of(models, model, schemas, name="<kind>")
            kinds[key] = schemas.pop("<kind>")
            types.update(schemas)
    return {"generated_from": f"kubernetes {kubernetes.__version__}", "kinds": kinds, "types": types}


def encode(data: dict) -> bytes:
    """The file's bytes: the same data, the same bytes (sorted keys, no gzip timestamp)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the file differs from what would be written")
    args = ap.parse_args(argv)
    data = generate()
    if args.check:
        current = json.loads(gzip.decompress(OUT.read_bytes())) if OUT.exists() else None
        if current != data:
            print(f"{OUT.relative_to(ROOT)} is stale: run tools/gen_explain_schema.py", file=sys.stderr)
            return 1
        print(f"{OUT.relative_to(ROOT)} is up to date ({data['generated_from']})")
        return 0
    OUT.write_bytes(encode(data))
    print(
        f"wrote {OUT.relative_to(ROOT)}: {len(data['kinds'])} kinds, {len(data['types'])} types, "
        f"{OUT.stat().st_size // 1024} KiB, from {data['generated_from']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
