"""Typed errors of the National Compute API, each with one human sentence (``str(err)``).

Nothing here ever holds the token: messages are built from the response's status, slug and detail.
"""

from __future__ import annotations

from typing import Any

from ..money import dollars_to_ucredits, fmt_price
from ..textsafe import clean


class NCError(Exception):
    """Base: ``message`` is what a person reads; ``status`` the HTTP status when there was one."""

    slug = "error"

    def __init__(self, message: str, *, status: int | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.detail = detail

    def __str__(self) -> str:
        return self.message


class Unauthorized(NCError):
    slug = "unauthorized"


class Forbidden(NCError):
    slug = "forbidden"


class NotFound(NCError):
    slug = "not-found"


class Invalid(NCError):
    slug = "invalid"


class BidTooLow(Invalid):
    slug = "bid-too-low"

    def __init__(
        self, message: str, *, min_price_per_gpu_hour: int | None, status: int | None = None, detail: str = ""
    ) -> None:
        super().__init__(message, status=status, detail=detail)
        self.min_price_per_gpu_hour = min_price_per_gpu_hour


class VersionConflict(NCError):
    slug = "version-conflict"

    def __init__(
        self, message: str, *, current_version: int | None, status: int | None = None, detail: str = ""
    ) -> None:
        super().__init__(message, status=status, detail=detail)
        self.current_version = current_version


class ServerError(NCError):
    slug = "server-error"


class NetworkError(NCError):
    """The service could not be reached, or did not answer in time."""

    slug = "network"


class MalformedResponse(NCError):
    """The service answered, but not with what the contract says."""

    slug = "malformed"


# The error slugs ncui matches on (``error_from_response`` compares each class's ``slug``, nothing else): ``ncui
# doctor`` checks each is among the service's error codes. (Forbidden is told by its status alone.)
WIRE_ERRORS: tuple[type[NCError], ...] = (Unauthorized, BidTooLow, VersionConflict, NotFound, Invalid)


def error_from_response(status: int, body: object, *, what: str) -> NCError:
    """Map an HTTP error response to a typed error with a sentence a researcher can act on.

    ``what`` names the request in plain words ("reading the balance"). ``body`` is the parsed JSON
    (or None when it was not JSON).
    """
    slug = ""
    detail = ""
    extra: dict[str, Any] = {}  # the parsed JSON body
    if isinstance(body, dict):
        slug = str(body.get("error") or "")
        d = body.get("detail")
        detail = d if isinstance(d, str) else ""
        extra = body
    detail = _clean(detail)
    tail = f": {detail}" if detail else ""

    if status == 401 or slug == Unauthorized.slug:
        return Unauthorized(
            "National Compute did not accept the token (401) while "
            f"{what}. Check NC_TOKEN or ~/.config/nationalcompute/token{tail}",
            status=status,
            detail=detail,
        )
    if status == 403:
        return Forbidden(f"Not allowed while {what} (403){tail}", status=status, detail=detail)
    if slug == BidTooLow.slug:
        floor = None
        try:
            if extra.get("min_price_per_gpu_hour") is not None:
                floor = dollars_to_ucredits(extra["min_price_per_gpu_hour"])
        except ValueError:
            floor = None
        floor_txt = f"; the market's floor is {fmt_price(floor)}" if floor is not None else ""
        return BidTooLow(
            f"That limit price is too low to ever clear the market{floor_txt}.",
            min_price_per_gpu_hour=floor,
            status=status,
            detail=detail,
        )
    if status == 409 or slug == VersionConflict.slug:
        v = extra.get("version") if isinstance(extra.get("version"), int) else None
        now = f" (it is now version {v})" if v is not None else ""
        return VersionConflict(
            f"Someone changed this since it was read{now}; read it again and retry{tail}",
            current_version=v,
            status=status,
            detail=detail,
        )
    if status == 404 or slug == NotFound.slug:
        return NotFound(f"Not found while {what}{tail}", status=status, detail=detail)
    if status in (400, 422) or slug == Invalid.slug:
        return Invalid(
            f"National Compute refused the request while {what}{tail or ' (invalid)'}", status=status, detail=detail
        )
    if status >= 500:
        return ServerError(
            f"National Compute had an error ({status}) while {what}; try again shortly{tail}",
            status=status,
            detail=detail,
        )
    return NCError(f"Unexpected answer {status} while {what}{tail}", status=status, detail=detail)


def _clean(text: str, limit: int = 300) -> str:
    """One line safe to show (``textsafe.clean``: no terminal escapes from a hostile body), bounded in length."""
    out = clean(text)
    return out[:limit] + ("…" if len(out) > limit else "")
