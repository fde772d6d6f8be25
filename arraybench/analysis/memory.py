"""What a call costs in memory, side by side: against its own output, between libraries on one
case, and between two runs of one cell. Peaks closer than ``FLOOR_BYTES`` are the same peak here:
the resident size moves by pages and by what the C allocator keeps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from ..model.record import Record
from ..units import format_ratio, format_size
from .grouping import grouped, is_valid

if TYPE_CHECKING:
    from .compare import Comparison

#: Libraries whose peaks differ by this factor or more on a case get a finding.
GAP_RATIO = 1.5
#: Peaks closer than this are not told apart (pages, the C allocator's free lists, a GPU pool's
#: rounded blocks move a measured peak by up to a few hundred kB).
FLOOR_BYTES = 1_000_000

# PyTorch's note names the most its caching allocator reserved: held from the GPU, not in tensors.
_RESERVED = re.compile(r"(\d+) bytes reserved at most")


def times_output(r: Record) -> float | None:
    """The peak as a multiple of the call's own output (2.1 for "2.1× the output"), where both are known."""
    return None if r.peak_bytes is None or not r.output_bytes else r.peak_bytes / r.output_bytes


def allocator_reserve(r: Record) -> int | None:
    """Bytes a caching allocator held from the device at most over the call; None where unsaid."""
    found = _RESERVED.search(r.peak_note or "")
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class MemoryGap:
    """Two libraries on one case whose peak memory per call differs by ``GAP_RATIO`` or more."""

    more: Record
    less: Record

    @property
    def ratio(self) -> float:
        """The larger peak over the smaller (infinite where the smaller is none)."""
        return self.more.peak_bytes / self.less.peak_bytes if self.less.peak_bytes else float("inf")


def memory_gaps(records: Iterable[Record]) -> list[MemoryGap]:
    """Per case and machine, the largest and smallest peak per call where they are ``GAP_RATIO`` apart."""
    out = []
    for (workload, _label), whole in grouped(records).items():
        if workload.startswith("ceiling_"):
            continue
        for machine in dict.fromkeys(r.machine for r in whole):
            measured = sorted((r for r in whole if r.machine == machine and is_valid(r)
                               and r.peak_bytes is not None), key=lambda r: r.peak_bytes)
            if len(measured) < 2:
                continue
            less, more = measured[0], measured[-1]
            if more.peak_bytes - less.peak_bytes >= FLOOR_BYTES and more.peak_bytes >= GAP_RATIO * less.peak_bytes:
                out.append(MemoryGap(more, less))
    return out


@dataclass(frozen=True)
class MemoryChange:
    """A cell whose peak memory per call changed between two runs, beyond the threshold and the floor."""

    base: Record
    new: Record

    @property
    def ratio(self) -> float:
        """new/base peak (infinite where the base call added none)."""
        return self.new.peak_bytes / self.base.peak_bytes if self.base.peak_bytes else float("inf")

    @property
    def grew(self) -> bool:
        return (self.new.peak_bytes or 0) > (self.base.peak_bytes or 0)

    def text(self) -> str:
        """"fft large PyTorch CPU: 24 MB → 48 MB (2.0× more)"."""
        r = self.new
        how = (f"{format_ratio(self.ratio)} more" if self.grew else
               f"{format_ratio(1 / self.ratio)} less" if self.ratio > 0 else "none now")
        return (f"{r.workload} {r.size_label} {r.config_label}: {format_size(self.base.peak_bytes)} → "
                f"{format_size(r.peak_bytes)} ({how})")


def _apart(base: Record, new: Record) -> bool:
    """Whether every process of one run peaked beyond every process of the other (true where a
    record keeps its median only, an older file's: judged on it)."""
    a, b = ([rep.peak_bytes for rep in r.replicates if rep.timed and rep.peak_bytes is not None]
            for r in (base, new))
    return not a or not b or min(b) > max(a) or max(b) < min(a)


def memory_changes(comparison: "Comparison", threshold: float | None = None) -> list[MemoryChange]:
    """Cells whose peak per call moved by more than ``threshold`` and ``FLOOR_BYTES``, processes apart."""
    limit = comparison.threshold if threshold is None else threshold
    return [MemoryChange(c.base, c.new) for c in comparison.changes
            if c.ratio is not None and (a := c.base.peak_bytes) is not None  # both valid, both measured
            and (b := c.new.peak_bytes) is not None and abs(b - a) >= FLOOR_BYTES
            and _apart(c.base, c.new) and (b > (1 + limit) * a or a > (1 + limit) * b)]


def memory_growth_above(comparison: "Comparison", limit: float) -> list[MemoryChange]:
    """Cells whose peak memory per call grew by more than ``limit``: what a memory gate fails."""
    return [m for m in memory_changes(comparison, limit) if m.grew]
