"""Findings across machines, for results that hold several (``merge``, a cluster run).

"Which of our machines should run this?": for each case, each machine's fastest configuration set
against the fastest machine's, judged on the 95% intervals as everywhere else; for a workload
measured at several sizes, one sentence at its largest size, and from which size the faster
machine pulls ahead (``crossover.find`` between the two machines' best configurations).
Speed-ups *between libraries* stay within one machine (``findings.winners``); these sentences are
the only ones that set machines against each other.
"""

from __future__ import annotations

import math
from typing import Iterable

from ..model.pair import Pairs
from ..model.record import Record
from ..units import format_seconds
from ..analysis.crossover import Point, find
from ..analysis.grouping import grouped, is_valid, library_label, significantly_faster, size_text
from .sentences import faster_by, not_apart


def two_figures(x: float | None) -> int:
    """An interpolated size is no more precise than two significant figures."""
    if x is None:
        return 0
    digits = max(0, int(math.floor(math.log10(max(x, 1)))) - 1)
    return int(round(x, -digits))


def _best_by_machine(group: Iterable[Record]) -> dict[str, Record]:
    best: dict[str, Record] = {}
    for r in group:
        if is_valid(r) and (r.machine not in best or r.median_s < best[r.machine].median_s):
            best[r.machine] = r
    return best


def _name(machine: str) -> str:
    return machine or "this machine"


def _points(records: Iterable[Record], like: Record) -> list[Point]:
    return [Point(r.size, r.median_s, r.ci_low_s, r.ci_high_s) for r in records
            if is_valid(r) and r.machine == like.machine and r.workload == like.workload
            and (r.backend, r.device, r.mode, r.transfer) == (like.backend, like.device, like.mode, like.transfer)]


def machine_findings(records: Iterable[Record], pairs: Pairs = Pairs()) -> list[str]:
    """One sentence per case (or per swept workload) that more than one machine measured."""
    records = list(records)
    if len({r.machine for r in records}) < 2:
        return []
    sizes_of: dict[str, set[int]] = {}
    for r in records:
        if is_valid(r):
            sizes_of.setdefault(r.workload, set()).add(r.size)
    out = []
    for (workload, _label), group in grouped(records).items():
        if workload.startswith("ceiling_"):
            continue
        swept = len(sizes_of.get(workload, ())) >= 3
        if swept and group[0].size != max(sizes_of[workload]):
            continue  # a sweep: one sentence, at its largest size
        best = _best_by_machine(group)
        if len(best) < 2:
            continue
        ranked = sorted(best.values(), key=lambda r: r.median_s)
        top = ranked[0]
        for other in ranked[1:]:
            where = f"{workload} {size_text(top)}"
            pair = (f"{library_label(top)} {format_seconds(top.median_s)} against "
                    f"{library_label(other)} {format_seconds(other.median_s)}, each machine's fastest")
            if not significantly_faster(top, other, pairs):
                out.append(f"On {where}, {_name(top.machine)} and {_name(other.machine)} are "
                           f"{not_apart(top, other, pairs)} ({pair}).")
                continue
            text = (f"On {where}, {_name(top.machine)} is {faster_by(top, other, pairs)} "
                    f"than {_name(other.machine)} ({pair})")
            if swept:
                c = find(workload, top.config_label, _points(records, top), other.config_label,
                         _points(records, other))
                if c is not None and c.kind == "from" and c.size:
                    text += f", from n ≈ {two_figures(c.size):,}"
                elif c is not None and c.kind == "always":
                    text += f", at every size measured from n = {c.sizes[0]:,}"
            out.append(text + ".")
    return out
