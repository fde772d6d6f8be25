"""What a process used while it sampled a cell, and what the rest of the machine was doing meanwhile.

Totals counted around the samples (never inside the timed loop), and the rates derived from them.
A record's usage is its replicates' totals, rates derived again (``combine``). The ``sample_*``
lists align with the *last* samples of the replicate: they tell a bimodal cell's modes apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Iterable

_NON_NEGATIVE = {"min": 0}

#: Totals that add up across windows and across processes.
_SUMMED = ("calls", "wall_s", "user_s", "system_s", "minor_faults", "major_faults",
           "voluntary_switches", "involuntary_switches", "machine_busy_s", "steal_s",
           "machine_total_s", "load_sum", "load_readings")
_HARDWARE = ("instructions", "cycles", "cache_references", "cache_misses")


@dataclass
class Usage:
    """Totals over the sample windows of a cell, and per-call rates derived from them."""

    calls: int = field(default=0, metadata=_NON_NEGATIVE)
    wall_s: float = field(default=0.0, metadata=_NON_NEGATIVE)
    user_s: float = field(default=0.0, metadata=_NON_NEGATIVE)
    system_s: float = field(default=0.0, metadata=_NON_NEGATIVE)
    minor_faults: int = field(default=0, metadata=_NON_NEGATIVE)
    major_faults: int = field(default=0, metadata=_NON_NEGATIVE)
    voluntary_switches: int = field(default=0, metadata=_NON_NEGATIVE)
    involuntary_switches: int = field(default=0, metadata=_NON_NEGATIVE)
    #: The largest rise of resident memory within one sample, above its level when the sample began.
    peak_growth_bytes: int | None = field(default=None, metadata=_NON_NEGATIVE)
    #: The whole machine (/proc/stat): CPU seconds busy (this process too), stolen, and available.
    machine_busy_s: float = field(default=0.0, metadata=_NON_NEGATIVE)
    steal_s: float = field(default=0.0, metadata=_NON_NEGATIVE)
    machine_total_s: float = field(default=0.0, metadata=_NON_NEGATIVE)
    machine_cpus: int | None = field(default=None, metadata={"min": 1})
    #: 1-minute load averages read at the end of each window, summed, and how many.
    load_sum: float = field(default=0.0, metadata=_NON_NEGATIVE)
    load_readings: int = field(default=0, metadata=_NON_NEGATIVE)
    #: Hardware counts (user space, every thread), None where not counted, and why not.
    instructions: int | None = field(default=None, metadata=_NON_NEGATIVE)
    cycles: int | None = field(default=None, metadata=_NON_NEGATIVE)
    cache_references: int | None = field(default=None, metadata=_NON_NEGATIVE)
    cache_misses: int | None = field(default=None, metadata=_NON_NEGATIVE)
    hardware_absent: str = ""

    # -- derived (``derive``) --
    cores: float | None = field(default=None, metadata=_NON_NEGATIVE)
    kernel_share: float | None = field(default=None, metadata=_NON_NEGATIVE)
    minor_faults_per_call: float | None = field(default=None, metadata=_NON_NEGATIVE)
    major_faults_per_call: float | None = field(default=None, metadata=_NON_NEGATIVE)
    voluntary_switches_per_call: float | None = field(default=None, metadata=_NON_NEGATIVE)
    involuntary_switches_per_call: float | None = field(default=None, metadata=_NON_NEGATIVE)
    instructions_per_call: float | None = field(default=None, metadata=_NON_NEGATIVE)
    cycles_per_call: float | None = field(default=None, metadata=_NON_NEGATIVE)
    ipc: float | None = field(default=None, metadata=_NON_NEGATIVE)
    cache_misses_per_call: float | None = field(default=None, metadata=_NON_NEGATIVE)
    others_cores: float | None = field(default=None, metadata=_NON_NEGATIVE)
    steal_share: float | None = field(default=None, metadata=_NON_NEGATIVE)
    load_average: float | None = field(default=None, metadata=_NON_NEGATIVE)

    # -- per sample, aligned with the replicate's last samples --
    sample_minor_faults: list[float] = field(default_factory=list, metadata=_NON_NEGATIVE)
    sample_cores: list[float] = field(default_factory=list, metadata=_NON_NEGATIVE)
    sample_kernel_share: list[float] = field(default_factory=list, metadata=_NON_NEGATIVE)
    sample_others_cores: list[float] = field(default_factory=list, metadata=_NON_NEGATIVE)

    def derive(self) -> "Usage":
        """This usage with its rates computed from its totals (returns self)."""
        cpu = self.user_s + self.system_s
        per_call = (lambda v: v / self.calls) if self.calls else (lambda v: None)
        self.cores = cpu / self.wall_s if self.wall_s > 0 else None
        self.kernel_share = self.system_s / cpu if cpu > 0 else None
        for name in ("minor_faults", "major_faults", "voluntary_switches", "involuntary_switches",
                     "instructions", "cycles", "cache_misses"):
            total = getattr(self, name)
            setattr(self, f"{name}_per_call", None if total is None else per_call(total))
        self.ipc = (self.instructions / self.cycles
                    if self.instructions is not None and self.cycles else None)
        if self.wall_s > 0 and self.machine_total_s > 0:
            # /proc/stat counts 10 ms ticks: over short windows this is right only on average.
            self.others_cores = max(self.machine_busy_s - cpu, 0.0) / self.wall_s
            self.steal_share = self.steal_s / self.machine_total_s
        else:
            self.others_cores = self.steal_share = None
        self.load_average = self.load_sum / self.load_readings if self.load_readings else None
        return self


def combine(usages: Iterable[Usage | None]) -> Usage | None:
    """The usage of several processes together: totals summed, rates derived again, the largest
    peak growth; per-sample lists are left with the replicates. None when none was counted."""
    present = [u for u in usages if u is not None and u.calls > 0]
    if not present:
        return None
    out = Usage(machine_cpus=present[0].machine_cpus)
    for name in _SUMMED:
        setattr(out, name, sum(getattr(u, name) for u in present))
    growth = [u.peak_growth_bytes for u in present if u.peak_growth_bytes is not None]
    out.peak_growth_bytes = max(growth, default=None)
    for name in _HARDWARE:
        values = [getattr(u, name) for u in present]
        setattr(out, name, None if any(v is None for v in values) else sum(values))
    out.hardware_absent = next((u.hardware_absent for u in present if u.hardware_absent), "")
    return out.derive()


#: The derived rates, in the order reports show them.
RATES: tuple[str, ...] = ("cores", "kernel_share", "minor_faults_per_call", "major_faults_per_call",
                          "voluntary_switches_per_call", "involuntary_switches_per_call",
                          "peak_growth_bytes", "instructions_per_call", "cycles_per_call", "ipc",
                          "cache_misses_per_call", "others_cores", "steal_share", "load_average")

#: Every scalar field (what a CSV row or a DataFrame column holds, prefixed ``usage.``).
SCALARS: tuple[str, ...] = tuple(f.name for f in fields(Usage) if not f.name.startswith("sample_"))
