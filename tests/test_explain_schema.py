"""The box's `kubectl explain` schema: kept in the package (ncui/sim/kube/explain_schema.json.gz), generated from
the official client's models (tools/gen_explain_schema.py), and read without the `kubernetes` package installed."""

from __future__ import annotations

import gzip
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("gen_explain_schema", ROOT / "tools" / "gen_explain_schema.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_packaged_schema_is_what_the_client_models_give():
    tool = _tool()
    kept = json.loads(gzip.decompress(tool.OUT.read_bytes()))
    # (stale after a kind is added to the box, or the test extra's kubernetes pin moves: run the tool)
    assert kept == tool.generate(), "explain_schema.json.gz is stale: run .venv/bin/python tools/gen_explain_schema.py"
    assert kept["kinds"]["batch/v1/Job"] is not None and "io.k8s.ncui.v1.JobSpec" in kept["types"]


def test_the_box_builds_its_openapi_documents_without_the_kubernetes_package():
    code = """
import json, sys
sys.modules["kubernetes"] = None  # any import of it fails
from ncui.sim.kube import openapi
doc = json.loads(openapi.doc_bytes("batch", "v1"))
s = doc["components"]["schemas"]
spec = s["io.k8s.api.batch.v1.Job"]["properties"]["spec"]["allOf"][0]["$ref"].rsplit("/", 1)[1]
rules = s[s[spec]["properties"]["podFailurePolicy"]["allOf"][0]["$ref"].rsplit("/", 1)[1]]["properties"]["rules"]
print(spec, rules["items"]["$ref"].rsplit("/", 1)[1], "kubernetes" in sys.modules and sys.modules["kubernetes"])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.split() == ["io.k8s.ncui.v1.JobSpec", "io.k8s.ncui.v1.PodFailurePolicyRule", "None"], out
