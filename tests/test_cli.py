"""The command line as a user runs it: ncui sim, curl-like requests against it, --version, --help."""

from __future__ import annotations

import subprocess
import sys

import httpx

from ncui import __version__

from .simproc import SimProcess


def test_sim_prints_env_and_answers_whoami():
    with SimProcess("--scenario", "k8s-market") as sim:
        assert list(sim.env) == ["NC_API", "NC_ACCESS", "NC_TOKEN", "NC_SSH_CONFIG"]
        assert sim.env["NC_API"].startswith("http://127.0.0.1:") and not sim.env["NC_API"].endswith(":0")
        r = httpx.get(sim.env["NC_API"] + "/api/whoami", headers={"Authorization": f"Bearer {sim.env['NC_TOKEN']}"})
        assert r.status_code == 200
        body = r.json()
        assert body["org_name"] == "Halcyon Lab"
        assert body["clusters"] == [{"name": "halcyon", "kind": "kubernetes"}]
        assert httpx.get(sim.env["NC_API"] + "/api/whoami").status_code == 401
        catalog = httpx.get(sim.env["NC_ACCESS"] + "/first-job/").json()
        assert any(r["name"] == "nanogpt" for r in catalog)


def test_each_scenario_has_its_own_org_and_token():
    with SimProcess("--scenario", "vm") as a, SimProcess("--scenario", "slurm") as b:
        assert a.env["NC_TOKEN"] != b.env["NC_TOKEN"]
        r = httpx.get(b.env["NC_API"] + "/api/whoami", headers={"Authorization": f"Bearer {a.env['NC_TOKEN']}"})
        assert r.status_code == 401  # a token of another box is just wrong here
        me = httpx.get(b.env["NC_API"] + "/api/whoami", headers={"Authorization": f"Bearer {b.env['NC_TOKEN']}"}).json()
        assert me["clusters"] == [{"name": "plover", "kind": "slurm"}]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ncui.cli", *args], capture_output=True, text=True, timeout=60)


def test_version_and_help():
    assert run("--version").stdout.strip() == f"ncui {__version__}"
    as_module = subprocess.run([sys.executable, "-m", "ncui", "--version"], capture_output=True, text=True, timeout=60)
    assert as_module.stdout.strip() == f"ncui {__version__}"  # python -m ncui: the ncui command
    h = run("--help")
    assert h.returncode == 0 and "--demo" in h.stdout and "sim" in h.stdout
    s = run("sim", "--help")
    assert "--scenario" in s.stdout and "--port" in s.stdout and "--speed" in s.stdout


def test_bad_arguments_are_clear():
    r = run("sim", "--port", "99999")
    assert r.returncode == 2 and "between 0 and 65535" in r.stderr and "Traceback" not in r.stderr
    r = run("sim", "--scenario", "mars")
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_app_without_token_says_where_to_put_it(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if k != "NC_TOKEN"}
    env["HOME"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-m", "ncui.cli"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and "~/.config/nationalcompute/token" in r.stderr and "ncui --demo" in r.stderr


def test_login_node_flag_decides_where_slurm_commands_run(monkeypatch):
    from ncui import cli
    from ncui.remote.local import on_login_node

    monkeypatch.setenv("NCUI_LOGIN_NODE", "")  # (so that what main() sets is undone after the test)
    monkeypatch.delenv("NCUI_LOGIN_NODE")
    monkeypatch.setattr(cli, "run_app", lambda args: 10 + on_login_node())  # what the app would see
    assert cli.main(["--login-node"]) == 11
    assert cli.main(["--no-login-node"]) == 10
