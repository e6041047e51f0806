"""ncui: a researcher's first GPU job on National Compute, in the terminal."""

import sys

__version__ = "0.1.0"

# httpx imports its command-line client (click, pygments, rich.syntax, rich.progress: ~120 ms) whenever those are
# installed, and ncui never runs it: a None entry makes that one import fail, and httpx falls back to its stub
# ``httpx.main`` (httpx/__init__.py). Every ncui process that loads httpx gains it: the app once connecting,
# `ncui report` (the kubectl sign-in plugin loads no httpx at all). A no-op where httpx is loaded already.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
