"""A record's peak memory and energy per call in words, for the HTML report and the Markdown.

Where a figure is missing, the record's own reason goes in its place: an empty cell would read as
"costs nothing" or "forgot to measure", and neither is what happened.
"""

from __future__ import annotations

from typing import Iterable

from ..analysis.grouping import is_valid
from ..analysis.memory import peak_details
from ..model.record import Record
from ..units import format_peak

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
