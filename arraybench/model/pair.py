"""A pair: two configurations of one case, with the one verdict every report reads (computed in
``analysis/pairs``, kept in results.json by its sides' keys, found by ``Pairs`` either way round).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Iterable, Literal, Mapping

from . import schema
from .cell import Cell, case_key

Verdict = Literal["faster", "slower", "level", "undecided"]
_OPPOSITE = {"faster": "slower", "slower": "faster", "level": "level", "undecided": "undecided"}


@dataclass(frozen=True)
class Pair:
    """``a`` against ``b``: ``ratio`` is a's time over b's, with its 95% interval and the verdict
    it supports, from ``rounds`` paired turns in ``processes`` processes."""

    a: Cell
    b: Cell
    a_label: str
    b_label: str
    ratio: float = 1.0
    ci_low: float = 1.0
    ci_high: float = 1.0
    verdict: Verdict = "undecided"
    processes: int = 0
    rounds: int = 0
    method: str = ""

    @property
    def case(self) -> str:
        """What its two sides have in common."""
        return case_key(self.a)

    def reversed(self) -> "Pair":
        """``b`` against ``a``: the inverse ratio and interval, the opposite verdict."""
        return replace(self, a=self.b, b=self.a, a_label=self.b_label, b_label=self.a_label,
                       ratio=1 / self.ratio, ci_low=1 / self.ci_high, ci_high=1 / self.ci_low,
                       verdict=_OPPOSITE[self.verdict])  # type: ignore[arg-type]

    @property
    def not_judged(self) -> str:
        """Why the pair was not judged (from ``method``); "" where it was."""
        return self.method.partition("not judged")[2].lstrip(": (").rstrip(")")

    @property
    def speedup(self) -> float:
        """How many times faster ``a`` is than ``b`` (below 1: slower)."""
        return 1 / self.ratio

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "a": self.a.key, "b": self.b.key,
                **{f.name: schema.to_json(getattr(self, f.name)) for f in fields(self)
                   if f.name not in ("a", "b")}}

    @classmethod
    def from_dict(cls, data: Any, cells: Mapping[str, Cell], where: str = "pair") -> "Pair | None":
        """A pair read back, each side the run's cell of the key it names; None where one names none."""
        if not isinstance(data, dict) or not all(isinstance(data.get(side), str) for side in "ab"):
            raise schema.SchemaError(f"{where}: expected an object naming its sides a and b")
        if data["a"] not in cells or data["b"] not in cells:
            return None
        a, b = cells[data["a"]], cells[data["b"]]
        read = schema.from_json(cls, {**data, "a": a.to_dict(), "b": b.to_dict()}, where=where)
        return replace(read, a=a, b=b)  # the run's own cells, not copies


class Pairs:
    """A run's pairs, found by their two sides' cells."""

    def __init__(self, pairs: Iterable[Pair] = ()) -> None:
        self._by_sides = {(p.a, p.b): p for p in pairs}

    def between(self, a: Cell, b: Cell) -> Pair | None:
        """``a`` against ``b``, whichever way round judged; None where they took no turns together."""
        found = self._by_sides.get((a, b))
        if found is not None:
            return found
        found = self._by_sides.get((b, a))
        return found.reversed() if found is not None else None
