"""The run checks itself: one configuration measured against itself (A/A), beside the real run.

With ``self_check``, the plan's first configuration runs twice in every case it measures, the
second time as its ``TWIN`` (its own processes, taking turns with the rest). The two are identical,
so every verdict other than ``level`` or ``undecided`` between them is a false one: how often they
are called faster or slower is this machine's false-verdict rate, now, for this run's way of
measuring, and how far apart they read is its drift. A run with a false A/A verdict says that its
own verdicts are unreliable, where it shows them.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..host.environments import TWIN
from ..model.cell import case_key
from ..model.pair import Pair
from ..model.record import Record
from .pairs import pair


def split(records: Iterable[Record]) -> tuple[list[Record], list[Record]]:
    """(the run's own records, the self-check twin's)."""
    own, twins = [], []
    for r in records:
        (twins if r.environment == TWIN else own).append(r)
    return own, twins


def twin_pairs(twins: Sequence[Record], own: Sequence[Record], original: str) -> list[Pair]:
    """Each twin against its original (the same configuration in environment ``original``)."""
    by_config = {(case_key(r.cell), r.backend, r.device, r.mode, r.environment): r for r in own}
    out = []
    for t in twins:
        same = by_config.get((case_key(t.cell), t.backend, t.device, t.mode, original))
        if same is None or t.status != "ok" or same.status != "ok":
            continue
        found = pair(t, same)
        if found is not None:
            out.append(found)
    return out


@dataclass(frozen=True)
class SelfCheck:
    """What the A/A pairs of a run say of its verdicts."""

    pairs: tuple[Pair, ...]

    @property
    def false(self) -> list[Pair]:
        """The A/A pairs called faster or slower: each a false verdict."""
        return [p for p in self.pairs if p.verdict in ("faster", "slower")]

    @property
    def level(self) -> int:
        return sum(1 for p in self.pairs if p.verdict == "level")

    @property
    def reliable(self) -> bool:
        """No identical pair was called faster or slower."""
        return bool(self.pairs) and not self.false

    @property
    def worst(self) -> float:
        """The largest factor a false verdict put between a configuration and its twin."""
        return max((max(p.ratio, 1 / p.ratio) for p in self.false), default=1.0)

    @property
    def drift(self) -> float:
        """The median factor between a configuration and its twin (1.0: none)."""
        return math.exp(statistics.median(abs(math.log(p.ratio)) for p in self.pairs)) if self.pairs else 1.0
