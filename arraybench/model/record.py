"""A record: one cell, the replicates that measured it, and the figures derived from them.

A ``Record`` keeps what its processes measured (``replicates``) and derives every statistic from
them when first read (``functools.cached_property``, as torch's ``Measurement`` and
pytest-benchmark's ``Stats`` do). It stores only what its replicates cannot say: the cell, the
status, reason and warnings the aggregation gave it (``analysis.aggregate``), and why it got no
more processes. A file whose records kept no replicates (version 1, a contract-only file) reads
as a ``Summary`` (``model.summary``): the figures as stored, under the same names; either writes
the same keys, so a tool reading results.json sees every figure. Times are seconds per call; the
headline and its interval come from the processes' medians (``numeric.medians``), the quartiles,
the minimum and the coefficient of variation from the pooled samples. A record's replicates are
set before its figures are first read (``analysis.aggregate``), and not changed after.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from . import schema, untrusted
from ..errors import ResultsError
from ..numeric.medians import Interval, replicate_interval
from ..numeric.medians import coefficient_of_variation, iqr, median
from .allocator import StateSamples
from .cell import Cell, Dtype, Mode
from .replicate import Replicate, Status
from .summary import CONTRACT, Figures, Summary
from .usage import Usage, combine
from ..workloads.params import ParamValue

#: A cell is "measured while busy" when other processes used this share of the machine's CPUs
#: during its samples, or the hypervisor stole this share of its CPU time.
BUSY_OTHERS_SHARE = 0.10
BUSY_STEAL_SHARE = 0.05


def _first(values: Any, empty: Any = None) -> Any:
    return next((v for v in values if v not in (None, "")), empty)


def _first_of(name: str, empty: Any = None, timed: bool = False) -> Any:
    """A record's ``name``: the first of its replicates (its timed ones) that says one."""
    return cached_property(lambda rec: _first((getattr(rep, name) for rep in
                                                (rec.timed if timed else rec.replicates)), empty))


def _median_or_none(values: list[float]) -> float | None:
    return median(values) if values else None


def _median(rec: "Record", name: str) -> float | None:
    """The median of ``name`` over a record's timed replicates that measured one."""
    return _median_or_none([getattr(rep, name) for rep in rec.timed if getattr(rep, name) is not None])


def _median_of(name: str) -> Any:
    return cached_property(lambda rec: _median(rec, name))


def _note_of(measure: str, name: str) -> Any:
    """A record's note on ``measure``: the first timed replicate's words, from one that measured
    it where any did, else why none could."""
    def of(rec: "Record") -> str:
        measured = getattr(rec, measure) is not None
        return _first((getattr(rep, name) for rep in rec.timed
                       if (getattr(rep, measure) is not None) == measured), "")
    return cached_property(of)


def _from_interval(interval: str, end: str, empty: Any = None) -> Any:
    """A record's figure from one end of its interval (``interval`` or ``other_interval``)."""
    return cached_property(lambda rec: empty if getattr(rec, interval) is None
                           else getattr(getattr(rec, interval), end))


@dataclass
class Record(Figures):
    """One cell and the replicates that measured it; every figure derived from them."""

    workload: str
    size_label: str
    size: int
    backend: str
    device: str
    dtype: Dtype
    mode: Mode
    status: Status = "skipped"
    reason: str = ""
    transfer: bool = False
    warnings: list[str] = field(default_factory=list)
    machine: str = ""
    replicates: list[Replicate] = field(default_factory=list)
    replication_stop: str = ""
    params: dict[str, ParamValue] = field(default_factory=dict)
    environment: str = ""

    @classmethod
    def for_cell(cls, cell: Cell, status: Status = "skipped", reason: str = "") -> "Record":
        """An empty record of a cell (nothing measured yet)."""
        return cls(workload=cell.workload, size_label=cell.size_label, size=cell.size,
                   backend=cell.backend, device=cell.device, dtype=cell.dtype, mode=cell.mode,
                   status=status, reason=reason, transfer=cell.transfer, machine=cell.machine,
                   params=dict(cell.params), environment=cell.environment)

    @classmethod
    def from_dict(cls, data: Any, where: str = "record") -> "Record | Summary":
        """A record read back from JSON, every field checked (``ResultsError`` says what is
        wrong): a ``Record`` where it kept its replicates, else the ``Summary`` it stored."""
        if isinstance(data, dict):
            missing = [name for name in CONTRACT if name not in data]
            if missing:
                raise ResultsError(f"{where} lacks {', '.join(missing)}")
        try:
            if isinstance(data, dict):
                untrusted.check_names(data, where)
            stored = schema.from_json(Summary, data, where=where)
        except schema.SchemaError as exc:
            raise ResultsError(str(exc)) from None
        if not stored.replicates:
            return stored
        return cls(**{f.name: getattr(stored, f.name) for f in fields(cls)})

    # Each figure below is derived when first read and kept (``cached_property``); its type and
    # meaning are ``Summary``'s field of the same name.
    # -- what the replicates say: the first that says it, the worst error --------------------------
    method = _first_of("method", "")
    gradient = _first_of("gradient")
    timer = _first_of("timer", "")
    reduced_precision = _first_of("reduced_precision", "")
    flops = _first_of("flops")
    bytes = _first_of("bytes")
    tolerance = _first_of("tolerance")
    max_rel_error = cached_property(lambda rec: max(
        (rep.max_rel_error for rep in rec.replicates if rep.max_rel_error is not None), default=None))

    @cached_property
    def output_errors(self) -> list[float | None]:
        """Per output, the worst error of any process."""
        per_output = [rep.output_errors for rep in self.replicates if rep.output_errors]
        return [max((e[i] for e in per_output if e[i] is not None), default=None)
                for i in range(len(per_output[0]))] if per_output else []

    output_names = cached_property(lambda rec: list(_first(
        (rep.output_names for rep in rec.replicates if rep.output_names), [])) if rec.output_errors else [])

    # -- time, from the processes that took samples -----------------------------------------------
    @cached_property
    def timed(self) -> list[Replicate]:
        """The replicates that hold samples: every figure of time is theirs."""
        return [rep for rep in self.replicates if rep.timed]

    @cached_property
    def interval(self) -> Interval | None:
        """The headline and its 95% interval over the processes (None: nothing timed)."""
        return replicate_interval([rep.samples_s for rep in self.timed]) if self.timed else None

    median_s = _from_interval("interval", "center")
    ci_low_s = _from_interval("interval", "low")
    ci_high_s = _from_interval("interval", "high")
    ci_method = _from_interval("interval", "method", "")
    # The quartiles, the minimum and the variation are the pooled samples' (``samples_s``).
    n_samples = cached_property(lambda rec: len(rec.samples_s))
    n_replicates = cached_property(lambda rec: len(rec.timed))
    iqr_s = cached_property(lambda rec: iqr(rec.samples_s) if rec.samples_s else None)
    min_s = cached_property(lambda rec: min(rec.samples_s, default=None))
    cv = cached_property(lambda rec: coefficient_of_variation(rec.samples_s) if rec.samples_s else None)
    number = cached_property(lambda rec: max(rep.number or 1 for rep in rec.timed) if rec.timed else None)
    first_call_s = _median_of("first_call_s")
    device_median_s = cached_property(lambda rec: _median_or_none(
        [x for rep in rec.timed for x in (rep.device_samples_s or [])]))
    replicate_medians_s = cached_property(lambda rec: [median(rep.samples_s) for rep in rec.timed])

    @cached_property
    def compile_s(self) -> float | None:
        """Compiled mode: the first call over the fastest later call, per process (over the
        median, a loaded process's median as slow as its first call read 0 s for
        torch.compile's matmul); None where that is not above zero: compiling was not seen."""
        if self.mode != "compiled" or self.first_call_s is None:
            return None
        compiled = median([rep.first_call_s - min(rep.samples_s) for rep in self.timed
                           if rep.first_call_s is not None])
        return compiled if compiled > 0 else None

    @cached_property
    def replicate_spread(self) -> float | None:
        if self.median_s is None:
            return None
        spread = max(self.replicate_medians_s) - min(self.replicate_medians_s)
        return spread / self.median_s if self.median_s > 0 else 0.0

    usage = cached_property(lambda rec: combine(rep.usage for rep in rec.timed))
    busy = cached_property(lambda rec: None if rec.usage is None or rec.usage.others_cores is None
                           else busy_reason(rec) is not None)
    gpu_health = cached_property(lambda rec: _gpu_health([rep.gpu_health for rep in rec.timed if rep.gpu_health]))

    # -- what a call costs besides time: the median over the processes that measured it, with the
    # first one's words for how (or, where none measured, why not)
    energy_j = _median_of("energy_j")
    energy_note = _note_of("energy_j", "energy_note")
    peak_bytes = cached_property(lambda rec: None if (peak := _median(rec, "peak_bytes")) is None else int(peak))
    peak_note = _note_of("peak_bytes", "peak_note")
    output_bytes = _first_of("output_bytes", timed=True)

    # -- the C allocator's state: the headline's, and the other one's own figures from the same
    # processes, two numbers side by side, never one mean
    @cached_property
    def allocator(self) -> str:
        held = {rep.allocator for rep in self.timed}
        return held.pop() if len(held) == 1 else ""  # mixed: a run resumed across versions

    @cached_property
    def other(self) -> list[StateSamples]:
        """The other state's samples, where its processes all measured one state."""
        other = [rep.other_allocator for rep in self.timed
                 if rep.other_allocator is not None and rep.other_allocator.samples_s]
        return other if self.allocator and len({o.allocator for o in other}) == 1 else []

    other_interval = cached_property(lambda rec: replicate_interval([o.samples_s for o in rec.other])
                                     if rec.other else None)
    other_median_s = _from_interval("other_interval", "center")
    other_ci_low_s = _from_interval("other_interval", "low")
    other_ci_high_s = _from_interval("other_interval", "high")
    other_allocator = cached_property(lambda rec: rec.other[0].allocator if rec.other else "")
    other_n_replicates = cached_property(lambda rec: len(rec.other))
    other_faults_per_call = cached_property(lambda rec: None if (u := combine(o.usage for o in rec.other)) is None
                                            else u.minor_faults_per_call)


def busy_reason(rec: Record | Summary) -> str | None:
    """Why the machine counts as busy during the record's samples, or None when it was quiet."""
    u = rec.usage
    if u is None or u.others_cores is None:
        return None
    cpus = u.machine_cpus or 1
    parts = []
    if u.others_cores >= BUSY_OTHERS_SHARE * cpus:
        parts.append(f"other processes used {u.others_cores:.1f} of {cpus} cores")
    if u.steal_share is not None and u.steal_share >= BUSY_STEAL_SHARE:
        parts.append(f"the hypervisor stole {u.steal_share:.0%} of the CPU time")
    if not parts:
        return None
    if u.load_average is not None:
        parts.append(f"load average {u.load_average:.1f}")
    return ", ".join(parts)


def _gpu_health(health: list[dict[str, Any]]) -> dict[str, Any]:
    """The GPU's health over the processes' snapshots (``backends/gpu``): the first
    process's ``before``, the last one's ``after``, throttled samples summed, every reason seen;
    or why there was no monitor."""
    measured = [h for h in health if "before" in h]
    if not measured:
        reasons = [h["unavailable"] for h in health if h.get("unavailable")]
        return {"unavailable": reasons[0]} if reasons else {}
    seen: list[str] = []
    for h in measured:
        for name in [*h.get("reasons", []), *h["before"].get("throttle", []),
                     *(h.get("after") or {}).get("throttle", [])]:
            if name not in seen:
                seen.append(name)
    return {
        "before": measured[0]["before"],
        "after": measured[-1].get("after"),
        "throttled_samples": sum(int(h.get("throttled_samples", 0)) for h in measured),
        "samples": sum(int(h.get("samples", 0)) for h in measured),
        "reasons": seen,
    }

