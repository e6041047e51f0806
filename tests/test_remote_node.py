"""The command lines ncui sends to a VM or research node (ncui/remote/node.py): pure functions, no node.

What a POSIX shell makes of them is checked with ``shlex.split`` here and with the node's real shell over a
real sshd in tests/test_remote_ssh.py."""

from __future__ import annotations

import shlex

import pytest

from ncui.remote.node import (
    BadInput,
    docker_run_argv,
    docker_run_command,
    logs_command,
    starter_command,
    stop_command,
    tail_command,
)

NASTY = 'python train.py --msg "it\'s $HOME"; echo `id` $(id) && rm -rf / #\nsecond line\t\\'


def test_starter_is_the_seed_line():
    assert starter_command("https://access.nationalcompute.com") == (
        "curl -fsSL https://access.nationalcompute.com/first-job/nanogpt-node.sh | sh"
    )
    assert (
        starter_command("http://127.0.0.1:8123/") == "curl -fsSL http://127.0.0.1:8123/first-job/nanogpt-node.sh | sh"
    )
    for bad in ["file:///etc/passwd", "http://x/$(reboot)", "http://x/a b", "", "https://x/;reboot"]:
        with pytest.raises(BadInput, match="not an http"):
            starter_command(bad)


def test_docker_run_keeps_the_command_one_sh_c_argument():
    cmd = docker_run_command("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", NASTY, "nanogpt", env={"K": "a 'b' $c"})
    assert shlex.split(cmd) == [
        "docker",
        "run",
        "-d",
        "--name",
        "nanogpt",
        "--gpus",
        "all",
        "-e",
        "K=a 'b' $c",
        "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
        "sh",
        "-c",
        NASTY,
    ]
    plain = docker_run_command("ghcr.io/me/img@sha256:abc", "", "job.1", gpus_all=False, volumes=["/data:/data"])
    assert plain == "docker run -d --name job.1 -v /data:/data ghcr.io/me/img@sha256:abc"  # the image's own command


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"name": "-rf"}, "cannot name a container"),
        ({"name": "a b"}, "cannot name a container"),
        ({"name": ""}, "cannot name a container"),
        ({"image": "--privileged"}, "not a container image"),
        ({"image": "img; reboot"}, "not a container image"),
        ({"env": {"A-B": "x"}}, "environment variable"),
        ({"volumes": ["--privileged"]}, "not a volume"),
    ],
)
def test_docker_run_refuses_what_would_read_as_an_option_with_a_sentence(kw, says):
    args = {"image": "pytorch/pytorch", "command": "true", "name": "nanogpt"} | kw
    with pytest.raises(BadInput, match=says):
        docker_run_argv(**args)


def test_stop_logs_and_tail_lines():
    assert stop_command("nanogpt") == "docker rm -f nanogpt"
    assert logs_command("nanogpt") == "docker logs -f -t nanogpt"
    ts = "2026-11-02T09:00:00.000000000Z"
    assert logs_command("nanogpt", ts) == f"docker logs -f -t --since {ts} nanogpt"
    assert logs_command("nanogpt", tail=500) == "docker logs -f -t --tail 500 nanogpt"
    assert logs_command("nanogpt", ts, tail=500) == f"docker logs -f -t --since {ts} nanogpt"  # a resumption
    with pytest.raises(BadInput):
        stop_command("x; reboot")
    assert tail_command("~/first-job/nanogpt.out") == "tail -n +1 -F ~/first-job/nanogpt.out"  # ~ left to the shell
    assert tail_command("/tmp/a b", 51, 0.2) == "tail -n +51 -F -s 0.2 '/tmp/a b'"
