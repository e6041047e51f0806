"""tests/peers.py: a real peer this machine lacks skips the test, naming it and its package; under CI's
``NCUI_REQUIRE_PEERS=1`` (``.ci/run``) it fails the test instead, so a failed install never reads as green."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .peers import REQUIRE, lacks_peer, need_peer

ROOT = Path(__file__).resolve().parents[1]
# A real-peer test (its module asks for OpenSSH's ssh: @pytest.mark.peers("ssh")), run as CI runs it
ONE = "tests/test_app_slurm_box.py::test_the_first_job_on_the_boxs_login_node"
SAID = "real peer ssh missing: no ssh here (apt-get install -y openssh-client)"


def _path_without(tmp: Path, gone: str) -> str:
    """A PATH of one folder: links to every program on this PATH but ``gone``."""
    folder = tmp / "bin"
    folder.mkdir()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            src, link = os.path.join(d, name), folder / name
            if name != gone and not os.path.lexists(link) and os.path.isfile(src) and os.access(src, os.X_OK):
                link.symlink_to(src)
    return str(folder)


def _pytest(tmp: Path, required: bool) -> subprocess.CompletedProcess[str]:
    """The one test in a pytest of its own, with ssh gone from PATH (and CI's variable when ``required``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", REQUIRE))}  # (not this run's worker)
    env["PATH"] = _path_without(tmp, "ssh")
    if required:
        env[REQUIRE] = "1"
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", f"--basetemp={tmp / 'run'}"]
    return subprocess.run(
        [*argv, ONE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


def test_in_ci_a_missing_peer_fails_the_test_naming_it(tmp_path):
    p = _pytest(tmp_path, required=True)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out  # the run fails
    assert f"{SAID} ({REQUIRE}=1: CI installs every real peer, see .ci/run)" in out, out
    summary = out.strip().splitlines()[-1]
    assert "1 error" in summary and "skipped" not in summary and "passed" not in summary, summary


def test_without_ci_the_missing_peer_skips_the_test_and_says_so(tmp_path):
    p = _pytest(tmp_path, required=False)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "SKIPPED [1] " in out and SAID in out, out  # -rs: the skip and its reason printed
    summary = out.strip().splitlines()[-1]
    assert "1 skipped" in summary and "error" not in summary and "failed" not in summary, summary


def test_need_peer_finds_a_program_or_a_path_and_says_what_is_missing(tmp_path, monkeypatch):
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(REQUIRE, raising=False)
    assert need_peer("tool") == str(tool)
    assert need_peer("sshd", tool) == str(tool)  # a daemon at its own path, not on PATH
    with pytest.raises(pytest.skip.Exception, match=r"real peer sshd missing: no /nowhere/sshd here \(apt-get install"):
        need_peer("sshd", "/nowhere/sshd")
    with pytest.raises(pytest.skip.Exception, match=r"^real peer rsync missing: no rsync here \(.* rsync\)$"):
        need_peer("rsync")
    monkeypatch.setenv(REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match=r"^real peer rsync missing: no rsync here .*NCUI_REQUIRE_PEERS=1"):
        need_peer("rsync")
    with pytest.raises(pytest.fail.Exception, match="real peer slurm missing: the test Slurm runs its daemons as root"):
        lacks_peer("slurm", "the test Slurm runs its daemons as root")
    monkeypatch.setenv(REQUIRE, "0")  # (set but off: skips)
    with pytest.raises(pytest.skip.Exception):
        need_peer("rsync")
