"""One request to a cluster's API, as the handlers of the dispatch table get it: the cluster, the path's parts,
what the route's pattern bound, and (for a resource path) the resource it names."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request
from starlette.datastructures import QueryParams

from ..apiserver import Kube
from ..cluster import Cluster
from ..objects import BY_GV, Resource, find


class Target:
    """A resource path: the resource, its namespace, the object's name, a subresource and what follows it."""

    def __init__(self, r: Resource, ns: str | None, name: str | None, sub: str | None, rest: str) -> None:
        self.r, self.ns, self.name, self.sub, self.rest = r, ns, name, sub, rest


def parse_target(parts: list[str]) -> Target | None:
    """``api/v1/…`` or ``apis/GROUP/VERSION/…`` as a resource path (namespaced or not); None when it names none."""
    if parts[0] == "api" and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if (group, version) not in BY_GV or not rest:
        return None
    if rest[0] == "namespaces" and len(rest) >= 3 and find(group, version, rest[2]):
        r = find(group, version, rest[2])
        return Target(
            r, rest[1], rest[3] if len(rest) > 3 else None, rest[4] if len(rest) > 4 else None, "/".join(rest[5:])
        )
    r = find(group, version, rest[0])
    if r is None:
        return None
    return Target(r, None, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None, "/".join(rest[3:]))


@dataclass
class Call:
    """A request to cluster ``c`` (named ``cname``) for the path ``parts``; ``args``: what the pattern bound,
    ``t``: the resource a resource path names."""

    kube: Kube
    c: Cluster
    request: Request
    cname: str
    parts: list[str]
    args: dict[str, str] = field(default_factory=dict)
    t: Target | None = None

    @property
    def method(self) -> str:
        return self.request.method

    @property
    def q(self) -> QueryParams:
        return self.request.query_params

    @property
    def target(self) -> Target:
        assert self.t is not None, "a resource route without its target"
        return self.t
