"""A record: one cell, the replicates that measured it, and the statistics derived from them.

``analysis.aggregate`` is the only place that derives a record's statistics from its replicates;
everything downstream (tables, plots, comparisons, findings) reads the record. Times are seconds
per call. The fields up to ``max_rel_error`` are the results contract every file carries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

from . import schema, untrusted
from ..errors import ResultsError
from ..backends.base import Gradient
from .replicate import Replicate, Status
from .cell import Dtype, Mode
from .cell import Cell, config_label
from .usage import SCALARS as USAGE_SCALARS
from .usage import Usage
from ..workloads.params import ParamValue, text as params_text

_NON_NEGATIVE = {"min": 0}


@dataclass
class Record:
    """One cell and its outcome."""

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
    n_samples: int = field(default=0, metadata=_NON_NEGATIVE)
    first_call_s: float | None = field(default=None, metadata=schema.SECONDS)
    max_rel_error: float | None = field(default=None, metadata=_NON_NEGATIVE)
    # -- beyond the core contract --
    transfer: bool = False
    tolerance: float | None = field(default=None, metadata=_NON_NEGATIVE)
    method: str = ""  # how the library computed it, in words: eager, jax.jit, autodiff (jax.grad)...
    gradient: Gradient | None = None
    ci_low_s: float | None = field(default=None, metadata=schema.SECONDS)
    ci_high_s: float | None = field(default=None, metadata=schema.SECONDS)
    cv: float | None = field(default=None, metadata=_NON_NEGATIVE)
    warnings: list[str] = field(default_factory=list)
    n_replicates: int = field(default=0, metadata=_NON_NEGATIVE)
    replicate_medians_s: list[float] = field(default_factory=list, metadata=schema.SECONDS)
    #: (max - min) of the replicates' medians over the median.
    replicate_spread: float | None = field(default=None, metadata=_NON_NEGATIVE)
    number: int | None = field(default=None, metadata={"min": 1})  # calls per sample
    device_median_s: float | None = field(default=None, metadata=schema.SECONDS)
    timer: str = ""
    flops: float | None = field(default=None, metadata=_NON_NEGATIVE)
    bytes: float | None = field(default=None, metadata=_NON_NEGATIVE)
    compile_s: float | None = field(default=None, metadata=schema.SECONDS)
    output_errors: list[float | None] = field(default_factory=list, metadata=_NON_NEGATIVE)
    output_names: list[str] = field(default_factory=list)
    # -- GPU --
    #: The reduced precision float32 matmuls ran in ("tf32", with --allow-tf32 on a GPU that has
    #: it), which the check's tolerance then used; "" for the dtype's own precision.
    reduced_precision: str = ""
    #: GPU clocks, temperature, power and throttling around the cell (``gpu_health.summarize``),
    #: or ``{"unavailable": why}``; empty on the CPU.
    gpu_health: dict[str, Any] = field(default_factory=dict)
    #: Which machine measured it, where results hold several (``merge``, a cluster run); "" for
    #: the run's own machine. ``Results.environment["machines"][label]`` describes each.
    machine: str = ""
    #: What each worker process measured; the statistics above are derived from these.
    replicates: list[Replicate] = field(default_factory=list)
    # -- the interval's unit, why replication stopped, what the processes used --
    #: How the interval was computed ("t over 6 processes' medians (log scale)").
    ci_method: str = ""
    #: Why the cell got no more processes (``analysis.replication``): "converged", "budget",
    #: "max_processes", "fixed", "not timed", "decided", "out of reach", "unpaired"; "" while it
    #: might have got more.
    replication_stop: str = ""
    #: The counters of its processes together (``usage.combine``): cores, faults, switches, load.
    usage: Usage | None = None
    #: Whether other processes loaded the machine during its samples (None: not measured).
    busy: bool | None = None
    # -- a workload's params --
    #: The workload's settings (time steps, a mode's name): part of the cell, like the size.
    params: dict[str, ParamValue] = field(default_factory=dict)
    # -- environments (--python, --variant) --
    #: The environment it ran in (``--python``, ``--variant``): part of the cell. "" for the run's
    #: own; ``Results.environment["environments"][label]`` says its interpreter and variables,
    #: ``environment["backends"]["numpy/cpu[label]"]`` the versions and BLAS its workers ran.
    environment: str = ""
    # -- the C allocator's state, controlled (``model/allocator``) --
    #: The state of glibc's malloc the headline was measured in ("reused": freed memory kept for
    #: the next call); "" where it was not controlled (another allocator, the user's own settings,
    #: a run from before the allocator was controlled): its processes then landed in either state by accident.
    allocator: str = ""
    #: The same cell in the other state ("fresh": pages from the kernel every call), measured in
    #: the same processes where its outputs are large; its median and 95% interval over the
    #: processes, never averaged with the headline's. "" and None where it was not measured.
    other_allocator: str = ""
    other_median_s: float | None = field(default=None, metadata=schema.SECONDS)
    other_ci_low_s: float | None = field(default=None, metadata=schema.SECONDS)
    other_ci_high_s: float | None = field(default=None, metadata=schema.SECONDS)
    other_n_replicates: int = field(default=0, metadata=_NON_NEGATIVE)
    #: Minor page faults per call in that state (the headline's are ``usage.minor_faults_per_call``).
    other_faults_per_call: float | None = field(default=None, metadata=_NON_NEGATIVE)
    # -- what a call costs besides time, the median over its processes (``worker/footprint``) --
    #: Bytes one call added at its highest; None where no process could measure it (``peak_note``).
    peak_bytes: int | None = field(default=None, metadata=_NON_NEGATIVE)
    peak_note: str = ""
    #: The bytes of one call's result, for "2.1x the output".
    output_bytes: int | None = field(default=None, metadata=_NON_NEGATIVE)
    #: Joules per call; None where no energy counter reads, and ``energy_note`` says why.
    energy_j: float | None = field(default=None, metadata=_NON_NEGATIVE)
    energy_note: str = ""

    @classmethod
    def for_cell(cls, cell: Cell, status: Status = "skipped", reason: str = "") -> "Record":
        """An empty record of a cell (nothing measured yet)."""
        return cls(workload=cell.workload, size_label=cell.size_label, size=cell.size,
                   backend=cell.backend, device=cell.device, dtype=cell.dtype, mode=cell.mode,
                   status=status, reason=reason, transfer=cell.transfer, machine=cell.machine,
                   params=dict(cell.params), environment=cell.environment)

    @property
    def cell(self) -> Cell:
        return Cell(self.workload, self.size_label, self.size, self.backend, self.device, self.dtype,
                    self.mode, self.transfer, machine=self.machine, params=dict(self.params),
                    environment=self.environment)

    @property
    def key(self) -> str:
        """The key of the cell this record measures (``cell.cell_key``)."""
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

    def to_dict(self) -> dict[str, Any]:
        return schema.to_json(self)

    def to_row(self) -> dict[str, Any]:
        """The record as one flat row (CSV, DataFrame): every scalar field, plus ``key`` and
        ``config``; ``warnings`` joined by "; ", the replicate medians by ";", the usage as
        ``usage.<name>`` columns, the replicates' samples left out
        (``Results.to_dataframe(samples=True)`` has them)."""
        row: dict[str, Any] = {"key": self.key, "config": self.config_label}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "replicates":
                continue
            if f.name == "usage":
                for name in USAGE_SCALARS:
                    row[f"usage.{name}"] = None if value is None else getattr(value, name)
                continue
            if f.name == "warnings":
                value = "; ".join(value)
            elif f.name == "replicate_medians_s":
                value = ";".join(repr(v) for v in value)
            elif f.name in ("output_errors", "output_names"):
                value = ";".join("" if v is None else str(v) for v in value)
            elif f.name == "params":
                value = params_text(value)
            elif isinstance(value, dict):
                value = json.dumps(schema.to_json(value), sort_keys=True) if value else ""
            row[f.name] = value
        return schema.to_json(row)

    @classmethod
    def from_dict(cls, data: Any, where: str = "record") -> "Record":
        """A record read back from JSON, every field checked; ``ResultsError`` says what is wrong."""
        if isinstance(data, dict):
            missing = [name for name in CONTRACT if name not in data]
            if missing:
                raise ResultsError(f"{where} lacks {', '.join(missing)}")
        try:
            if isinstance(data, dict):
                untrusted.check_names(data, where)
            return schema.from_json(cls, data, where=where)
        except schema.SchemaError as exc:
            raise ResultsError(str(exc)) from None


#: The fields every record in a results file carries, whatever else it has.
CONTRACT = ("workload", "size_label", "size", "backend", "device", "dtype", "mode", "status",
            "reason", "median_s", "iqr_s", "min_s", "n_samples", "first_call_s", "max_rel_error")

COLUMNS: tuple[str, ...] = tuple(
    name for f in fields(Record) if f.name != "replicates"
    for name in ([f"usage.{u}" for u in USAGE_SCALARS] if f.name == "usage" else [f.name]))
