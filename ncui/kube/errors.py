"""The Kubernetes client's errors: what the cluster refused, a stale watch, a sign-in to approve. No Textual here.

Their own module so that what only needs to catch them (the sign-in gate, the chat's kubectl) imports neither
httpx nor the client: ``kube/client.py`` re-exports them.
"""

from __future__ import annotations

from ..textsafe import clean

__all__ = ["Gone", "KubeError", "NotSignedIn", "clean_line"]


def clean_line(text: str, limit: int = 2000) -> str:
    """One line of a server's text, safe to show (``textsafe.clean``), runs of spaces as one, bounded."""
    return " ".join(clean(str(text)).split())[:limit]


# ---- errors --------------------------------------------------------------------------------------


class KubeError(Exception):
    """The cluster refused or could not be reached. ``message`` is the Status message (kubectl prints it)."""

    def __init__(self, status: int | None, reason: str, message: str, immutable: tuple[str, ...] = ()) -> None:
        self.status = status
        self.reason = clean_line(reason, 200)  # both from the server: safe to show (textsafe)
        self.message = clean_line(message)
        self.immutable = tuple(clean_line(f, 200) for f in immutable)  # 422: the fields it says cannot change
        super().__init__(self._sentence())

    @property
    def brief(self) -> str:
        """The message, without the value an immutable field's refusal prints whole (a Job's template in Go
        syntax, thousands of characters): ``Job.batch "x" is invalid: spec.template: field is immutable``."""
        if not self.immutable:
            return self.message
        head = self.message.split(" is invalid: ", 1)[0]
        return f"{head} is invalid: " + ", ".join(f"{f}: field is immutable" for f in self.immutable)

    def _sentence(self) -> str:
        if self.status is None:
            return f"cannot reach the cluster: {self.message}"
        if self.status in (401, 403) and self.reason == "Unauthorized":
            return f"the cluster does not accept the sign-in: {self.message}"
        return f"the cluster answered {self.status} {self.reason}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, reason={self.reason!r}, message={self.message!r})"


class Gone(KubeError):
    """410: the resourceVersion is older than the server's history; list again. Also a resourceVersion the
    server never reached (504 ResourceVersionTooLarge): a restarted or different cluster; list again."""


class NotSignedIn(KubeError):
    """The sign-in plugin has no credential: the human must open ``link`` and approve it."""

    def __init__(self, link: str | None, message: str = "") -> None:
        self.link = link
        super().__init__(401, "NotSignedIn", message or "sign in to the cluster first")

    def _sentence(self) -> str:
        if self.link:
            return f"not signed in to the cluster: open {self.link} and approve the sign-in"
        return f"not signed in to the cluster: {self.message}"
