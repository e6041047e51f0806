"""schemathesis (a fuzzer from outside the project) against the simulator's published OpenAPI documents.

No 5xx, every status and body as documented, schema-violating requests refused. Skipped check:
``positive_data_acceptance`` — the contract refuses some schema-valid bodies on business rules
(``bid-too-low`` under a floor that moves with the market), which the schema cannot express.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .simproc import SimProcess

ST = shutil.which("st") or str(Path(sys.executable).with_name("st"))


@pytest.mark.parametrize(
    "area,scenario", [("billing", "k8s-market"), ("k8s", "k8s-market"), ("market", "k8s-market"), ("vm", "vm")]
)
def test_fuzz_openapi(area, scenario, tmp_path):
    with SimProcess("--scenario", scenario, "--speed", "0") as sim:
        cmd = [
            ST,
            "run",
            f"{sim.env['NC_API']}/api/{area}/openapi.json",
            "-H",
            f"Authorization: Bearer {sim.env['NC_TOKEN']}",
            "--checks",
            "all",
            "--exclude-checks",
            "positive_data_acceptance",
            "--phases",
            "coverage,fuzzing,stateful",
            "--max-examples",
            "25",
            "--seed",
            "1",
            "--workers",
            "1",
            "--request-timeout",
            "10",
            "--no-color",
        ]
        r = subprocess.run(
            cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, "SCHEMATHESIS_HOOKS": ""}
        )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert "passed" in out and "failed" not in out.split("SUMMARY")[-1]
