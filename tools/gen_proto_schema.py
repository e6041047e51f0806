"""Write the protobuf schema the box's API server reads typed objects with: ``ncui/sim/kube/proto_schema.json.gz``.

    .venv/bin/python tools/gen_proto_schema.py --api API_DIR --apimachinery APIMACHINERY_DIR

kubectl's typed commands (``kubectl create secret|configmap|job|deployment|namespace|service…``) send their object
as ``application/vnd.kubernetes.protobuf`` and do not fall back to JSON on a 415. The wire format's field numbers
and the JSON the API server makes of each field are in the Go types' struct tags (``protobuf:"bytes,6,opt,name=
template"`` and ``json:"template,omitempty"``): this reads them from a checkout of ``k8s.io/api`` and
``k8s.io/apimachinery`` (the tags the box's Kubernetes version uses, v0.32.x: ``git clone --branch v0.32.9
https://github.com/kubernetes/api``), and writes, for every type reachable from the kinds the box serves, each
field's number, JSON name, Go name, whether it is omitted when empty, and its type. ``ncui/sim/kube/protowire.py``
decodes with it (no Go, no protobuf package); tests/test_protowire.py checks it against the explain schema.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "ncui" / "sim" / "kube" / "proto_schema.json.gz"

# Go packages by import path → (directory under its checkout, the short name the API server's messages use)
PACKAGES = {
    "k8s.io/api/core/v1": ("api", "core/v1", "core"),
    "k8s.io/api/batch/v1": ("api", "batch/v1", "batch"),
    "k8s.io/api/apps/v1": ("api", "apps/v1", "apps"),
    "k8s.io/api/rbac/v1": ("api", "rbac/v1", "rbac"),
    "k8s.io/apimachinery/pkg/apis/meta/v1": ("apimachinery", "pkg/apis/meta/v1", "v1"),
}
# Types with their own wire and JSON forms (not their Go fields): the decoder knows each by this name
SPECIAL = {
    "k8s.io/apimachinery/pkg/api/resource.Quantity": "quantity",
    "k8s.io/apimachinery/pkg/util/intstr.IntOrString": "intstr",
    "k8s.io/apimachinery/pkg/apis/meta/v1.Time": "time",
    "k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime": "microtime",
    "k8s.io/apimachinery/pkg/apis/meta/v1.Duration": "duration",
    "k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1": "fieldsv1",
    "k8s.io/apimachinery/pkg/runtime.RawExtension": "rawext",
    "k8s.io/apimachinery/pkg/types.UID": "string",
}
SCALARS = {
    "string": "string",
    "bool": "bool",
    "int32": "int32",
    "int64": "int64",
    "int": "int64",
    "float64": "float64",
    "byte": "byte",
}
# The kinds the box serves that a client may send typed, by apiVersion/kind → Go package and type
KINDS = {
    "v1/Pod": "k8s.io/api/core/v1.Pod",
    "v1/Namespace": "k8s.io/api/core/v1.Namespace",
    "v1/Service": "k8s.io/api/core/v1.Service",
    "v1/ServiceAccount": "k8s.io/api/core/v1.ServiceAccount",
    "v1/ConfigMap": "k8s.io/api/core/v1.ConfigMap",
    "v1/Secret": "k8s.io/api/core/v1.Secret",
    "batch/v1/Job": "k8s.io/api/batch/v1.Job",
    "apps/v1/Deployment": "k8s.io/api/apps/v1.Deployment",
    "apps/v1/ReplicaSet": "k8s.io/api/apps/v1.ReplicaSet",
    "rbac.authorization.k8s.io/v1/Role": "k8s.io/api/rbac/v1.Role",
    "rbac.authorization.k8s.io/v1/RoleBinding": "k8s.io/api/rbac/v1.RoleBinding",
}


class Package:
    """One Go package's type declarations: struct fields (name, type text, tag) and named non-struct types."""

    def __init__(self, path: str, directory: Path, short: str) -> None:
        self.path, self.short = path, short
        self.structs: dict[str, list[tuple[str | None, str, str]]] = {}
        self.named: dict[str, str] = {}
        self.imports: dict[str, str] = {}
        for f in sorted(directory.glob("*.go")):
            if f.name.endswith("_test.go") or f.name.startswith("zz_generated") or f.name == "generated.pb.go":
                continue
            self._read(f.read_text())

    def _read(self, text: str) -> None:
        text = re.sub(r"(?m)^\s*//.*$", "", text)
        imports = [
            m.groups()
            for b in re.findall(r"(?ms)^import \((.*?)^\)", text)
            for m in re.finditer(r'(?m)^\s*(\w+\s+)?"([^"]+)"', b)
        ]
        imports += re.findall(r'(?m)^import (\w+ )?"([^"]+)"$', text)
        for alias, path in imports:
            self.imports[(alias or "").strip() or path.rsplit("/", 1)[-1]] = path
        for m in re.finditer(r"(?ms)^type (\w+) struct \{\n(.*?)^\}", text):
            fields = []
            for line in m.group(2).splitlines():
                line = line.strip()
                if not line:
                    continue
                fm = re.match(r"^(\w+)\s+([^`]+?)\s*(`.*`)?$", line)
                em = re.match(r"^([\w.*]+)\s*(`.*`)?$", line)
                if fm and " " in line.split("`")[0].strip():
                    fields.append((fm.group(1), fm.group(2).strip(), fm.group(3) or ""))
                elif em:  # an embedded type
                    fields.append((None, em.group(1), em.group(2) or ""))
            self.structs[m.group(1)] = fields
        for m in re.finditer(r"(?m)^type (\w+) ((?:\[\]|map\[|\*)?[\w.\[\]*]+)\s*$", text):
            if m.group(2) != "struct":
                self.named[m.group(1)] = m.group(2)


def _tag(tag: str, key: str) -> str | None:
    m = re.search(rf'{key}:"([^"]*)"', tag)
    return m.group(1) if m else None


class Builder:
    def __init__(self, api: Path, machinery: Path) -> None:
        roots = {"api": api, "apimachinery": machinery}
        self.pkgs = {p: Package(p, roots[r] / d, s) for p, (r, d, s) in PACKAGES.items()}
        self.messages: dict[str, dict] = {}

    def qualify(self, pkg: Package, name: str) -> str:
        if "." in name:
            alias, bare = name.split(".", 1)
            return f"{pkg.imports[alias]}.{bare}"
        return f"{pkg.path}.{name}"

    def type_of(self, pkg: Package, text: str) -> object:
        """A Go type expression as the schema writes it."""
        if text.startswith("*"):
            return {"ptr": self.type_of(pkg, text[1:])}
        if text == "[]byte":
            return "bytes"
        if text.startswith("[]"):
            return {"list": self.type_of(pkg, text[2:])}
        if text.startswith("map["):
            depth, i = 0, 3
            for i in range(3, len(text)):
                depth += {"[": 1, "]": -1}.get(text[i], 0)
                if depth == 0:
                    break
            return {"map": [self.type_of(pkg, text[4:i]), self.type_of(pkg, text[i + 1 :])]}
        if text in SCALARS:
            return SCALARS[text]
        full = self.qualify(pkg, text)
        if full in SPECIAL:
            return SPECIAL[full]
        owner, bare = full.rsplit(".", 1)
        target = self.pkgs.get(owner)
        if target is None:
            raise SystemExit(f"type {full} (in {pkg.path}) is outside the packages read")
        if bare in target.named:
            return self.type_of(target, target.named[bare])
        if bare not in target.structs:
            raise SystemExit(f"type {full} is not declared in {target.path}")
        name = f"{target.short}.{bare}" if target.short != "v1" else f"meta.{bare}"
        if name not in self.messages:
            self.messages[name] = {}  # before the fields: a type may refer to itself
            self.messages[name] = self.message(target, bare)
        return {"msg": name}

    def message(self, pkg: Package, bare: str) -> dict:
        """``{"go": Go name as the API server prints it, "fields": [[number, json, go name, flags, type], …]}``;
        flags: ``o`` omitted when empty, ``i`` inlined into the parent's JSON."""
        fields = []
        for name, text, tag in pkg.structs[bare]:
            proto = _tag(tag, "protobuf")
            if proto is None or proto == "-":
                continue  # TypeMeta (the envelope carries it), or not on the wire
            parts = proto.split(",")
            num = int(parts[1])
            js = _tag(tag, "json")
            jname, *opts = (js if js is not None else "").split(",")
            if jname == "-":
                jname = ""
            inline = not jname and (name is None or "inline" in opts)
            flags = ("o" if "omitempty" in opts else "") + ("i" if inline else "")
            go = name or text.lstrip("*").rsplit(".", 1)[-1]
            fields.append([num, jname, go, flags, self.type_of(pkg, text)])
        return {"go": f"{pkg.short}.{bare}", "fields": sorted(fields, key=lambda f: f[0])}

    def build(self) -> dict:
        kinds = {}
        for key, full in KINDS.items():
            owner, bare = full.rsplit(".", 1)
            t = self.type_of(self.pkgs[owner], bare)
            assert isinstance(t, dict)
            kinds[key] = t["msg"]
        return {"kinds": kinds, "messages": dict(sorted(self.messages.items()))}


def encode(data: dict) -> bytes:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--api", type=Path, required=True, help="a checkout of k8s.io/api (github.com/kubernetes/api)")
    ap.add_argument("--apimachinery", type=Path, required=True, help="a checkout of k8s.io/apimachinery")
    ap.add_argument("--source", default="", help="what the checkouts are, for the file (e.g. v0.32.9)")
    args = ap.parse_args(argv)
    data = Builder(args.api, args.apimachinery).build()
    data["generated_from"] = f"k8s.io/api and k8s.io/apimachinery {args.source}".strip()
    OUT.write_bytes(encode(data))
    print(f"wrote {OUT.relative_to(ROOT)}: {len(data['kinds'])} kinds, {len(data['messages'])} messages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
