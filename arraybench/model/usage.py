"""What a process used while it sampled a cell, and what the rest of the machine was doing meanwhile.

A ``Usage`` holds totals counted around the samples (never inside the timed loop; ``counters``
reads them in the worker) and the rates derived from them: cores used, the kernel's share of the
CPU time, page faults and context switches per call, the peak memory growth within a sample,
hardware counts per call where the machine exposes them, and the load from other processes
(their CPU time, time stolen by the hypervisor, the load average). A replicate carries one per
process; a record carries the totals of its replicates, rates derived again (``combine``).

The ``sample_*`` lists are per sample drawn in a window, aligned with the *last* entries of the
replicate's ``samples_s`` (a slow warm-up call kept as the first sample is not counted): they let
the analysis say which quantity differs between the modes of a bimodal cell.
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

    #: Calls made inside the windows (the timed batches and any re-warming call).
    calls: int = field(default=0, metadata=_NON_NEGATIVE)
    wall_s: float = field(default=0.0, metadata=_NON_NEGATIVE)
    #: CPU time of this process, all its threads, in user space and in the kernel.
    user_s: float = field(default=0.0, metadata=_NON_NEGATIVE)
    system_s: float = field(default=0.0, metadata=_NON_NEGATIVE)
    minor_faults: int = field(default=0, metadata=_NON_NEGATIVE)
    major_faults: int = field(default=0, metadata=_NON_NEGATIVE)
    voluntary_switches: int = field(default=0, metadata=_NON_NEGATIVE)
    involuntary_switches: int = field(default=0, metadata=_NON_NEGATIVE)
    #: The largest rise of resident memory within one sample, above its level when the sample began.
    peak_growth_bytes: int | None = field(default=None, metadata=_NON_NEGATIVE)
    #: The whole machine over the windows (from /proc/stat): CPU seconds busy (every process,
    #: this one included), stolen by the hypervisor, and available (wall time x CPUs).
    machine_busy_s: float = field(default=0.0, metadata=_NON_NEGATIVE)
    steal_s: float = field(default=0.0, metadata=_NON_NEGATIVE)
    machine_total_s: float = field(default=0.0, metadata=_NON_NEGATIVE)
    machine_cpus: int | None = field(default=None, metadata={"min": 1})
    #: 1-minute load averages read at the end of each window, summed, and how many.
    load_sum: float = field(default=0.0, metadata=_NON_NEGATIVE)
    load_readings: int = field(default=0, metadata=_NON_NEGATIVE)
    #: Hardware counts over the windows (user space, every thread), or None where not counted.
    instructions: int | None = field(default=None, metadata=_NON_NEGATIVE)
    cycles: int | None = field(default=None, metadata=_NON_NEGATIVE)
    cache_references: int | None = field(default=None, metadata=_NON_NEGATIVE)
    cache_misses: int | None = field(default=None, metadata=_NON_NEGATIVE)
    #: Why hardware counts are absent ("" when they were counted).
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
    #: Cores used by every other process during the windows, and the share of the machine's CPU
    #: time the hypervisor stole.
    others_cores: float | None = field(default=None, metadata=_NON_NEGATIVE)
    steal_share: float | None = field(default=None, metadata=_NON_NEGATIVE)
    load_average: float | None = field(default=None, metadata=_NON_NEGATIVE)

    # -- per sample window, aligned with the last samples of the replicate --
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
        self.minor_faults_per_call = per_call(self.minor_faults)
        self.major_faults_per_call = per_call(self.major_faults)
        self.voluntary_switches_per_call = per_call(self.voluntary_switches)
        self.involuntary_switches_per_call = per_call(self.involuntary_switches)
        self.instructions_per_call = None if self.instructions is None else per_call(self.instructions)
        self.cycles_per_call = None if self.cycles is None else per_call(self.cycles)
        self.cache_misses_per_call = None if self.cache_misses is None else per_call(self.cache_misses)
        self.ipc = (self.instructions / self.cycles
                    if self.instructions is not None and self.cycles else None)
        if self.wall_s > 0 and self.machine_total_s > 0:
            # /proc/stat counts in clock ticks (10 ms): over short windows the other processes'
            # share is only right on average, and never below zero.
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
    out.peak_growth_bytes = max(growth) if growth else None
    for name in _HARDWARE:
        values = [getattr(u, name) for u in present]
        setattr(out, name, None if any(v is None for v in values) else sum(values))
    reasons = [u.hardware_absent for u in present if u.hardware_absent]
    out.hardware_absent = reasons[0] if reasons else ""
    return out.derive()


#: The derived rates, in the order reports show them.
RATES: tuple[str, ...] = ("cores", "kernel_share", "minor_faults_per_call", "major_faults_per_call",
                          "voluntary_switches_per_call", "involuntary_switches_per_call",
                          "peak_growth_bytes", "instructions_per_call", "cycles_per_call", "ipc",
                          "cache_misses_per_call", "others_cores", "steal_share", "load_average")

#: Every scalar field (what a CSV row or a DataFrame column holds, prefixed ``usage.``).
SCALARS: tuple[str, ...] = tuple(f.name for f in fields(Usage) if not f.name.startswith("sample_"))
