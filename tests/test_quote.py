"""The quote before the yes and the cost after it (issue 25): the Train question on k8s-market quotes a range that
holds what the run then costs in the box (counted from the box's own charge transactions, read over its API, not
through ncui), and the Report sets both side by side; the quote fits the apply question at 80×24 in every scenario;
``ncui quote`` says the same figures from the box's ladder and catalog; a run's cost counts only its nodes'
charges (a charge that names no node apart)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import httpx
import pytest

from ncui import memory
from ncui import quote as Q
from ncui.api import models as m
from ncui.money import cost_ucredits, fmt_usd

from .apphelp import (
    app_for,
    screen_text,
    to_apply_question,
    to_recipe_question,
    until,
)
from .screentext import joined

MONEY = r"\$([0-9,]+\.[0-9]{2})"


def dollars(text: str) -> int:
    return int(Decimal(text.replace(",", "")) * 1_000_000)


def box_charges(sim, cluster: str) -> list[dict]:
    """The box's charge transactions naming ``cluster``, read over its own API."""
    r = httpx.get(
        f"{sim.api_url}/api/billing/transactions",
        params={"limit": 1000},
        headers={"Authorization": f"Bearer {sim.token}"},
    )
    r.raise_for_status()
    return [t for t in r.json()["transactions"] if t["kind"] == "charge" and t.get("cluster") == cluster]


async def test_the_train_quote_holds_what_the_run_then_costs_in_the_box_and_the_report_shows_both(sim):
    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await to_apply_question(pilot, app, sim)
        text = screen_text(app)
        said = re.search(f"Quote ≈ {MONEY}: .*? Range {MONEY}–{MONEY} ", text)
        assert said, text
        shown_figures = said.groups()
        assert "Duration: the catalog's 18 min run" in text
        await pilot.press("y")
        await until(pilot, lambda: app.query_one("#views").current == "workloads", timeout=30, what="Workloads")
        kept = (app.flows.recall.remembered_job() or {}).get("quote") or {}
        # the quote remembered with the run is the one the question showed
        expected, low, high = kept.get("expected"), kept.get("low"), kept.get("high")
        assert tuple(fmt_usd(x)[1:] for x in (expected, low, high)) == shown_figures, kept
        assert low <= expected <= high
        assert kept["duration"]["source"] == "catalog" and kept["gpus"] == 8

        st = world.main_org.k8s["halcyon"]
        held: set[str] = set()

        def released() -> bool:  # (the box's side: a node was granted, and is gone again)
            held.update(n.name for n in st.market_nodes())
            return bool(held) and not st.market_nodes()

        def done() -> bool:
            job = (app.store.value("k8s_jobs") or {}).get("nanogpt") or {}
            return bool((job.get("status") or {}).get("completionTime")) and released()

        for _ in range(120):  # the node is granted and joins, the run trains and ends, the idle node is released
            if released():
                break
            world.advance(60)
        await until(pilot, done, what="the Job complete and its node released")
        world.advance(11 * 60)  # the meter's next assessment charges the node's last minutes
        charges = box_charges(sim, "halcyon")
        assert charges and all(t.get("node") in held for t in charges), charges  # each names the run's node
        actual = sum(-t["amount_ucredits"] for t in charges)
        assert low <= actual <= high, (fmt_usd(low), fmt_usd(actual), fmt_usd(high))

        await pilot.press("6")
        view = app.query_one("#report")
        await until(
            pilot,
            lambda: view.report is not None and (view.report.get("cost") or {}).get("ucredits") == actual,
            timeout=30,
            what="the report's cost",
        )
        cost = view.report["cost"]
        assert set(cost["nodes"]) <= held and cost["untied_ucredits"] == 0 and cost["quote"]["expected"] == expected
        shown = screen_text(app)
        assert f"{fmt_usd(actual)} on " in shown, shown
        assert f"quoted: about {fmt_usd(expected)}, range {fmt_usd(low)}–{fmt_usd(high)}" in shown, shown
        # the run's length is remembered: the next quote's duration when a catalog says none
        key = app.flows.recall.memory_key()
        (minutes,) = memory.durations(key, "nanogpt")
        assert 10 < minutes < 30


# ---- 80×24: the quote whole in every apply question -------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "downs", "ends"),
    [
        ("k8s-market", 0, "+ 10 min to release the node."),  # Train
        ("k8s-market", 1, "until you stop it (no end)."),  # Serve Kimi K3
        ("k8s-market", 2, "until you stop it (no end)."),  # Serve Inkling
        ("k8s-market", 3, "Then serving: "),  # Post-train
        ("k8s-market", 4, "Duration unknown: per hour only."),  # Something else
        ("k8s-packing", 0, "1 idle node already held hosts it."),  # an idle reserved node hosts it
        ("k8s-fixed-amd", 0, "(the class's price)."),  # a fixed cluster
    ],
)
async def test_the_quote_fits_the_apply_question_at_80x24(sim_factory, scenario, downs, ends):
    sim = sim_factory(scenario)
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await to_recipe_question(pilot, app, sim, downs)
        body = screen_text(app)  # the whole body, scrolled or not
        quote = body[body.index("Quote") : body.index("Create on")].strip()
        assert ends in quote, quote
        await pilot.pause()
        rows = joined("\n".join(strip.text for strip in app.screen._compositor.render_strips()))
        assert quote in rows, (quote, rows)  # on screen as the question opens: no scrolling to read it


# ---- ncui quote ---------------------------------------------------------------------------------------------


def run_quote(sim, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ncui.cli", "quote", *args, "--api", sim.api_url, "--access", sim.access_url],
        env={**os.environ, "NC_TOKEN": sim.token},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def test_ncui_quote_says_the_figures_of_the_box_ladder_and_catalog(sim):
    ladder = httpx.get(f"{sim.api_url}/api/k8s/market/ladder", headers={"Authorization": f"Bearer {sim.token}"}).json()
    win = dollars(f"{ladder['rungs'][0]['price_per_gpu_hour']:.6f}")
    p = run_quote(sim, "nanogpt", "--json", "--ceiling", "7.25")
    assert p.returncode == 0, p.stderr
    q = json.loads(p.stdout)
    assert q["schema"] == "ncui.quote/1" and q["kind"] == "run" and q["gpus"] == 8 and q["cluster"] == "halcyon"
    assert q["duration"] == {"minutes": 18.0, "source": "catalog", "said": "the catalog's 18 min run"}
    assert q["win"] == win and q["ceiling"] == 7_250_000
    assert q["expected"] == cost_ucredits(win, 8, Decimal(18 + Q.RELEASE_MINUTES) / 60)
    assert q["high"] == cost_ucredits(7_250_000, 8, Decimal(str(18 * Q.LONGER + Q.RELEASE_MAX_MINUTES)) / 60)

    p = run_quote(sim, "kimi-k3", "--ceiling", "7.25")  # a serve: per hour until stopped
    assert p.returncode == 0, p.stderr
    assert f"at most {fmt_usd(cost_ucredits(7_250_000, 8, 1))}/h at your ceiling, until you stop it" in joined(p.stdout)
    assert "Idle nodes you already hold are not counted here" in p.stdout  # (what the command does not look at)

    p = run_quote(sim, "nanogpt", "--ceiling", "4,10")
    assert p.returncode == 2 and "no thousands separators" in p.stderr and "Traceback" not in p.stderr
    p = run_quote(sim, "no-such-recipe")
    assert p.returncode == 1 and "no recipe called no-such-recipe" in p.stderr and "Traceback" not in p.stderr


# ---- the parts: where a duration comes from, which charges are a run's ------------------------------------


def test_a_duration_comes_from_the_catalog_else_earlier_runs_else_is_unknown():
    base = {"name": "r", "title": "R", "cluster_kind": "kubernetes", "category": "train", "description": "",
            "default_file": "r.yaml"}  # fmt: skip
    with_minutes = m.Recipe.model_validate(base | {"expected_minutes": 18})
    without = m.Recipe.model_validate(base)
    assert Q.duration_for(with_minutes, [40.0]).source == "catalog"
    d = Q.duration_for(without, [20.0, 24.0, 22.0])
    assert (d.minutes, d.source, d.said) == (22.0, "memory", "your 3 runs of it, 22 min median")
    d = Q.duration_for(without, [])
    assert (d.minutes, d.source) == (None, "none")
    q = Q.quote("run", "r", 8, 1, 4_000_000, 5_000_000, d)
    assert q.kind == "hourly" and q.expected is None and "Duration unknown: per hour only." in " ".join(q.lines())


def test_a_runs_cost_counts_its_nodes_charges_and_keeps_a_charge_that_names_no_node_apart():
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def charge(minutes: int, amount: int, node: str | None, cluster: str | None = "halcyon") -> m.Transaction:
        return m.Transaction.model_validate(
            {"id": f"tx-{minutes}-{node}", "at": t0 + timedelta(minutes=minutes), "kind": "charge",
             "amount_ucredits": -amount, "description": "GPU market", "cluster": cluster, "node": node}
        )  # fmt: skip

    txs = [
        charge(-5, 1, "n1"),  # before the run
        charge(10, 100, "n1"),
        charge(20, 200, "n2"),  # the node that replaced a reclaimed one
        charge(20, 7, "other"),  # another node: not the run's
        charge(20, 3, None),  # names no node: apart
        charge(20, 5, "n1", "elsewhere"),  # another cluster
        charge(30 + 25, 50, "n2"),  # its end + the meter's lag and the release
        charge(30 + 26, 9, "n2"),  # after that
    ]
    got = Q.spent(txs, "halcyon", ["n1", "n2"], t0, t0 + timedelta(minutes=30), timedelta(minutes=25))
    assert got == {"ucredits": 350, "charges": 3, "by_node": {"n1": 100, "n2": 250}, "untied_ucredits": 3}


def test_a_vm_declaration_quotes_per_node_hour_at_the_assessed_price_and_at_the_limit():
    from ncui.flows.vm import declare_question

    body = declare_question("tern-vm", 16, 8, 4_200_000, 3, assessed=3_900_000)
    assert "Quote: $31.20 per node-hour: 8 GPUs × $3.90/GPU-h (assessed now);" in body
    assert "at most $33.60 per node-hour at your limit, until you release it." in body
    assert "Sent: max_gpus 16, max_price_per_gpu_hour $4.20/GPU-h, expected_version 3." in body
    assert "2 nodes: at most $67.20 per hour in all." in body  # (one node: the quote's own figure, said once)
    assert "nodes: at most" not in declare_question("tern-vm", 8, 8, 4_200_000, 3, assessed=3_900_000)


def test_a_reclaimed_runs_cost_counts_its_replacement_node_and_says_no_quote_was_given(kube_factory, tmp_path):
    """Train applied by hand with the real kubectl (no quote); the market reclaims its node while it trains; the Job
    runs again on a new node to its end. The report's cost is every charge for both nodes (as the box's own
    transactions say), and says no quote was given."""
    from .test_report import pods_of, row, run_report

    k = kube_factory("k8s-market")
    k.set_bid(6.0)
    k.kubectl("--context", k.cluster, "apply", "-f", k.file("nanogpt-job-nvidia.yaml"))
    k.advance_until(lambda: any(s.startswith("Running") for s in k.pod_statuses().values()), what="Running")
    k.world.advance(12 * 60)  # an assessment charges the first node
    (first,) = pods_of(k)
    node = first["spec"]["nodeName"]
    assert k.sim_post("/_sim/k8s/reclaim", {"node": node}).json()["reclaimed"] == [node]
    k.advance_until(
        lambda: k.api("/apis/batch/v1/namespaces/default/jobs/nanogpt")["status"].get("completionTime"),
        step=120,
        what="the Job complete on the next node",
    )
    k.advance_until(
        lambda: not [n for n in k.api("/api/v1/nodes")["items"] if "h100" in n["metadata"]["name"]],
        step=120,
        what="the node released",
    )
    k.world.advance(11 * 60)  # the meter's next assessment
    charges = box_charges(k.sim, k.cluster)
    nodes = {t["node"] for t in charges}
    assert node in nodes and len(nodes) == 2, nodes  # the first node and its replacement
    env = {**k.env, "NC_TOKEN": k.sim.token, "XDG_STATE_HOME": str(tmp_path / "state")}
    p = run_report(env, "--json", "--api", k.sim.api_url, "--access", k.sim.access_url)
    assert p.returncode == 0, p.stderr
    cost = json.loads(p.stdout)["cost"]
    assert set(cost["nodes"]) == nodes and cost["quote"] is None and cost["untied_ucredits"] == 0
    assert cost["ucredits"] == sum(-t["amount_ucredits"] for t in charges) > 0
    assert cost["by_node"][node] > 0 and len(cost["by_node"]) == 2
    text = run_report(env, "--api", k.sim.api_url, "--access", k.sim.access_url).stdout
    lines = row(text, "Cost")
    assert lines[0].startswith(f"{fmt_usd(cost['ucredits'])} on {node}, "), lines
    assert "quoted: none (not applied through ncui)" in lines, lines


def test_ncui_quote_on_a_vm_cluster_is_per_node_hour_and_on_public_research_one_full_lease(sim_factory):
    vm = sim_factory("vm")
    p = run_quote(vm, "nanogpt", "--json", "--ceiling", "6")
    assert p.returncode == 0, p.stderr
    q = json.loads(p.stdout)
    assert q["kind"] == "vm" and q["cluster"] == "tern-vm" and q["per_hour_max"] == cost_ucredits(6_000_000, 8, 1)
    research = sim_factory("public-research")
    status = httpx.get(
        f"{research.api_url}/_sim/research/status", headers={"Authorization": f"Bearer {research.token}"}
    ).json()
    p = run_quote(research, "nanogpt")
    assert p.returncode == 0, p.stderr
    assert f"Quote: {fmt_usd(status['lease_ucredits'])} for one full lease" in p.stdout, p.stdout
