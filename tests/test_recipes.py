"""Recipes: fit, the vendor rule against the box's catalog, Something else, and the money check."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr

from ncui import recipes as R
from ncui.api import models as m
from ncui.api.client import NCClient

from .conftest import endpoints_of

H100 = m.K8sCluster(
    name="halcyon",
    market=True,
    gpus_per_node=8,
    cpu_worker=True,
    shared_volume=True,
    gpu_vendor="nvidia",
    gpu_model="H100-SXM-80GB",
)
AMD = H100.model_copy(update={"name": "marlin", "market": False, "gpu_vendor": "amd", "gpu_model": "MI300X"})
BARE = H100.model_copy(update={"shared_volume": False, "cpu_worker": False})
PACKING = H100.model_copy(update={"reservation_packing": True, "reserved_nodes": 1})


async def catalog(sim):
    async with NCClient(endpoints_of(sim), SecretStr(sim.token)) as nc:
        return {r.name: r for r in await nc.catalog()}


async def test_fit_and_train_first(sim):
    cat = await catalog(sim)
    ordered = [r.name for r in R.for_kind(cat.values(), "kubernetes")]
    assert ordered[0] == "nanogpt" and "slurm-nanogpt" not in ordered
    assert R.fit(cat["nanogpt"], AMD).runnable  # falls back to the default file
    kimi = R.fit(cat["kimi-k3"], AMD)
    assert not kimi.runnable and "not offered on amd" in kimi.reasons[0]
    fin = R.fit(cat["finance-analyst"], BARE)
    assert not fin.runnable and any("shared volume" in r for r in fin.reasons)
    bare_kimi = R.fit(cat["kimi-k3"], BARE)
    assert bare_kimi.runnable and bare_kimi.skipped_steps == ("kimi-k3-weights-to-shared",)


async def test_resolve_applies_the_vendor_rule(sim):
    cat = await catalog(sim)
    async with NCClient(endpoints_of(sim), SecretStr(sim.token)) as nc:
        plan = await R.resolve(nc, cat["nanogpt"], AMD)
        assert [s.file for s in plan.steps] == ["nanogpt-job.yaml"]
        assert plan.steps[0].note == "nanogpt-job-amd.yaml: 404, using nanogpt-job.yaml"
        assert plan.gpus == 8 and plan.steps[0].docs[0]["kind"] == "Job"
        assert plan.stop == ("kubectl --context marlin delete job nanogpt",)
        nv = await R.resolve(nc, cat["nanogpt"], H100)
        assert nv.steps[0].file == "nanogpt-job-nvidia.yaml" and nv.steps[0].note == ""
        kimi = await R.resolve(nc, cat["kimi-k3"], H100)
        assert [s.stem for s in kimi.steps] == ["kimi-k3-weights-to-shared", "kimi-k3-serve", "kimi-k3-loadtest"]
        assert kimi.steps[-1].optional and kimi.gpus == 8
        assert "kimi-k3-loadtest" not in [d["metadata"]["name"] for d in kimi.all_docs()]
        with pytest.raises(R.NotOffered):
            await R.resolve(nc, cat["kimi-k3"], AMD)
        fin = await R.resolve(nc, cat["finance-analyst"], H100)
        assert fin.gpus == 8  # the serve leg takes the node the tune frees: one node


def test_something_else_skeleton():
    doc = R.custom_job(R.CustomJob("ghcr.io/me/train:1", "python train.py", 1), H100)
    spec = doc["spec"]["template"]["spec"]
    c = spec["containers"][0]
    assert c["image"] == "ghcr.io/me/train:1" and c["command"] == ["sh", "-c", "python train.py"]
    assert c["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert spec["restartPolicy"] == "Never" and spec["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert spec["volumes"][0]["emptyDir"]["medium"] == "Memory"
    assert doc["spec"]["podReplacementPolicy"] == "Failed"
    rules = doc["spec"]["podFailurePolicy"]["rules"]
    assert rules[0]["onPodConditions"][0]["type"] == "DisruptionTarget" and rules[1]["onExitCodes"]["values"] == [143]
    two = R.custom_job(R.CustomJob("img", "cmd", 2, reclaim_tolerant=False), H100)
    assert two["spec"]["parallelism"] == 2 and "podFailurePolicy" not in two["spec"]


@pytest.mark.parametrize(
    "job,why",
    [
        (R.CustomJob("", "cmd"), "image is empty"),
        (R.CustomJob("img", ""), "command is empty"),
        (R.CustomJob("img", "cmd", 0), "nodes must be"),
        (R.CustomJob("img", "cmd", name="My_Job"), "job name"),
        (R.CustomJob("img", "cmd", gpus_per_pod=4), "partial node"),
        (R.CustomJob("img", "cmd", gpus_per_pod=16), "more than a node holds: a pod runs on one node of 8 GPUs"),
        (R.CustomJob("img", "cmd", gpus_per_pod=8 * 10**22), "more than a node holds"),
        (R.CustomJob("img", "cmd", 65), "nodes must be a whole number from 1 to 64"),
        (R.CustomJob("img", "cmd", True), "nodes must be"),
        (R.CustomJob("img", "python a.py\nrm -rf /data"), "line break or control character"),
        (R.CustomJob("img", "echo \x1b[2Jhi"), "line break or control character"),
        (R.CustomJob("img\x1b[31m", "cmd"), "control characters"),
    ],
)
def test_something_else_refuses_with_a_reason(job, why):
    with pytest.raises(ValueError) as ei:
        R.custom_job(job, H100)
    assert why in str(ei.value)


def test_the_something_else_summary_states_the_image_and_the_whole_command():
    command = "python train.py " + " ".join(f"--opt{i}=x" for i in range(400))  # a long command, one line
    plan = R.custom_plan(R.CustomJob("ghcr.io/me/train:1", command, 2), H100)
    assert "Image: ghcr.io/me/train:1" in plan.summary
    assert f"Command (sh -c, exactly): {command}\n" in plan.summary  # whole, never cut
    assert "2 pods × 8 GPUs" in plan.summary


@pytest.mark.parametrize("text,n", [("1", 1), (" 2 ", 2), ("08", 8), ("9" * 50, 10**6)])
def test_counts_typed(text, n):
    assert R.parse_count(text, "nodes") == n


@pytest.mark.parametrize("bad", ["", "abc", "٣", "1_0", "+2", "-1", "8e22", "1.0", "2 3", "0x8", "inf"])
def test_counts_typed_otherwise_are_refused_with_what_to_type(bad):
    with pytest.raises(ValueError) as ei:
        R.parse_count(bad, "GPUs per pod")
    assert str(ei.value).startswith("GPUs per pod: ") and "type digits 0-9, like 1" in str(ei.value)


@given(st.text(alphabet=st.sampled_from("0123456789 _+-e.٣x"), max_size=10) | st.text(max_size=8))
def test_counts_grammar(text):
    """A count is accepted iff ASCII digits; custom_job then takes it iff it fits the cluster."""
    try:
        n = R.parse_count(text, "nodes")
    except ValueError:
        assert not re.fullmatch(r"[0-9]+", text.strip())
        return
    assert re.fullmatch(r"[0-9]+", text.strip()) and n == min(int(text), 10**6)
    try:
        R.custom_job(R.CustomJob("img", "cmd", n), H100)
    except ValueError as e:
        assert not 1 <= n <= R.MAX_NODES and "nodes must be a whole number from 1 to 64" in str(e)
    else:
        assert 1 <= n <= R.MAX_NODES


def test_partial_node_allowed_with_reservation_packing():
    doc = R.custom_job(R.CustomJob("img", "cmd", gpus_per_pod=4), PACKING)
    assert doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "4"}


def test_money_check_and_ceiling_verdicts():
    ok = R.money_check(8, 5_000_000, 100_000_000, True)
    assert ok.ok and "8 GPUs × $5.00 × 2 h = $80.00" in ok.sentence and ok.cost_per_hour == 40_000_000
    short = R.money_check(8, 5_000_000, 42_100_000, True)
    assert not short.ok and short.topup == 37_900_000
    assert "top up $37.90 on the console's Billing page" in short.sentence
    cannot = R.money_check(8, 5_000_000, 42_100_000, False)
    assert "cannot buy credits" in cannot.sentence
    finer = R.money_check(1, 4_105_000, 100_000_000, True)  # a standing limit set finer than cents
    assert "1 GPUs × $4.105 × 2 h = $8.21" in finer.sentence  # not "$4.10 × 2 h = $8.21"
    ask = R.bid_confirmation("halcyon", 4_105_000, 1, None)
    assert "limit price of $4.105/GPU-h" in ask and "at most $4.105 per hour" in ask

    ladder = m.Ladder(
        gpu_model="H100",
        gpus_per_node=8,
        as_of="2026-11-02T09:00:00Z",
        rungs=[m.LadderRung(nodes=1, price_per_gpu_hour=3.4), m.LadderRung(nodes=2, price_per_gpu_hour=3.8)],
        floor_price_per_gpu_hour=1.5,
    )
    assert R.judge_ceiling(1_000_000, ladder, 1).level == "refuse"
    assert "bid-too-low" in R.judge_ceiling(1_000_000, ladder, 1).message
    warn = R.judge_ceiling(3_000_000, ladder, 1)
    assert warn.ok and warn.level == "warn" and "would not win a node" in warn.message
    good = R.judge_ceiling(3_900_000, ladder, 1)
    assert good.level == "ok" and good.nodes_won == 2
    assert not R.judge_ceiling(0, ladder, 1).ok
    text = R.bid_confirmation("halcyon", 4_000_000, 8, 3_400_000)
    assert "$32.00 per hour" in text and "keeps pulling nodes" in text and "withdraw" in text
