"""One worker process's measurement of one cell (the ``Replicate``, the unit that repeats: a process
can run slow for its whole life), one shape from the timer to results.json, and its allocator state.

glibc serves a request of 128 KiB or more with ``mmap`` unless an earlier free raised its dynamic
threshold, so a call gets **fresh pages** (zeroed, a fault per 4 KiB: NumPy's FFT at n = 10⁶ took
37.8 ms) or **reuses memory** (17.8 ms) by accident of its process's past. So every worker starts
in a known state (``SETTINGS``, set by the parent, ``host/threads``): ``HEADLINE``, and a CPU cell
with large outputs is measured again in ``OTHER`` (``StateSamples``), kept beside it, never averaged.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Literal

from ..backends.base import Gradient
from . import schema

@dataclass(frozen=True)
class TimerSettings:
    """How to sample one cell in one worker process."""

    mode: Literal["latency", "throughput"] = "latency"  # each call waited for, or a batch issued and waited for once
    target_sample_s: float = 0.005  # one sample (a batch of calls) lasts at least this long
    min_samples: int = 5
    max_samples: int = 2000
    budget_s: float = 0.5  # sampling stops when this is spent, once min_samples are taken
    rel_ci: float = 0.02  # ...or as soon as the median's 95% CI half-width is within this
    warmup_s: float = 0.02
    cold: bool = False  # evict caches before every sample (forces one call per sample)
    max_batch_bytes: float = 2 * 1024**3  # throughput mode keeps a batch's results alive
    # -- inputs a call changes (``mutates=``), fresh for every call (``worker/timer``) --
    restore: str = "auto"  # "pool": copies refilled per batch; "per_call": before each call; "auto": by speed
    pool_bytes: float = 256 * 1024**2  # the most a pool of copies may take


#: The unit /proc counts CPU time in (USER_HZ, whatever the kernel's own tick).
TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def cut_error(counts: int) -> float:
    """Twice the spread of what the differences of ``counts`` /proc counts, each cut to a whole
    unit, may add up to on an idle machine: a load within it is no one's."""
    return 2 * TICK_S * math.sqrt(counts / 6)


#: Totals that add up across windows and across processes.
_SUMMED = ("calls", "wall_s", "user_s", "system_s", "minor_faults", "major_faults",
           "voluntary_switches", "involuntary_switches", "machine_busy_s", "steal_s",
           "machine_total_s", "load_sum", "load_readings")
_HARDWARE = ("instructions", "cycles", "cache_references", "cache_misses")


@dataclass
class Usage:
    """Totals counted around a cell's samples (never inside the timed loop), the rest of the
    machine's load meanwhile, and per-call rates derived from them."""

    calls: int = field(default=0, metadata=schema.NON_NEGATIVE)
    wall_s: float = field(default=0.0, metadata=schema.NON_NEGATIVE)
    user_s: float = field(default=0.0, metadata=schema.NON_NEGATIVE)
    system_s: float = field(default=0.0, metadata=schema.NON_NEGATIVE)
    minor_faults: int = field(default=0, metadata=schema.NON_NEGATIVE)
    major_faults: int = field(default=0, metadata=schema.NON_NEGATIVE)
    voluntary_switches: int = field(default=0, metadata=schema.NON_NEGATIVE)
    involuntary_switches: int = field(default=0, metadata=schema.NON_NEGATIVE)
    #: The largest rise of resident memory within one sample, above its level when the sample began.
    peak_growth_bytes: int | None = field(default=None, metadata=schema.NON_NEGATIVE)
    #: The whole machine (/proc/stat): CPU seconds busy (this process too), stolen, and available.
    machine_busy_s: float = field(default=0.0, metadata=schema.NON_NEGATIVE)
    steal_s: float = field(default=0.0, metadata=schema.NON_NEGATIVE)
    machine_total_s: float = field(default=0.0, metadata=schema.NON_NEGATIVE)
    machine_cpus: int | None = field(default=None, metadata={"min": 1})
    #: 1-minute load averages read at the end of each window, summed, and how many.
    load_sum: float = field(default=0.0, metadata=schema.NON_NEGATIVE)
    load_readings: int = field(default=0, metadata=schema.NON_NEGATIVE)
    #: Hardware counts (user space, every thread), None where not counted, and why not.
    instructions: int | None = field(default=None, metadata=schema.NON_NEGATIVE)
    cycles: int | None = field(default=None, metadata=schema.NON_NEGATIVE)
    cache_references: int | None = field(default=None, metadata=schema.NON_NEGATIVE)
    cache_misses: int | None = field(default=None, metadata=schema.NON_NEGATIVE)
    hardware_absent: str = ""

    # -- derived (``derive``) --
    cores: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    kernel_share: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    minor_faults_per_call: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    major_faults_per_call: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    voluntary_switches_per_call: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    involuntary_switches_per_call: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    instructions_per_call: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    cycles_per_call: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    ipc: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    cache_misses_per_call: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    others_cores: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    steal_share: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    load_average: float | None = field(default=None, metadata=schema.NON_NEGATIVE)

    # -- per sample, aligned with the replicate's *last* samples: they tell a bimodal cell's modes apart --
    sample_minor_faults: list[float] = field(default_factory=list, metadata=schema.NON_NEGATIVE)
    sample_cores: list[float] = field(default_factory=list, metadata=schema.NON_NEGATIVE)
    sample_kernel_share: list[float] = field(default_factory=list, metadata=schema.NON_NEGATIVE)
    sample_others_cores: list[float] = field(default_factory=list, metadata=schema.NON_NEGATIVE)

    def derive(self) -> "Usage":
        """This usage with its rates computed from its totals (returns self)."""
        cpu = self.user_s + self.system_s
        self.cores = cpu / self.wall_s if self.wall_s > 0 else None
        self.kernel_share = self.system_s / cpu if cpu > 0 else None
        for name in ("minor_faults", "major_faults", "voluntary_switches", "involuntary_switches",
                     "instructions", "cycles", "cache_misses"):
            total = getattr(self, name)
            setattr(self, f"{name}_per_call", None if total is None or not self.calls else total / self.calls)
        self.ipc = (self.instructions / self.cycles
                    if self.instructions is not None and self.cycles else None)
        if self.wall_s > 0 and self.machine_total_s > 0:
            # Two /proc/stat counts a window, each cut to a whole unit: nine 5 ms windows of an
            # idle machine read 0.3 of 2 cores taken by others.
            others = self.machine_busy_s - cpu
            self.others_cores = others / self.wall_s if others > cut_error(2 * self.load_readings) else 0.0
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


State = Literal["reused", "fresh"]
STATES: tuple[State, ...] = ("reused", "fresh")
#: The state of a record's headline time; the other is measured beside it where outputs are large.
HEADLINE: State = "reused"
OTHER: State = "fresh"

#: glibc's default mmap threshold: outputs this large come from mmap unless memory is kept.
LARGE_OUTPUT_BYTES = 128 * 1024

#: The variables that put glibc in each state, as it reads them at start-up (``mallopt``'s
#: M_MMAP_THRESHOLD and M_TRIM_THRESHOLD; setting either also turns off the dynamic threshold).
#: ``reused``: nothing up to 1 GiB is mmapped or trimmed. glibc keeps its own arenas: one arena
#: (MALLOC_ARENA_MAX=1) made JAX's threads take one lock per allocation, which no user's program
#: does (NPBench's cholesky took 5.8 ms of CPU a call against 2.8 ms). ``fresh``: glibc's default
#: threshold, fixed, so every output of 128 KiB or more is mapped and unmapped.
SETTINGS: dict[State, dict[str, int]] = {
    "reused": {"MALLOC_MMAP_THRESHOLD_": 1 << 30, "MALLOC_TRIM_THRESHOLD_": (1 << 31) - 1},
    # NumPy's huge-page advice takes effect only where the kernel placed a mapping on a 2 MiB
    # boundary, which varies with the process's past (NumPy's sort at n = 10⁶: 421 faults a call
    # in plain processes, 932 in workers); without it every fresh output is 4 KiB pages.
    "fresh": {"MALLOC_MMAP_THRESHOLD_": LARGE_OUTPUT_BYTES, "MALLOC_TRIM_THRESHOLD_": LARGE_OUTPUT_BYTES,
              "NUMPY_MADVISE_HUGEPAGE": 0},
}
#: Variables that mean the user chose the allocator's behaviour: arraybench leaves it alone then.
USER_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                  "MALLOC_MMAP_MAX_", "MALLOC_ARENA_MAX")

WORDS: dict[str, str] = {"reused": "reused memory", "fresh": "fresh pages"}


def environment(state: State) -> dict[str, str]:
    """The environment variables that start a glibc process in ``state``."""
    return {name: str(value) for name, value in SETTINGS[state].items()}


def shell_words(state: State) -> str:
    """``MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=2147483647``: as typed before a command."""
    return " ".join(f"{k}={v}" for k, v in SETTINGS[state].items())


@dataclass
class StateSamples:
    """One process's samples of a cell in the allocator state other than the headline's."""

    allocator: State
    samples_s: list[float] = field(default_factory=list, metadata={"min": 0})  # as ``Replicate``'s
    number: int | None = field(default=None, metadata={"min": 1})
    stop_reason: str = ""
    usage: Usage | None = None


Status = Literal["ok", "skipped", "failed", "wrong"]


@dataclass
class Replicate:
    """What one process measured of one cell, or why it could not (``status`` and ``reason``)."""

    status: Status = "ok"
    reason: str = ""
    #: How the library computed it: "eager", "jax.jit", "finite differences (...)".
    method: str = ""
    gradient: Gradient | None = None
    #: Which clocks timed it: "wall clock (computation is synchronous)", "wall clock and CUDA events".
    timer: str = ""
    warnings: list[str] = field(default_factory=list)
    #: Seconds per call, one per sample (a calibrated batch of ``number`` calls).
    samples_s: list[float] = field(default_factory=list, metadata=schema.SECONDS)
    #: The round of turns each sample was taken in (``executors/turns``): what pairs samples.
    rounds: list[int] | None = field(default=None, metadata={"min": 0})
    #: The rounds during which other processes used half a core or more (``executors/turns``).
    busy_rounds: list[int] = field(default_factory=list, metadata={"min": 0})
    device_samples_s: list[float] | None = field(default=None, metadata=schema.SECONDS)
    number: int | None = field(default=None, metadata={"min": 1})
    first_call_s: float | None = field(default=None, metadata=schema.SECONDS)
    warmup_calls: int | None = field(default=None, metadata=schema.NON_NEGATIVE)
    #: Why sampling ended: "converged", "budget", "max_samples", "stopped", "error".
    stop_reason: str = ""
    elapsed_s: float | None = field(default=None, metadata=schema.SECONDS)
    max_rel_error: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    tolerance: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    #: The work of one call, from the workload's model.
    flops: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    bytes: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    output_errors: list[float | None] = field(default_factory=list, metadata=schema.NON_NEGATIVE)
    output_names: list[str] = field(default_factory=list)
    reduced_precision: str = ""  # "tf32" where float32 matmuls ran in it
    #: The GPU's clocks, temperature, power and throttling around the cell, or ``{"unavailable": why}``.
    gpu_health: dict[str, Any] | None = None
    machine: str = ""  # the node that measured it, in a cluster run
    usage: Usage | None = None  # what the process used around its samples, and the machine's load
    #: Inputs restored outside the timer before every call (``mutates=``), and the clock reads per
    #: call the timer subtracted for it.
    restored: list[str] = field(default_factory=list)
    restore_overhead_s: float | None = field(default=None, metadata=schema.SECONDS)
    #: glibc's malloc state while ``samples_s`` were taken ("" where not controlled), and the other
    #: state's samples where outputs are ``LARGE_OUTPUT_BYTES`` or more.
    allocator: str = ""
    other_allocator: StateSamples | None = None
    output_bytes: int | None = field(default=None, metadata=schema.NON_NEGATIVE)

    # -- what a call costs besides time (``worker/footprint``), measured after sampling: bytes
    # one call added at its highest, joules per call; the notes say how, or why not --
    peak_bytes: int | None = field(default=None, metadata=schema.NON_NEGATIVE)
    peak_note: str = ""
    energy_j: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    energy_note: str = ""

    @classmethod
    def ended(cls, status: Status, reason: str) -> "Replicate":
        """A replicate that measured nothing: skipped or failed, and why."""
        return cls(status=status, reason=reason)

    @property
    def timed(self) -> bool:
        """Whether it holds samples."""
        return bool(self.samples_s)

    def samples_by_load(self) -> tuple[list[float], list[float]]:
        """(the samples of its quiet turns, those of its ``busy_rounds``)."""
        loaded = set(self.busy_rounds)
        busy = [r in loaded for r in self.rounds or [None] * len(self.samples_s)]
        return ([s for s, b in zip(self.samples_s, busy) if not b],
                [s for s, b in zip(self.samples_s, busy) if b])

    def to_dict(self) -> dict[str, Any]:
        return schema.to_json(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "replicate") -> "Replicate":
        """Validated against the annotations above; ``schema.SchemaError`` names a bad field."""
        rep = schema.from_json(cls, data, where=where)
        if rep.output_names and rep.output_errors and len(rep.output_names) != len(rep.output_errors):
            raise schema.SchemaError(f"{where}: {len(rep.output_names)} output names for "
                                     f"{len(rep.output_errors)} output errors")
        return rep
