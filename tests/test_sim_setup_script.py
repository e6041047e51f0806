"""The guide's setup script as the box serves it (``curl -fsSL <access>/setup.sh | sh -s -- <cluster>``), run with
the real sh (and bash) and curl in a home of the test's own: the kubeconfig by token, a ``<cluster>`` context
merged into ~/.kube/config, one sign-in link with no terminal, then the real kubectl with that context; without
kubectl it says so and where to get it; on a Slurm cluster, ``slurm-login`` on PATH, then ``ssh <cluster>``.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import httpx
import pytest

from .kube_support import _pythonpath

pytestmark = pytest.mark.peers("curl")
LINK = re.compile(r"https?://\S+/device\?code=[A-Za-z0-9-]+")
TOOLS = (
    "sh bash curl cat grep sed awk cut tr head tail mkdir mv cp rm chmod".split()
)  # what the script runs, bar kubectl


class Human:
    """A machine of the human's own: its home (with the token saved as the guide says) and its PATH."""

    def __init__(self, sim, tmp: Path, path: str | None = None) -> None:
        self.sim, self.home = sim, tmp / "home"
        (self.home / ".config" / "nationalcompute").mkdir(parents=True)
        token = self.home / ".config" / "nationalcompute" / "token"
        token.write_text(sim.token + "\n")
        token.chmod(0o600)
        self.env = {
            "HOME": str(self.home),
            "PATH": path or os.environ["PATH"],
            "LANG": "C.UTF-8",
            "KUBECACHEDIR": str(tmp / "kcache"),
            "NCUI_KUBE_CACHE": str(tmp / "auth"),  # (the sign-in plugin's cache)
            "PYTHONPATH": _pythonpath(),
        }

    def sh(self, line: str, shell: str = "sh") -> subprocess.CompletedProcess:
        return subprocess.run(
            [shell, "-c", line], env=self.env, cwd=self.home, capture_output=True, text=True, timeout=60,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def setup(self, cluster: str, shell: str = "sh") -> subprocess.CompletedProcess:
        return self.sh(f"curl -fsSL {self.sim.access_url}/setup.sh | {shell} -s -- {cluster}", shell)


def _kubeconfig(name: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: {name}, cluster: {{server: 'https://127.0.0.1:9'}}}}]\n"  # (nothing listens there)
        f"users: [{{name: {name}-admin, user: {{token: 'abc'}}}}]\n"
        f"contexts: [{{name: {name}, context: {{cluster: {name}, user: {name}-admin}}}}]\n"
        f"current-context: {name}\n"
    )


@pytest.mark.peers("kubectl")
def test_kubeconfig_by_token_a_merged_context_one_link_then_kubectl(sim_factory, tmp_path):
    sim = sim_factory("k8s-market")
    me = Human(sim, tmp_path)
    (me.home / ".kube").mkdir()
    (me.home / ".kube" / "config").write_text(_kubeconfig("lab"))  # a context of the human's own, current

    r = me.setup("halcyon")
    assert r.returncode == 0 and r.stderr == "", (r.stdout, r.stderr)
    links = LINK.findall(r.stdout)
    assert len(links) == 1 and links[0].startswith(f"{sim.api_url}/device?code="), r.stdout  # one link, said once
    assert f"\n    {links[0]}\n" in r.stdout  # on a line of its own, to hand on verbatim
    saved = me.home / ".kube" / "halcyon.yaml"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600 and "server: https://" in saved.read_text()
    contexts = me.sh("kubectl config get-contexts -o name").stdout.split()
    assert sorted(contexts) == ["halcyon", "lab"]
    assert me.sh("kubectl config current-context").stdout == "lab\n"  # the human's current context is kept

    r = me.sh("kubectl --context halcyon get nodes")  # not approved yet: refused, no node listed
    assert r.returncode != 0 and "NAME" not in r.stdout
    assert me.sh("kubectl config use-context halcyon").returncode == 0
    r = me.setup("halcyon")  # again, its context now current, still not approved: the same one link, nothing else
    assert r.returncode == 0 and r.stderr == "" and LINK.findall(r.stdout) == links, (r.stdout, r.stderr)
    code = links[0].split("code=", 1)[1]
    assert httpx.post(f"{sim.api_url}/device", data={"code": code}).status_code == 200  # the human approves
    r = me.sh("kubectl --context halcyon get nodes")
    assert r.returncode == 0 and r.stdout.split()[:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"], r.stderr

    again = me.setup("halcyon")  # once more: the context replaced again, and no link (signed in)
    assert again.returncode == 0 and again.stderr == "" and "signed in already" in again.stdout
    assert not LINK.search(again.stdout)
    assert sorted(me.sh("kubectl config get-contexts -o name").stdout.split()) == ["halcyon", "lab"]


def test_without_kubectl_it_says_so_and_installs_nothing(sim_factory, tmp_path):
    sim = sim_factory("k8s-market")
    bin_ = tmp_path / "bin"  # this machine's tools, kubectl left out
    bin_.mkdir()
    for tool in TOOLS:
        (bin_ / tool).symlink_to(shutil.which(tool) or f"/bin/{tool}")
    me = Human(sim, tmp_path, path=str(bin_))
    assert me.sh("command -v kubectl").returncode != 0

    r = me.setup("halcyon")
    assert r.returncode == 0, (r.stdout, r.stderr)
    out = " ".join(r.stdout.split())
    assert "kubectl is not installed here, and this script installs nothing" in out
    assert "https://kubernetes.io/docs/tasks/tools/" in out and not LINK.search(out)
    config = (me.home / ".kube" / "config").read_text()  # there was none: the cluster's own file is it
    assert config == (me.home / ".kube" / "halcyon.yaml").read_text() and "current-context: halcyon" in config
    assert not list(me.home.rglob("kubectl*")) and sorted(p.name for p in bin_.iterdir()) == sorted(TOOLS)

    r = me.setup("nowhere")  # a name the organization does not have: said, with the ones it has
    assert r.returncode == 1 and "no cluster named nowhere in your organization (yours: halcyon)" in r.stderr
    (me.home / ".config" / "nationalcompute" / "token").unlink()
    r = me.setup("halcyon")
    assert r.returncode == 1 and "no token: save it at ~/.config/nationalcompute/token" in r.stderr


@pytest.mark.peers("ssh", "bash")
def test_on_a_slurm_cluster_slurm_login_then_ssh(sim_factory, tmp_path):
    sim = sim_factory("slurm")
    me = Human(sim, tmp_path)
    ssh = f"ssh -F {sim.ssh.config_path} -o BatchMode=yes -o IdentityAgent=none plover"
    from .conftest import wait_for

    wait_for(lambda: sim.ssh.host("plover"), 10, what="the login node to listen")
    r = me.setup("plover", shell="bash")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "installed slurm-login in ~/.local/bin" in r.stdout
    assert 'export PATH="$HOME/.local/bin:$PATH"' in r.stdout  # (not on this PATH yet: it says how)
    assert not (me.home / ".kube").exists()  # a Slurm cluster has no kubeconfig
    r = me.sh(f"{ssh} whoami")
    assert r.returncode == 255 and "Permission denied" in r.stderr  # no certificate yet

    me.env["PATH"] = f"{me.home}/.local/bin:{me.env['PATH']}"
    r = me.sh("slurm-login")
    assert r.returncode == 0 and "signed in to plover as kim for 24 hours" in r.stdout, (r.stdout, r.stderr)
    assert me.sh(f"{ssh} 'whoami; hostname'").stdout == "kim\nplover-login1\n"  # the guide's ssh <cluster>
