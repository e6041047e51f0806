"""``ncui doctor`` (issue 24): the real ``ncui sim`` process, real ``ncui doctor`` runs in a fresh HOME, and the
box drifting on purpose (``--contract-drift``). The contract's comparison is also given edited copies of the box's
own documents, for the cases the box does not serve (a value ncui matches on gone, an error code gone)."""

from __future__ import annotations

import ast
import copy
import inspect
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path

import httpx
import pytest

from ncui.api import client as api_client
from ncui.api.client import ENDPOINTS, NCClient
from ncui.doctor import FAIL, OK, WARN, exit_code
from ncui.doctor.contract import AREAS, compare, doc_path, matched_values

from .simproc import SimProcess
from .tmuxterm import tmux_factory  # noqa: F401  (a fixture)
from .waits import wait_until

ROOT = Path(__file__).resolve().parents[1]


def person(tmp: Path, token: str | None, mode: int = 0o600, key: bool = False, **extra: str) -> dict[str, str]:
    """A fresh HOME with the token saved as the guide says (``mode``), no ssh key (``key``: one) and no agent."""
    home = tmp / "home"
    (home / ".config" / "nationalcompute").mkdir(parents=True)
    if key:
        (home / ".ssh").mkdir(mode=0o700)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(home / ".ssh" / "id_ed25519")], check=True
        )
    if token is not None:
        f = home / ".config" / "nationalcompute" / "token"
        f.write_text(token + "\n")
        f.chmod(mode)
    drop = {"NC_TOKEN", "SSH_AUTH_SOCK", "MARSHALL_WORKSPACE", "TMUX", "STY", "NO_COLOR", "COLUMNS", "LINES"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    old = os.environ.get("PYTHONPATH")
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        TERM="xterm-256color",
        PYTHONPATH=str(ROOT) + (os.pathsep + old if old else ""),
    )
    env.update(extra)
    return env


def doctor(sim: SimProcess, env: dict[str, str], *args: str) -> tuple[int, list[dict], str]:
    """Run ``ncui doctor --json`` against the box: its exit status, its checks, its stderr."""
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "ncui.cli",
            "doctor",
            "--json",
            "--api",
            sim.env["NC_API"],
            "--access",
            sim.env["NC_ACCESS"],
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, json.loads(p.stdout), p.stderr


def by_name(checks: list[dict], name: str) -> dict:
    found = [c for c in checks if c["check"] == name]
    assert found, f"no check {name!r} in {[c['check'] for c in checks]}"
    return found[0]


def fails(checks: list[dict]) -> list[dict]:
    return [c for c in checks if c["status"] == FAIL]


@pytest.fixture(scope="module")
def box():
    with SimProcess() as sim:
        yield sim


@pytest.fixture(scope="module")
def docs(box) -> dict[str, dict]:
    return {a: httpx.get(box.env["NC_API"] + doc_path(a), timeout=30).json() for a in AREAS}


# ---- against the box as it is ------------------------------------------------------------------------------


def test_doctor_against_the_box_finds_nothing_wrong_and_no_key_is_a_warning(box, tmp_path):
    rc, checks, _ = doctor(box, person(tmp_path, box.env["NC_TOKEN"], COLUMNS="100", LINES="30"))
    assert rc == 0 and not fails(checks), fails(checks)
    assert {"check", "status", "reason", "fix", "details"} == set(checks[0])
    assert by_name(checks, "token")["status"] == OK and "mode 600" in by_name(checks, "token")["reason"]
    assert "GET /api/whoami: 200" in by_name(checks, "sign-in")["reason"]
    assert by_name(checks, "contract")["reason"].startswith("compatible")
    assert by_name(checks, "catalog")["status"] == OK
    assert (
        by_name(checks, "kubectl")["status"] == OK
        and "within one minor version" in by_name(checks, "kubectl")["reason"]
    )
    keys = by_name(checks, "ssh keys")
    assert keys["status"] == WARN and "ssh-keygen -t ed25519" in keys["fix"]
    assert by_name(checks, "clock")["status"] == OK
    assert by_name(checks, "terminal size") == {
        "check": "terminal size",
        "status": OK,
        "reason": "100×30",
        "fix": "",
        "details": [],
    }
    # --strict: the warning fails; with a key there is none
    rc, _, _ = doctor(box, person(tmp_path / "b", box.env["NC_TOKEN"]), "--strict")
    assert rc == 1
    rc, checks, _ = doctor(box, person(tmp_path / "c", box.env["NC_TOKEN"], key=True), "--strict")
    assert rc == 0 and by_name(checks, "ssh keys")["status"] == OK, [c for c in checks if c["status"] != OK]


def test_doctor_prints_one_line_a_check_with_what_to_do(box, tmp_path):
    env = person(tmp_path, box.env["NC_TOKEN"])
    p = subprocess.run(
        [sys.executable, "-m", "ncui.cli", "doctor", "--api", box.env["NC_API"], "--access", box.env["NC_ACCESS"]],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert any(line.startswith("✓ contract: compatible") for line in lines), p.stdout
    key = next(line for line in lines if line.startswith("! ssh keys:"))
    assert "→ make one: ssh-keygen" in key
    assert lines[-1].startswith("ncui doctor: 0 problem(s), 1 warning(s)")


def test_token_file_readable_by_others_is_named_with_chmod(box, tmp_path):
    rc, checks, _ = doctor(box, person(tmp_path, box.env["NC_TOKEN"], mode=0o644))
    token = by_name(checks, "token")
    assert token["status"] == WARN and "mode 0644" in token["reason"]
    assert token["fix"] == f"chmod 600 {tmp_path}/home/.config/nationalcompute/token"
    assert rc == 0


def test_a_token_the_service_refuses_is_a_plain_401(box, tmp_path):
    rc, checks, _ = doctor(box, person(tmp_path, "ncsim_nobody_0000"))
    sign_in = by_name(checks, "sign-in")
    assert sign_in["status"] == FAIL and "401" in sign_in["reason"] and "new token" in sign_in["fix"]
    assert rc == 1


def test_no_token_and_in_a_workspace_no_file_is_read(box, tmp_path):
    rc, checks, _ = doctor(box, person(tmp_path, None))
    assert by_name(checks, "token")["status"] == FAIL and "NC_TOKEN" in by_name(checks, "token")["fix"]
    assert rc == 1
    # a workspace: the file is there, but only the daemon's NC_TOKEN counts
    env = person(tmp_path / "w", box.env["NC_TOKEN"], MARSHALL_WORKSPACE="1")
    _, checks, _ = doctor(box, env)
    assert by_name(checks, "token")["status"] == FAIL and "Marshall workspace" in by_name(checks, "token")["reason"]
    _, checks, _ = doctor(box, {**env, "NC_TOKEN": box.env["NC_TOKEN"]})
    assert by_name(checks, "token")["status"] == OK and "No token file is read" in by_name(checks, "token")["reason"]


def test_no_kubectl_on_path_is_named_with_where_to_get_it(box, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ssh", "ssh-keygen"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    rc, checks, _ = doctor(box, person(tmp_path, box.env["NC_TOKEN"], PATH=str(bin_dir)))
    k = by_name(checks, "kubectl")
    assert k["status"] == FAIL and "kubectl is not on PATH" in k["reason"] and "halcyon" in k["reason"]
    assert "kubernetes.io/docs/tasks/tools" in k["fix"]
    assert rc == 1
    assert by_name(checks, "ssh")["status"] == OK


def test_a_clock_five_minutes_off_is_named(tmp_path):
    with SimProcess() as sim:
        # the box's clock starts on a whole minute: first its own offset, then five minutes more
        date = httpx.get(sim.env["NC_API"] + doc_path("vm"), timeout=30).headers["date"]
        behind = datetime.now(timezone.utc).timestamp() - parsedate_to_datetime(date).timestamp()
        r = httpx.post(
            sim.env["NC_API"] + "/_sim/advance",
            json={"seconds": 300 + behind},
            headers={"Authorization": f"Bearer {sim.env['NC_TOKEN']}"},
            timeout=30,
        )
        assert r.status_code == 200
        rc, checks, _ = doctor(sim, person(tmp_path, sim.env["NC_TOKEN"]))
    clock = by_name(checks, "clock")
    assert clock["status"] == FAIL and "5 min behind the service's" in clock["reason"]
    assert "timedatectl set-ntp true" in clock["fix"]
    assert rc == 1


def test_a_70x20_terminal_is_named(box, tmp_path, tmux_factory):  # noqa: F811
    out = tmp_path / "out.json"
    env = person(tmp_path, box.env["NC_TOKEN"])
    term = tmux_factory({k: env[k] for k in ("HOME", "XDG_STATE_HOME", "PYTHONPATH", "PATH")}, width=70, height=20)
    cmd = f"{sys.executable} -m ncui.cli doctor --json --api {box.env['NC_API']} --access {box.env['NC_ACCESS']}"
    term.run("sh", "-c", f"{cmd} > {out}.part && mv {out}.part {out}")
    wait_until(out.exists, 120, "ncui doctor's answer", 0.1, say=term.screen)
    size = by_name(json.loads(out.read_text()), "terminal size")
    assert size["status"] == WARN and size["reason"].startswith("70×20: ncui needs at least 80×24")
    assert "at least 80 columns by 24 rows" in size["fix"]


def test_on_a_vm_cluster_a_key_not_registered_is_named_then_registered(tmp_path):
    with SimProcess("--scenario", "vm") as sim:
        env = person(tmp_path, sim.env["NC_TOKEN"], key=True)
        _, checks, _ = doctor(sim, env)
        keys = by_name(checks, "ssh keys")
        assert keys["status"] == WARN and "none is registered with the organization" in keys["reason"], keys
        api, auth = sim.env["NC_API"], {"Authorization": f"Bearer {sim.env['NC_TOKEN']}"}
        org = httpx.get(api + "/api/whoami", headers=auth, timeout=30).json()["org_id"]
        public = (Path(env["HOME"]) / ".ssh" / "id_ed25519.pub").read_text().strip()
        r = httpx.post(
            f"{api}/api/vm/orgs/{org}/ssh-keys", json={"name": "mine", "public_key": public}, headers=auth, timeout=30
        )
        assert r.status_code in (200, 201), r.text
        rc, checks, _ = doctor(sim, env, "--strict")
    keys = by_name(checks, "ssh keys")
    assert keys["status"] == OK and "registered for" in keys["reason"], keys
    assert rc == 0


# ---- the box drifting --------------------------------------------------------------------------------------

DRIFTS = {
    "field-renamed": (
        "GET /api/billing/balance",
        "no field burn_ucredits_hr; the header's burn will read unknown",
    ),
    "enum-added": ("GET /api/whoami", "clusters[].kind may be 'tpu', a value ncui does not know"),  # a warning
    "field-dropped:/api/billing/balance:balance_ucredits": (
        "GET /api/billing/balance",
        "no field balance_ucredits; the header's balance will read unknown",
    ),
    "path-moved": (
        "GET /api/k8s/market/ladder",
        "no such path in /api/k8s/openapi.json (the documents have GET /api/market/ladder: moved?)",
    ),
}


@pytest.mark.parametrize("drift", sorted(DRIFTS))
def test_doctor_names_each_drift_the_box_serves(drift, tmp_path):
    check, reason = DRIFTS[drift]
    with SimProcess("--contract-drift", drift) as sim:
        env = person(tmp_path, sim.env["NC_TOKEN"], key=True)  # (no other warning: --strict fails on the drift alone)
        rc, checks, _ = doctor(sim, env)
        strict, _, _ = doctor(sim, env, "--strict")
        # the answers drifted as the documents did
        api, auth = sim.env["NC_API"], {"Authorization": f"Bearer {sim.env['NC_TOKEN']}"}
        if drift == "field-renamed":
            assert "burn_ucredits_per_hour" in httpx.get(api + "/api/billing/balance", headers=auth).json()
        elif drift == "enum-added":
            kinds = [c["kind"] for c in httpx.get(api + "/api/whoami", headers=auth).json()["clusters"]]
            assert "tpu" in kinds
        elif drift.startswith("field-dropped:"):
            assert "balance_ucredits" not in httpx.get(api + "/api/billing/balance", headers=auth).json()
        else:
            assert httpx.get(api + "/api/k8s/market/ladder", headers=auth).status_code == 404
            assert httpx.get(api + "/api/market/ladder", headers=auth).status_code == 200
    drifted = [c for c in checks if c["check"] == check]
    status = WARN if drift == "enum-added" else FAIL  # an added value: ncui reads it, and says it does not know it
    assert any(reason in c["reason"] and c["status"] == status for c in drifted), drifted
    assert [c for c in checks if c["status"] != OK] == drifted
    assert (rc, strict) == ((0, 1) if drift == "enum-added" else (1, 1))


# ---- the comparison, on edited copies of the box's documents ---------------------------------------------


def test_the_box_documents_are_compatible(docs):
    checks = compare(docs)
    assert not [c for c in checks if c.status != OK], [c for c in checks if c.status != OK]


def test_a_value_ncui_waits_for_gone_fails_and_one_added_to_an_open_enum_warns(docs):
    assert "active" in matched_values()["state"]  # read off ncui's code (meters.py, flows/node.py, …)
    d = copy.deepcopy(docs)
    state = d["vm"]["components"]["schemas"]["Allocation"]["properties"]["state"]
    enum_branch = next(b for b in state["anyOf"] if "enum" in b)
    enum_branch["enum"] = [v for v in enum_branch["enum"] if v != "active"] + ["draining"]
    state["anyOf"] = [enum_branch]  # (no plain string beside it: the service names every state)
    checks = compare(d)
    texts = {(c.check, c.status, c.reason) for c in checks}
    assert (
        "GET /api/vm/capacity",
        FAIL,
        "allocations[].state is never 'active' any more, a value ncui waits for; whether a VM node is ready will "
        "read unknown",
    ) in texts
    assert (
        "GET /api/vm/capacity",
        WARN,
        "allocations[].state may be 'draining', a value ncui does not know; ncui says so where it shows it",
    ) in texts
    assert exit_code(checks) == 1


def test_a_field_retyped_fails_and_one_added_is_only_a_detail(docs):
    d = copy.deepcopy(docs)
    bal = d["billing"]["components"]["schemas"]["Balance"]["properties"]
    bal["balance_ucredits"] = {"type": "string"}
    bal["currency"] = {"type": "string"}
    checks = compare(d)
    bad = [c for c in checks if c.status != OK]
    assert [(c.check, c.reason) for c in bad] == [
        (
            "GET /api/billing/balance",
            "balance_ucredits is now string (ncui reads integer); the header's balance will read unknown",
        )
    ]
    assert any("the service added currency" in x for c in checks for x in c.details)


def test_a_body_field_renamed_fails(docs):
    d = copy.deepcopy(docs)
    req = d["k8s"]["components"]["schemas"]["BidRequest"]
    req["properties"]["limit_per_gpu_hour"] = req["properties"].pop("max_price_per_gpu_hour")
    req["required"] = ["limit_per_gpu_hour"]
    put = [c for c in compare(d) if c.check == "PUT /api/k8s/bid"]
    assert [(c.status, c.reason) for c in put] == [
        (FAIL, "the body's field max_price_per_gpu_hour is no longer taken; setting the limit price will be refused"),
        (
            FAIL,
            "the body now requires limit_per_gpu_hour, which ncui does not send; setting the limit price will be "
            "refused",
        ),
    ]


def test_a_path_no_document_describes_warns_and_a_gone_error_code_fails(docs):
    d = copy.deepcopy(docs)
    for area in ("billing", "vm"):
        d[area]["paths"].pop("/api/whoami")
    for area in AREAS:
        err = d[area]["components"]["schemas"]["ErrorBody"]["properties"]["error"]
        for b in err["anyOf"]:
            if "enum" in b:
                b["enum"] = [v for v in b["enum"] if v != "version-conflict"]
    checks = compare(d)
    who = next(c for c in checks if c.check == "GET /api/whoami")
    assert who.status == WARN and who.reason.startswith("no document describes it")
    codes = next(c for c in checks if c.check == "contract error codes")
    assert codes.status == FAIL and codes.reason.startswith("version-conflict no longer among")
    unread = compare({**docs, "market": "cannot reach it"})
    assert next(c for c in unread if c.check == "contract /api/market/openapi.json").status == FAIL


def test_every_request_the_client_makes_is_in_its_table():
    """The table cannot drift from the client: every path literal in client.py is in ENDPOINTS, and every method
    that sends one names its entry."""
    tree = ast.parse(inspect.getsource(api_client))
    table = {e.path for e in ENDPOINTS.values()}
    literals = {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value.startswith(("/api/", "/_sim/", "/device"))
    }
    assert literals == table
    for name in ENDPOINTS:
        assert inspect.iscoroutinefunction(getattr(NCClient, name)), name
        assert f'_E["{name}"]' in inspect.getsource(getattr(NCClient, name))


def app_in_tmux(sim, tmp_path, make_term):
    """ncui against ``sim`` (a SimProcess) in a 160-column tmux pane, as a person with a token in ``tmp_path``."""
    env = person(tmp_path, sim.env["NC_TOKEN"])
    term = make_term({k: env[k] for k in ("HOME", "XDG_STATE_HOME", "PYTHONPATH", "PATH")}, width=160)
    term.run(sys.executable, "-m", "ncui.cli", "--api", sim.env["NC_API"], "--access", sim.env["NC_ACCESS"])
    return term, env


# ---- the app, when a field drifted ----------------------------------------------------------------------------


async def test_the_app_reads_only_the_drifted_figure_as_unknown_with_the_reason(tmp_path, tmux_factory):  # noqa: F811
    """The balance's burn renamed: the header's burn and runway read unknown, Account says why, and the balance
    itself (the same answer) is still shown."""
    with SimProcess("--contract-drift", "field-renamed") as sim:
        term, env = app_in_tmux(sim, tmp_path, tmux_factory)
        screen = await term.until(
            lambda s: "burn unknown" in s and "has no burn_ucredits_hr" in s, what="the burn unknown, with why"
        )
    header = next(line for line in screen.splitlines() if "burn unknown" in line)
    assert "runway unknown" in header and "balance $" in header, screen
    assert "National Compute's answer has no burn_ucredits_hr" in " ".join(screen.split()), screen


async def test_the_app_reads_a_dropped_balance_as_unknown_with_the_reason(tmp_path, tmux_factory):  # noqa: F811
    """The balance's own figure left out: the header's balance and runway read unknown, Account says why, the rest
    of the answer (the burn) and the transactions are still shown."""
    with SimProcess("--contract-drift", "field-dropped:/api/billing/balance:balance_ucredits") as sim:
        term, env = app_in_tmux(sim, tmp_path, tmux_factory)
        screen = await term.until(
            lambda s: "balance unknown" in s and "Credits purchased" in s and "has no balance_ucredits" in s,
            what="the balance unknown, with why",
        )
    header = next(line for line in screen.splitlines() if "balance unknown" in line)
    assert "runway unknown" in header and "burn $0.00/h" in header, screen
    assert "National Compute's answer has no balance_ucredits" in " ".join(screen.split()), screen


async def test_the_app_says_a_cluster_kind_it_does_not_know(tmp_path, tmux_factory):  # noqa: F811
    """whoami lists a ``tpu`` cluster: it is read (the account is shown), and the cluster says what it is."""
    with SimProcess("--contract-drift", "enum-added") as sim:
        term, env = app_in_tmux(sim, tmp_path, tmux_factory)
        screen = await term.until(lambda s: "a kind ncui does not know" in s, what="the unknown cluster said")
    assert "tpu-east is a tpu cluster, a kind ncui does not know." in " ".join(screen.split()), screen


# ---- at start-up, once a day per service ------------------------------------------------------------------------


async def test_the_app_says_a_drift_once_in_a_line_and_in_help(tmp_path, tmux_factory):  # noqa: F811
    with SimProcess("--contract-drift", "path-moved") as sim:
        term, env = app_in_tmux(sim, tmp_path, tmux_factory)
        said = "The service's contract changed: GET /api/k8s/market/ladder: no such path in /api/k8s/openapi.json"
        await term.until(lambda s: said in term.toasts(), what="the drift's notification")
        term.keys("?")
        screen = await term.until(lambda s: "The service's contract" in s and "Esc closes" in s, what="the help")
        assert "GET /api/k8s/market/ladder: no such path" in " ".join(screen.split()), screen
        term.keys("Escape")  # (alone: an Escape sent with the next key reads as Alt and that key)
        await term.until(lambda s: "Esc closes" not in s, what="the help closed")
        term.keys("2")  # the figure the moved path fed: unknown, with the reason, never an empty ladder
        market = await term.until(lambda s: "Price to win" in s and "Unknown (could not read" in s, what="Market")
    assert "Unknown (could not read: Not found while reading the price-to-win ladder" in " ".join(market.split())
    kept = json.loads((Path(env["XDG_STATE_HOME"]) / "ncui" / "contract-check.json").read_text())
    assert list(kept["services"]) == [sim.env["NC_API"]] and said in kept["services"][sim.env["NC_API"]]["line"]


async def test_the_start_up_check_runs_once_a_day_per_service(tmp_path, monkeypatch):
    from ncui.config import Endpoints
    from ncui.doctor.background import EVERY, daily_drift

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    with SimProcess("--contract-drift", "field-renamed") as sim:
        ep = Endpoints(api=sim.env["NC_API"], access=sim.env["NC_ACCESS"])
        first = await daily_drift(ep, now=1000.0)
    assert first.startswith("The service's contract changed: GET /api/billing/balance: no field burn_ucredits_hr")
    # the box is gone: within the day the kept line is said, nothing fetched; a day later it is fetched (and fails)
    assert await daily_drift(ep, now=1000.0 + EVERY - 1) == first
    assert await daily_drift(ep, now=1000.0 + EVERY + 1) == ""
    other = Endpoints(api="http://127.0.0.1:9", access="http://127.0.0.1:9")  # another service: its own day
    assert await daily_drift(other, now=1001.0) == ""


async def test_the_palette_runs_doctor(tmp_path, tmux_factory):  # noqa: F811
    with SimProcess("--contract-drift", "field-renamed") as sim:
        term, env = app_in_tmux(sim, tmp_path, tmux_factory)
        await term.until(lambda s: "Halcyon" in s, what="the app with its account")
        term.keys("C-p")
        await term.until(lambda s: "Search for commands" in s or "Go to" in s, what="the palette")
        term.keys("Doctor: the service")
        await term.until(lambda s: "Doctor: the service's contract" in s, what="the command offered")
        term.keys("Enter")
        screen = await term.until(lambda s: "Esc or Enter closes" in s and "ncui doctor:" in s, what="the report")
    flat = " ".join(screen.split())
    assert "✗ GET /api/billing/balance: no field burn_ucredits_hr; the header's burn will read unknown" in flat, screen
    assert "✓ sign-in: GET /api/whoami: 200" in flat, screen


def test_kubectl_outside_one_minor_version_of_the_cluster_is_named():
    """(The box serves one Kubernetes version: the skew rule on its own, with the versions a real pair would say.)"""
    from ncui.doctor.machine import kubectl_check

    near = kubectl_check("/usr/bin/kubectl", (1, 31), {"major": "1", "minor": "32"}, "halcyon")
    far = kubectl_check("/usr/bin/kubectl", (1, 29), {"major": "1", "minor": "32+"}, "halcyon")
    assert near.status == OK
    assert far.status == WARN and far.reason.startswith("kubectl 1.29 is outside the supported skew of halcyon's")
    assert "within one minor version" in far.fix
