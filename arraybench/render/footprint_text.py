"""A record's peak memory and energy per call in words, for the HTML report, the Markdown and
the findings (libraries whose peaks differ widely on a case: ``analysis.memory.memory_gaps``).

Where a figure is missing, the record's own reason goes in its place: an empty cell would read as
"costs nothing" or "forgot to measure", and neither is what happened.
"""

from __future__ import annotations

from typing import Iterable

from ..analysis.grouping import is_valid, library_label, size_text
from ..analysis.memory import FLOOR_BYTES, MemoryGap, allocator_reserve, memory_gaps, times_output
from ..model.record import Record
from ..units import PAGE_BYTES, format_peak, format_ratio, format_size

#: A record written before energy was measured keeps no reason of its own.
_NO_ENERGY_NOTE = "energy not measured (results written before arraybench measured it)"
_NO_PEAK_NOTE = "peak memory not measured (results written before arraybench measured it)"


def peak_text(r: Record) -> str:
    """The peak memory per call ("24 MB"), or "—" where there is none."""
    return format_peak(r.peak_bytes) if is_valid(r) and r.peak_bytes is not None else "—"


def peak_sub(r: Record) -> list[str]:
    """What goes under a peak: "2.1× the output", the caching allocator's reserve, or why none."""
    if not is_valid(r):
        return []
    if r.peak_bytes is None:
        return [r.peak_note or _NO_PEAK_NOTE]
    return peak_details(r)


def peak_details(r: Record) -> list[str]:
    """What to read beside a peak: "2.1× the output", "64 MB reserved by the caching allocator"."""
    out = []
    multiple = times_output(r)
    if multiple is not None and (r.peak_bytes or 0) >= PAGE_BYTES:
        out.append(f"{format_ratio(multiple)} the output")
    reserve = allocator_reserve(r)
    if reserve is not None:
        out.append(f"{format_size(reserve)} reserved by the caching allocator")
    return out


def gap_sentence(gap: MemoryGap) -> str:
    """"JAX CPU needs 2.0× the memory of PyTorch CPU for fft large (n = ...): 48 MB against 24 MB"."""
    more, less = gap.more, gap.less
    where = f"{more.workload} {size_text(more)}" + (f" on {more.machine}" if more.machine else "")
    if (less.peak_bytes or 0) < FLOOR_BYTES:
        text = (f"{library_label(more)} needs {format_size(more.peak_bytes)} per call for {where}, "
                f"{library_label(less)} under {format_size(FLOOR_BYTES)}")
    else:
        text = (f"{library_label(more)} needs {format_ratio(gap.ratio)} the memory of "
                f"{library_label(less)} for {where}: {format_size(more.peak_bytes)} against "
                f"{format_size(less.peak_bytes)}")
    said = [f"{library_label(r)}'s peak is {'; '.join(peak_details(r))}" for r in (more, less) if peak_details(r)]
    return text + (f" ({'; '.join(said)})" if said else "") + "."


def memory_findings(records: Iterable[Record]) -> list[str]:
    """The findings' sentences on memory: one per case whose libraries' peaks differ widely."""
    return [gap_sentence(gap) for gap in memory_gaps(records)]


def format_energy(joules: float | None) -> str:
    """Joules in three figures and a fitting unit: ``0.0123`` -> ``"12.3 mJ"``; None -> "—"."""
    if joules is None:
        return "—"
    for unit, scale in (("J", 1.0), ("mJ", 1e-3), ("µJ", 1e-6)):
        if joules >= scale * 0.9995 or unit == "µJ":
            return f"{joules / scale:.3g} {unit}"
    return f"{joules:.3g} J"  # unreachable


def energy_why(r: Record) -> str:
    """Why a record has no energy figure (its own words), or "" where it has one."""
    return "" if r.energy_j is not None else (r.energy_note or _NO_ENERGY_NOTE)


def energy_measured(records: Iterable[Record]) -> bool:
    """Whether any valid record has an energy figure (a column is worth its room)."""
    return any(is_valid(r) and r.energy_j is not None for r in records)


def energy_absent(records: Iterable[Record]) -> list[str]:
    """Where no column shows energy: one line per reason, naming the configurations it holds for,
    so that every valid record's missing figure is explained."""
    why: dict[str, list[str]] = {}
    for r in records:
        if is_valid(r) and r.energy_j is None:
            labels = why.setdefault(energy_why(r), [])
            if r.config_label not in labels:
                labels.append(r.config_label)
    return [f"Energy per call not measured for {', '.join(labels)}: {reason}" for reason, labels in why.items()]
