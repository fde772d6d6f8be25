"""A pair: two configurations of one case, with the one verdict every report reads
(computed in ``analysis/pairs``; kept in results.json as ``pairs``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from . import schema

Verdict = Literal["faster", "slower", "level", "undecided"]
_OPPOSITE = {"faster": "slower", "slower": "faster", "level": "level", "undecided": "undecided"}


@dataclass(frozen=True)
class Pair:
    """``a`` against ``b``: ``ratio`` is a's time over b's (below 1: a is faster), with its 95%
    interval ``ci_low``–``ci_high`` and the verdict it supports, from ``rounds`` paired turns in
    ``processes`` processes (``method`` says how the interval was formed)."""

    case: str
    a: str
    b: str
    a_label: str
    b_label: str
    ratio: float = 1.0
    ci_low: float = 1.0
    ci_high: float = 1.0
    verdict: Verdict = "undecided"
    processes: int = 0
    rounds: int = 0
    method: str = ""

    def reversed(self) -> "Pair":
        """``b`` against ``a``: the inverse ratio and interval, the opposite verdict."""
        return replace(self, a=self.b, b=self.a, a_label=self.b_label, b_label=self.a_label,
                       ratio=1 / self.ratio, ci_low=1 / self.ci_high, ci_high=1 / self.ci_low,
                       verdict=_OPPOSITE[self.verdict])  # type: ignore[arg-type]

    @property
    def speedup(self) -> float:
        """How many times faster ``a`` is than ``b`` (below 1: slower)."""
        return 1 / self.ratio

    def to_dict(self) -> dict[str, Any]:
        return schema.to_json(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "pair") -> "Pair":
        return schema.from_json(cls, data, where=where)
