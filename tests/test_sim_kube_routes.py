"""The box's Kubernetes router (ncui/sim/kube/routes/dispatch.py) is a table: each route's pattern matches what it
says, no route is hidden behind an earlier one, and only the version and health checks answer without a sign-in.
(What each route answers is the kubectl and client tests' business.)"""

from __future__ import annotations

from ncui.sim.kube.routes.dispatch import ROUTES, Route


async def _h(call):  # a handler the patterns below never call
    raise AssertionError("not called")


def test_a_pattern_binds_one_segment_per_name_and_the_rest_for_stars() -> None:
    one = Route(frozenset({"GET"}), "apis/{group}/{version}", _h)
    assert one.match("GET", ["apis", "batch", "v1"]) == {"group": "batch", "version": "v1"}
    assert one.match("GET", ["apis", "batch"]) is None and one.match("GET", ["apis", "batch", "v1", "jobs"]) is None
    assert one.match("POST", ["apis", "batch", "v1"]) is None
    rest = Route(frozenset({"GET"}), "openapi/v3/**", _h)
    assert rest.match("GET", ["openapi", "v3", "apis", "batch", "v1"]) == {"rest": "apis/batch/v1"}
    assert rest.match("GET", ["openapi", "v2", "x"]) is None
    root = Route(frozenset({"GET"}), "", _h)
    assert root.match("GET", []) == {} and root.match("GET", ["api"]) is None


def _sample(pattern: str) -> list[str]:
    out: list[str] = []
    for seg in pattern.split("/") if pattern else []:
        out += ["a", "b"] if seg == "**" else ["x" if seg.startswith("{") else seg]
    return out


def test_every_route_is_reached_first_by_a_path_of_its_own() -> None:
    for route in ROUTES:
        for method in sorted(route.methods):
            parts = _sample(route.pattern)
            first = next(r for r in ROUTES if r.match(method, parts) is not None)
            assert first is route, f"{method} /{'/'.join(parts)} goes to {first.pattern!r}, not {route.pattern!r}"


def test_only_the_version_and_health_checks_answer_without_a_sign_in() -> None:
    assert {r.pattern for r in ROUTES if not r.signed_in} == {"version", "healthz", "livez", "readyz"}
    assert ROUTES[-1].pattern == "**" and ROUTES[-1].signed_in  # anything else is a resource path, signed in
