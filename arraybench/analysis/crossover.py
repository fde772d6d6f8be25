"""Crossovers: from which size one configuration beats another, found in measured records alone.

At each size a *win* is a's 95% interval wholly below b's, a *loss* wholly above, else *level*;
the crossover is where a's last loss gives way to a lasting lead, interpolated in log-log space.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..model.record import Record


@dataclass(frozen=True)
class Point:
    """One configuration at one size: its median and the median's 95% CI, in seconds."""

    size: int
    median: float
    low: float | None = None
    high: float | None = None


def outcome(a: Point, b: Point) -> str:
    """'win', 'loss' or 'level' for a against b at one size (a missing end of a CI is its median)."""
    a_lo, a_hi, b_lo, b_hi = (p.median if v is None else v for p in (a, b) for v in (p.low, p.high))
    return "win" if a_hi < b_lo else "loss" if a_lo > b_hi else "level"


@dataclass(frozen=True)
class Crossover:
    """How configuration ``a`` compares with ``b`` on one workload across sizes."""

    workload: str
    a: str  # label of the configuration that may win
    b: str  # label of the one it is compared with
    kind: str  # "from" | "always" | "never" | "level"
    size: float | None = None  # interpolated crossover size (kind "from")
    lower: int | None = None  # the measured sizes that bracket it
    upper: int | None = None
    sizes: tuple[int, int] = (0, 0)  # smallest and largest size compared
    ratio_at_largest: float | None = None  # a's time / b's time at the largest size
    level_from: int | None = None  # from this size on, the two are within each other's CIs


def find(workload: str, a_label: str, a: Sequence[Point], b_label: str, b: Sequence[Point]) -> Crossover | None:
    """Compare two series at their common sizes (at least two); None when they share fewer."""
    a_map = {p.size: p for p in a}
    b_map = {p.size: p for p in b}
    sizes = sorted(set(a_map) & set(b_map))
    if len(sizes) < 2:
        return None
    results = [outcome(a_map[s], b_map[s]) for s in sizes]
    ratios = [a_map[s].median / b_map[s].median for s in sizes]
    # The first size of the run of "level" the series ends in, if it ends in one.
    levels = next((i for i, r in enumerate(reversed(results)) if r != "level"), len(results))
    level_from = sizes[-levels] if levels else None
    base = dict(workload=workload, a=a_label, b=b_label, sizes=(sizes[0], sizes[-1]),
                ratio_at_largest=ratios[-1])
    if "win" not in results:
        return Crossover(kind="never" if "loss" in results else "level", **base)
    if "loss" not in results:
        return Crossover(kind="always", level_from=level_from if level_from != sizes[0] else None, **base)
    last_loss = max(k for k, r in enumerate(results) if r == "loss")
    if "win" not in results[last_loss + 1:]:
        return Crossover(kind="never", **base)  # its wins came before a later, lasting deficit
    s0, s1 = sizes[last_loss], sizes[last_loss + 1]
    r0, r1 = math.log(ratios[last_loss]), math.log(ratios[last_loss + 1])
    t = r0 / (r0 - r1) if r0 > 0 > r1 else 0.5
    size = math.exp(math.log(s0) + t * (math.log(s1) - math.log(s0)))
    return Crossover(kind="from", size=size, lower=s0, upper=s1, level_from=level_from, **base)


def crossovers(records: Iterable[Record]) -> list[Crossover]:
    """Each configuration against NumPy on the CPU, a GPU against its CPU, compiled against eager,
    for every workload measured at several sizes."""
    records = list(records)
    by_workload: dict[str, dict[tuple, tuple[str, list[Point]]]] = {r.workload: {} for r in records}
    for r in records:
        if r.status == "ok" and r.median_s:
            key = (r.machine, r.backend, r.device, r.mode, r.transfer)  # one machine's series each
            points = by_workload[r.workload].setdefault(key, (r.config_label, []))[1]
            points.append(Point(r.size, r.median_s, r.ci_low_s, r.ci_high_s))
    found: list[Crossover] = []
    for workload, series in by_workload.items():
        for key in series:
            machine, backend, device, mode, transfer = key  # pairs within one machine
            # NumPy on the CPU; the same library on the CPU; the same configuration eager.
            others = [((machine, "numpy", "cpu", "latency", False), True),
                      ((machine, backend, "cpu", mode, False),
                       device != "cpu" and backend != "numpy"),
                      ((machine, backend, device, "latency", transfer), mode == "compiled")]
            found += filter(None, (find(workload, *series[key], *series[other]) for other, wanted
                                   in others if wanted and other != key and other in series))
    return found
