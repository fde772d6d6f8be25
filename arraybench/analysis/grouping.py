"""Grouping and ordering of records, shared by the analysis and every rendering."""

from __future__ import annotations

from typing import Iterable

from ..backends import SPECS
from ..model.cell import config_label
from ..model.results import Pairs
from ..model.record import Record
from ..model.runs import Entry
from ..workloads.params import describe as describe_params
from .pairs import verdict

_BACKEND_ORDER = {name: i for i, name in enumerate(SPECS)}
_MODE_ORDER = {"latency": 0, "throughput": 1, "compiled": 2}


def config_sort_key(r: Record) -> tuple:
    """NumPy first, then PyTorch, JAX, CuPy; CPU before GPU; latency, throughput, compiled."""
    return (r.machine, _BACKEND_ORDER.get(r.backend, 99), r.device, r.transfer,
            _MODE_ORDER.get(r.mode, 9), r.mode, r.environment)


def library_label(r: Record) -> str:
    """The configuration's name without its machine ("PyTorch CPU")."""
    return config_label(r.backend, r.device, r.mode, transfer=r.transfer, gradient=r.gradient,
                        environment=r.environment)


def size_sort_key(r: Record) -> tuple:
    return (r.size, r.size_label)


def grouped(records: Iterable[Record]) -> dict[tuple[str, str], list[Record]]:
    """Records by (workload, size label), workloads in first-seen order and sizes ascending."""
    records = list(records)
    order = {w: i for i, w in enumerate(dict.fromkeys(r.workload for r in records))}
    out: dict[tuple[str, str], list[Record]] = {}
    for r in sorted(records, key=lambda r: (order[r.workload], size_sort_key(r))):
        out.setdefault((r.workload, r.size_label), []).append(r)
    return {key: sorted(group, key=config_sort_key) for key, group in out.items()}


def is_valid(r: Record | Entry) -> bool:
    """A time that may be shown as a result: measured and correct (a record, or a stored one)."""
    return r.status == "ok" and r.median_s is not None and r.median_s > 0


def baseline(group: Iterable[Record]) -> Record | None:
    """NumPy on the CPU, eager, no transfer: the reference every speed-up is relative to."""
    return next((r for r in group if r.backend == "numpy" and r.device == "cpu" and r.mode == "latency"
                 and not r.transfer and is_valid(r)), None)


def baselines(group: Iterable[Record]) -> dict[str, Record | None]:
    """Each machine's baseline in a group, by label: a speed-up is always within one machine."""
    group = list(group)
    return {m: baseline(r for r in group if r.machine == m) for m in dict.fromkeys(r.machine for r in group)}


def decided_winner(group: Iterable[Record], pairs: Pairs = Pairs()) -> Record | None:
    """The valid record of a group faster than every other with 95% confidence; None where the
    run cannot name one (not always the lowest median: a pair's verdict reads paired turns)."""
    valid = [r for r in group if is_valid(r)]
    return next((best for best in sorted(valid, key=lambda r: r.median_s)
                 if all(significantly_faster(best, r, pairs) for r in valid if r is not best)), None)


def significantly_faster(a: Record, b: Record, pairs: Pairs = Pairs()) -> bool:
    """Whether ``a`` is faster than ``b`` with 95% confidence (``comparison``)."""
    return comparison(a, b, pairs)[0] == "faster"


def comparison(a: Record, b: Record, pairs: Pairs = Pairs()) -> tuple[str, float]:
    """``a`` against ``b``: the verdict and how many times faster ``a`` is, from their pair where
    they took turns together, else from the two medians' intervals."""
    found = pairs.between(a.cell, b.cell)
    if found is not None:
        return found.verdict, found.speedup
    a_low, a_high = a.ci_low_s or a.median_s, a.ci_high_s or a.median_s
    b_low, b_high = b.ci_low_s or b.median_s, b.ci_high_s or b.median_s
    return verdict(a_low / b_high, a_high / b_low), b.median_s / a.median_s


def size_text(r: Record) -> str:
    """``large (n = 2,000)`` or ``n = 4,096``; settings follow the size (``n = 200, tsteps = 20``)."""
    n = f"n = {r.size:,}" + (f", {describe_params(r.params)}" if r.params else "")
    return n if r.size_label == str(r.size) else f"{r.size_label} ({n})"


def size_detail(r: Record) -> str:
    """What a table shows under a size's label: ``n = 2,000``, with the settings; "" if nothing."""
    parts = [f"n = {r.size:,}"] if r.size_label != str(r.size) else []
    if r.params:
        parts.append(describe_params(r.params))
    return ", ".join(parts)


def swept_workloads(records: Iterable[Record]) -> list[str]:
    """Workloads validly measured at three or more sizes: a sweep, summed up by its crossovers."""
    records = list(records)
    return [w for w in dict.fromkeys(r.workload for r in records)
            if len({r.size for r in records if r.workload == w and is_valid(r)}) >= 3]
