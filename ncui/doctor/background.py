"""The contract check at start-up: once a day per service, in the background (the app starts it after it has
connected, well after the first frame), the same comparison as ``ncui doctor``'s, said in one line. No Textual.

The last result per service is kept in ``contract-check.json`` under ncui's state folder (``statefile``), so a
start within a day of the last check says the same line again without fetching anything.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .. import statefile
from ..config import state_dir

if TYPE_CHECKING:
    from ..config import Endpoints

VERSION = 1
EVERY = 24 * 3600.0  # seconds between two checks of one service
FILE = "contract-check.json"


def summary(checks: list[Any]) -> str:
    """One line for the drifts among ``checks`` ("" when none): the worst first, how many more."""
    from . import FAIL, OK

    bad = sorted((c for c in checks if c.status != OK), key=lambda c: c.status != FAIL)
    if not bad:
        return ""
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    return f"The service's contract changed: {bad[0].check}: {bad[0].reason}{more}. Run ncui doctor for each."


async def daily_drift(endpoints: Endpoints, now: float | None = None) -> str:
    """The drift line for ``endpoints``' service: fetched and compared when a day has passed since its last check
    (or it was never checked), else the last line kept. "" when compatible; when no document could be read (no
    network), "" and nothing kept, so the next start tries again."""
    import httpx

    from ..api.client import USER_AGENT
    from .contract import compare
    from .run import _fetch_docs

    now = time.time() if now is None else now
    path = state_dir() / FILE
    kept = statefile.read(path, VERSION).get("services", {}).get(endpoints.api)
    if isinstance(kept, dict) and isinstance(kept.get("at"), (int, float)) and 0 <= now - kept["at"] < EVERY:
        return str(kept.get("line") or "")
    async with httpx.AsyncClient(timeout=15, headers={"User-Agent": USER_AGENT}) as http:
        docs, _ = await _fetch_docs(http, endpoints.api)
    if not any(isinstance(d, dict) for d in docs.values()):
        return ""
    line = summary(compare(docs))

    def keep(data: dict[str, Any]) -> dict[str, Any]:
        services = statefile.obj(data.get("services"))
        services[endpoints.api] = {"at": now, "line": line}
        return {**data, "services": services}

    statefile.update(path, VERSION, keep)
    return line
