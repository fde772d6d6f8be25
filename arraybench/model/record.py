"""A record: one cell, the replicates that measured it, and every figure derived from them when
first read (as torch's ``Measurement`` does). A file whose records kept no replicates reads as a
``Summary``, the figures as stored; both write the same keys (``Figures``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from . import schema
from ..backends.base import Gradient
from ..errors import ResultsError
from ..numeric.medians import Interval, coefficient_of_variation, iqr, median, replicate_interval
from .cell import Cell, Dtype, Mode, config_label
from .replicate import SCALARS as USAGE_SCALARS, Replicate, StateSamples, Status, Usage, combine
from ..workloads.params import ParamValue, text as params_text


class Figures:
    """What a record and a summary are read by: the cell, its names, its row and its JSON."""

    @property
    def cell(self) -> Cell:
        return Cell(**{f.name: getattr(self, f.name) for f in fields(Cell)} | {"params": dict(self.params)})

    @property
    def key(self) -> str:
        return self.cell.key

    @property
    def samples_s(self) -> list[float]:
        """Every sample of every replicate, in replicate order (per-call seconds)."""
        return [x for rep in self.replicates for x in rep.samples_s]

    @property
    def config_label(self) -> str:
        """How the record is named in plots and tables: "PyTorch GPU", "JAX CPU (jit)"."""
        return config_label(self.backend, self.device, self.mode, transfer=self.transfer,
                            gradient=self.gradient, machine=self.machine,
                            environment=self.environment)

    def summary(self) -> "Summary":
        return Summary(**{name: getattr(self, name) for name in NAMES})

    def to_dict(self) -> dict[str, Any]:
        return schema.to_json(self.summary())

    def to_row(self) -> dict[str, Any]:
        """The record as one flat row (CSV, DataFrame): every scalar field, ``key`` and ``config``,
        lists joined, the usage as ``usage.<name>`` columns, the samples left out."""
        row: dict[str, Any] = {"key": self.key, "config": self.config_label}
        for name in NAMES:
            value = getattr(self, name)
            if name == "usage":
                row.update({f"usage.{u}": getattr(value, u, None) for u in USAGE_SCALARS})
            elif name in _IN_A_ROW:
                row[name] = _IN_A_ROW[name](value)
            elif isinstance(value, dict):
                row[name] = json.dumps(schema.to_json(value), sort_keys=True) if value else ""
            elif name != "replicates":
                row[name] = value
        return schema.to_json(row)


def _joined(values: list[Any]) -> str:
    return ";".join("" if v is None else str(v) for v in values)


#: How a figure that is a list, or the params, is written in one cell of a row.
_IN_A_ROW = {"warnings": "; ".join, "replicate_medians_s": lambda v: ";".join(map(repr, v)),
             "output_errors": _joined, "output_names": _joined, "params": params_text}


@dataclass
class Summary(Figures):
    """A cell's figures as a file stored them, where it kept no replicates to derive them from."""

    workload: str
    size_label: str
    size: int = field(metadata={"min": 1})
    backend: str
    device: str
    dtype: Dtype
    mode: Mode
    status: Status
    reason: str = ""
    median_s: float | None = field(default=None, metadata=schema.SECONDS)
    iqr_s: float | None = field(default=None, metadata=schema.SECONDS)
    min_s: float | None = field(default=None, metadata=schema.SECONDS)
    n_samples: int = field(default=0, metadata=schema.NON_NEGATIVE)
    first_call_s: float | None = field(default=None, metadata=schema.SECONDS)
    max_rel_error: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    # -- beyond the core contract --
    transfer: bool = False
    tolerance: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    method: str = ""  # how the library computed it: eager, jax.jit, autodiff (jax.grad)...
    gradient: Gradient | None = None
    ci_low_s: float | None = field(default=None, metadata=schema.SECONDS)
    ci_high_s: float | None = field(default=None, metadata=schema.SECONDS)
    cv: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    warnings: list[str] = field(default_factory=list)
    n_replicates: int = field(default=0, metadata=schema.NON_NEGATIVE)
    replicate_medians_s: list[float] = field(default_factory=list, metadata=schema.SECONDS)
    #: (max - min) of the replicates' medians over the median.
    replicate_spread: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    number: int | None = field(default=None, metadata={"min": 1})  # calls per sample
    device_median_s: float | None = field(default=None, metadata=schema.SECONDS)
    timer: str = ""
    flops: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    bytes: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    compile_s: float | None = field(default=None, metadata=schema.SECONDS)
    output_errors: list[float | None] = field(default_factory=list, metadata=schema.NON_NEGATIVE)
    output_names: list[str] = field(default_factory=list)
    reduced_precision: str = ""  # "tf32" where float32 matmuls ran in it
    #: GPU clocks, temperature, power and throttling around the cell, or ``{"unavailable": why}``.
    gpu_health: dict[str, Any] = field(default_factory=dict)
    #: The machine's label where results hold several (``environment["machines"]``); "" for one.
    machine: str = ""
    replicates: list[Replicate] = field(default_factory=list)  # none in a summary read from a file
    ci_method: str = ""  # how the interval was computed
    #: Why the cell got no more processes (``analysis.policy``); "" while it might get more.
    replication_stop: str = ""
    usage: Usage | None = None  # its processes' counters together (``replicate.combine``)
    busy: bool | None = None  # whether other processes loaded the machine (None: not measured)
    params: dict[str, ParamValue] = field(default_factory=dict)
    #: The ``--python``/``--variant`` environment it ran in; "" for the run's own.
    environment: str = ""
    #: glibc's malloc state of the headline ("reused"), and the other state's own figures beside
    #: it, never averaged; "" and None where not controlled or not measured.
    allocator: str = ""
    other_allocator: str = ""
    other_median_s: float | None = field(default=None, metadata=schema.SECONDS)
    other_ci_low_s: float | None = field(default=None, metadata=schema.SECONDS)
    other_ci_high_s: float | None = field(default=None, metadata=schema.SECONDS)
    other_n_replicates: int = field(default=0, metadata=schema.NON_NEGATIVE)
    other_faults_per_call: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    #: Bytes one call added at its highest, and the bytes of its result; ``peak_note`` says how
    #: or why not measured. Joules per call, and ``energy_note`` likewise.
    peak_bytes: int | None = field(default=None, metadata=schema.NON_NEGATIVE)
    peak_note: str = ""
    output_bytes: int | None = field(default=None, metadata=schema.NON_NEGATIVE)
    energy_j: float | None = field(default=None, metadata=schema.NON_NEGATIVE)
    energy_note: str = ""

    def summary(self) -> "Summary":
        return self


#: Every figure, in the order results.json writes them.
NAMES = tuple(f.name for f in fields(Summary))

#: The fields every record in a results file carries, whatever else it has: ``Summary``'s core.
CONTRACT = NAMES[:NAMES.index("transfer")]

COLUMNS: tuple[str, ...] = tuple(
    column for name in NAMES if name != "replicates"
    for column in ([f"usage.{u}" for u in USAGE_SCALARS] if name == "usage" else [name]))


#: A cell is "measured while busy" when other processes used this share of the CPUs, or the
#: hypervisor stole this share of its CPU time.
BUSY_OTHERS_SHARE = 0.10
BUSY_STEAL_SHARE = 0.05


def _first(values: Any, empty: Any = None) -> Any:
    return next((v for v in values if v not in (None, "")), empty)


def _first_of(name: str, empty: Any = None, timed: bool = False) -> Any:
    """A record's ``name``: the first of its replicates (its timed ones) that says one."""
    return cached_property(lambda rec: _first((getattr(rep, name) for rep in
                                                (rec.timed if timed else rec.replicates)), empty))


def _median(rec: "Record", name: str) -> float | None:
    """The median of ``name`` over a record's timed replicates that measured one."""
    values = [v for rep in rec.timed if (v := getattr(rep, name)) is not None]
    return median(values) if values else None


def _median_of(name: str) -> Any:
    return cached_property(lambda rec: _median(rec, name))


def _note_of(measure: str, name: str) -> Any:
    """The first timed replicate's words on ``measure``: how, where one measured it, else why not."""
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
    def from_dict(cls, data: Any, where: str = "record") -> "Record | Summary":
        """A record read back from JSON, every field checked (``ResultsError``): a ``Record`` where
        it kept its replicates, else the ``Summary`` it stored."""
        try:
            if isinstance(data, dict):
                missing = [name for name in CONTRACT if name not in data]
                if missing:
                    raise ResultsError(f"{where} lacks {', '.join(missing)}")
                schema.check_names(data, where)
            stored = schema.from_json(Summary, data, where=where)
        except schema.SchemaError as exc:
            raise ResultsError(str(exc)) from None
        if not stored.replicates:
            return stored
        return cls(**{f.name: getattr(stored, f.name) for f in fields(cls)})

    # Each figure is ``Summary``'s field of that name, derived when first read. What the replicates
    # say: the first that says it, the worst error.
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
    device_median_s = cached_property(lambda rec: median(xs) if (xs := [x for rep in rec.timed
                                                                         for x in rep.device_samples_s or []]) else None)
    replicate_medians_s = cached_property(lambda rec: [median(rep.samples_s) for rep in rec.timed])

    @cached_property
    def compile_s(self) -> float | None:
        """Compiled mode: the first call over the fastest later call (not the median: a loaded
        process's median read 0 s for torch.compile's matmul); None where compiling was not seen."""
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

    # -- what a call costs besides time: the median over the processes that measured it
    energy_j = _median_of("energy_j")
    energy_note = _note_of("energy_j", "energy_note")
    peak_bytes = cached_property(lambda rec: None if (peak := _median(rec, "peak_bytes")) is None else int(peak))
    peak_note = _note_of("peak_bytes", "peak_note")
    output_bytes = _first_of("output_bytes", timed=True)

    # -- the C allocator's state: the headline's, and the other one's own figures, never one mean
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
    """The processes' GPU snapshots as one: the first ``before``, the last ``after``, throttled
    samples summed, every reason seen; or why there was no monitor."""
    measured = [h for h in health if "before" in h]
    if not measured:
        reasons = [h["unavailable"] for h in health if h.get("unavailable")]
        return {"unavailable": reasons[0]} if reasons else {}
    seen = dict.fromkeys(name for h in measured for name in [
        *h.get("reasons", []), *h["before"].get("throttle", []),
        *(h.get("after") or {}).get("throttle", [])])
    return {
        "before": measured[0]["before"],
        "after": measured[-1].get("after"),
        "throttled_samples": sum(int(h.get("throttled_samples", 0)) for h in measured),
        "samples": sum(int(h.get("samples", 0)) for h in measured),
        "reasons": list(seen),
    }

