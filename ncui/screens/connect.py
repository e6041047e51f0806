"""Account's words for the kubeconfig files (the ``kube_files`` slice ``flows/connect.py`` writes): where the
active cluster's kubeconfig went and whether the human's own kubectl finds it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

if TYPE_CHECKING:
    from ..flows.connect import KubeFiles


def kube_files_text(kf: KubeFiles) -> Text:
    """Account's lines under "kubectl": the files the human's own kubectl can use."""
    t = Text()
    if kf.error:
        t.append(f"⚠ {kf.error}", style="yellow")
        return t
    if not kf.file:
        return t
    t.append(kf.file if len(kf.file) <= 36 else "…" + kf.file[-35:])  # (the demo's stand-in folder is long)
    if kf.context == "in config":
        t.append(f"\n--context {kf.cluster} works in any shell", style="green")
    elif kf.context == "declined":
        t.append("\nnot in config: export KUBECONFIG=↑", style="dim")  # (the guide's manual path)
    return t
