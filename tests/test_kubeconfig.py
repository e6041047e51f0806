"""The kubeconfig where the human's own kubectl finds it (ncui/kube/kubeconfig.py): ~/.kube/<cluster>.yaml
mode 600, a <cluster> context merged into ~/.kube/config without touching anything else, a config ncui cannot
read left alone, kubectl's lock respected, the answer remembered per cluster."""

from __future__ import annotations

import stat

import pytest
import yaml

from ncui.kube.kubeconfig import KubeconfigError, KubeHome
from ncui.sim.app import kubeconfig_yaml

PORTAL = kubeconfig_yaml("halcyon", "http://127.0.0.1:9", "https://127.0.0.1:10", b"CA")


def _home(tmp_path) -> KubeHome:
    return KubeHome(tmp_path / ".kube", tmp_path / "state" / "kube-contexts.json")


def test_the_cluster_file_is_private_and_written_only_when_changed(tmp_path):
    home = _home(tmp_path)
    path = home.save("halcyon", PORTAL)
    assert path == tmp_path / ".kube" / "halcyon.yaml" and path.read_text() == PORTAL
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    before = path.stat().st_ino
    home.save("halcyon", PORTAL)
    assert path.stat().st_ino == before  # the same text: not rewritten
    with pytest.raises(KubeconfigError, match="cannot be a file name"):
        home.save("../evil", PORTAL)  # a server's name never picks a path
    assert not (tmp_path / "evil.yaml").exists()


def test_merge_creates_a_private_config_then_keeps_every_other_entry(tmp_path):
    home = _home(tmp_path)
    assert home.merge("halcyon", PORTAL) == "added"
    doc = yaml.safe_load(home.config.read_text())
    assert stat.S_IMODE(home.config.stat().st_mode) == 0o600
    assert doc["current-context"] == "halcyon" and [c["name"] for c in doc["contexts"]] == ["halcyon"]
    assert home.merged("halcyon", PORTAL) and home.merge("halcyon", PORTAL) == "unchanged"

    # Someone's own config: other contexts, a current context of theirs, preferences, a looser mode.
    theirs = {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {"colors": True},
        "clusters": [{"name": "prod", "cluster": {"server": "https://prod:6443"}}],
        "users": [{"name": "me", "user": {"token": "t0k"}}],
        "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "me"}}],
        "current-context": "prod",
    }
    home.config.write_text(yaml.safe_dump(theirs))
    home.config.chmod(0o640)
    assert home.merge("halcyon", PORTAL) == "added"
    doc = yaml.safe_load(home.config.read_text())
    assert doc["current-context"] == "prod" and doc["preferences"] == {"colors": True}
    assert [c["name"] for c in doc["contexts"]] == ["prod", "halcyon"]
    assert doc["users"][0] == {"name": "me", "user": {"token": "t0k"}}
    assert stat.S_IMODE(home.config.stat().st_mode) == 0o640  # their mode, kept
    # The portal's kubeconfig changed (a new address): the same-named entries are updated, nothing added.
    moved = kubeconfig_yaml("halcyon", "http://127.0.0.1:9", "https://127.0.0.1:11", b"CA")
    assert not home.merged("halcyon", moved) and home.merge("halcyon", moved) == "updated"
    doc = yaml.safe_load(home.config.read_text())
    assert len(doc["clusters"]) == 2 and doc["clusters"][1]["cluster"]["server"].startswith("https://127.0.0.1:11")


def test_a_config_ncui_cannot_read_or_one_being_written_is_left_alone(tmp_path):
    home = _home(tmp_path)
    home.folder.mkdir()
    for text in ("- just\n- a list\n", "clusters: {not: a list}\n", "key: [unclosed\n"):
        home.config.write_text(text)
        with pytest.raises(KubeconfigError):
            home.merge("halcyon", PORTAL)
        assert home.config.read_text() == text
    home.config.write_text("")
    (home.folder / "config.lock").write_text("")  # another kubectl is writing it
    with pytest.raises(KubeconfigError, match="another kubectl"):
        home.merge("halcyon", PORTAL)
    assert home.config.read_text() == ""


def test_the_answer_is_remembered_per_service_and_cluster(tmp_path):
    home = _home(tmp_path)
    assert home.answer("https://nc", "halcyon") is None
    home.remember("https://nc", "halcyon", True)
    home.remember("https://nc", "osprey", False)
    again = _home(tmp_path)  # another session
    assert again.answer("https://nc/", "halcyon") is True and again.answer("https://nc", "osprey") is False
    assert again.answer("http://127.0.0.1:5", "halcyon") is None  # another service's halcyon: not answered
    assert stat.S_IMODE(home.answers.stat().st_mode) == 0o600
