"""A GPU market for one GPU model: other bidders, a floor, clearing, a price-to-win ladder.

Pure and deterministic: the other bidders move only with the market's own seeded RNG, consumed in a
fixed order every step, so the same seed gives the same ticks whatever our orgs do (their bids change
who wins, not how the others behave).

Clearing is a uniform-price auction over whole nodes: every node of demand is a unit at its bidder's
price; the ``capacity`` highest units win (ties go to units already held, then to a fixed order); all
winners are assessed the highest losing price, or the floor when nobody loses.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .money import CENT, to_cent


@dataclass
class Bidder:
    """Another organization's demand: ``nodes`` at ``price`` (µcredits per GPU hour)."""

    name: str
    nodes: int
    price: int
    base_nodes: int
    base_price: int
    held: int = 0
    pinned: bool = False  # a test's or an operator's bidder: does not drift


@dataclass(frozen=True)
class Demand:
    """One of our orgs' demand in this market for one step."""

    key: str
    price: int  # its ceiling per GPU hour
    nodes: int  # nodes it wants now (held ones included)
    held: int  # nodes it holds now (win ties)


@dataclass(frozen=True)
class Clearing:
    price: int
    winners: dict  # key -> nodes won (our demands and bidders alike)
    gpus: int  # GPUs held by all winners


@dataclass
class Market:
    gpu_model: str
    gpus_per_node: int
    capacity: int  # nodes the market sells (the pool less reserved base load)
    floor: int
    rng: random.Random
    bidders: list[Bidder] = field(default_factory=list)
    volatility: float = 1.0
    last: Clearing | None = None

    @classmethod
    def generate(
        cls,
        gpu_model: str,
        gpus_per_node: int,
        *,
        capacity: int,
        floor: int,
        typical: int,
        seed: int,
        n_bidders: int = 7,
        volatility: float = 1.0,
    ) -> Market:
        """A market whose other bidders want a little more than ``capacity`` around price ``typical``."""
        rng = random.Random(f"market:{gpu_model}:{seed}")
        bidders = []
        want = capacity + max(3, capacity // 4)  # a little more demand than supply: a price forms
        for i in range(n_bidders):
            nodes = max(1, want // n_bidders + (1 if i < want % n_bidders else 0))
            spread = rng.uniform(-0.25, 0.25)
            price = to_cent(max(floor, typical * (1 + spread)))
            bidders.append(Bidder(f"bidder-{i + 1}", nodes, price, nodes, price))
        return cls(gpu_model, gpus_per_node, capacity, floor, rng, bidders, volatility)

    # ---- the other bidders move ---------------------------------------------------------------

    def evolve(self) -> None:
        """One step (a virtual minute) of the others' demand: mean-reverting random walks."""
        for b in self.bidders:
            # Always draw the same numbers in the same order, so pinned bidders don't shift the rest.
            r_price, r_jump, r_nodes, r_dir = (
                self.rng.gauss(0, 1),
                self.rng.random(),
                self.rng.random(),
                self.rng.random(),
            )
            if b.pinned:
                continue
            drift = (b.base_price - b.price) * 0.08
            noise = r_price * b.base_price * 0.008 * self.volatility
            b.price = to_cent(max(self.floor, b.price + drift + noise))
            if r_jump < 0.004 * self.volatility:  # a rare surge or slump
                b.price = to_cent(max(self.floor, b.price * (1.25 if r_dir < 0.6 else 0.8)))
            if r_nodes < 0.04 * self.volatility:
                step = 1 if r_dir < 0.5 else -1
                if b.nodes <= b.base_nodes - 1:
                    step = 1
                elif b.nodes >= b.base_nodes + 1:
                    step = -1
                b.nodes = max(0, b.nodes + step)

    # ---- clearing -----------------------------------------------------------------------------

    def clear(self, ours: list[Demand]) -> Clearing:
        # (-price, not held, ours, order, key): at one price, held units first, then the others' (a
        # new bid must beat a price, not match it: that is what the ladder quotes), then in order.
        units: list[tuple[int, int, int, int, str]] = []
        order = 0
        for d in ours:
            for i in range(max(0, d.nodes)):
                units.append((-d.price, 0 if i < d.held else 1, 1, order, d.key))
                order += 1
        for b in self.bidders:
            for i in range(b.nodes):
                units.append((-b.price, 0 if i < b.held else 1, 0, order, b.name))
                order += 1
        units.sort()
        won = units[: self.capacity]
        lost = units[self.capacity :]
        price = max(self.floor, -lost[0][0]) if lost else self.floor
        winners: dict[str, int] = {}
        for u in won:
            winners[u[4]] = winners.get(u[4], 0) + 1
        for b in self.bidders:
            b.held = winners.get(b.name, 0)
        self.last = Clearing(price, winners, len(won) * self.gpus_per_node)
        return self.last

    # ---- what wins ----------------------------------------------------------------------------

    def price_to_win(self, nodes: int) -> int | None:
        """The lowest price per GPU hour that wins ``nodes`` nodes now, against the others' bids."""
        if nodes < 1 or nodes > self.capacity:
            return None
        others = sorted((b.price for b in self.bidders for _ in range(b.nodes)), reverse=True)
        room = self.capacity - nodes  # how many others may stay above us
        if len(others) <= room:
            return self.floor
        return max(self.floor, others[room] + CENT)

    def ladder(self, max_nodes: int = 8) -> list[tuple[int, int]]:
        out = []
        for n in range(1, min(max_nodes, self.capacity) + 1):
            p = self.price_to_win(n)
            if p is not None:
                out.append((n, p))
        return out
