"""A record: one cell, the replicates that measured it, and the statistics derived from them.

``analysis.aggregate`` is the only place that derives a record's statistics from its replicates;
everything downstream (tables, plots, comparisons, findings) reads the record. Times are seconds
per call. The fields up to ``max_rel_error`` are the results contract every file carries.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from . import schema
from .errors import ResultsError
from .measurement import Gradient, Replicate, Status
from .options import Dtype, Mode
from .plan import Cell, cell_key
from .workloads.params import ParamValue, text as params_text

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
    median_s: float | None = field(default=None, metadata=_NON_NEGATIVE)
    iqr_s: float | None = field(default=None, metadata=_NON_NEGATIVE)
    min_s: float | None = field(default=None, metadata=_NON_NEGATIVE)
    n_samples: int = field(default=0, metadata=_NON_NEGATIVE)
    first_call_s: float | None = field(default=None, metadata=_NON_NEGATIVE)
    max_rel_error: float | None = field(default=None, metadata=_NON_NEGATIVE)
    # -- beyond the core contract --
    transfer: bool = False
    tolerance: float | None = field(default=None, metadata=_NON_NEGATIVE)
    method: str = ""  # how the library computed it, in words: eager, jax.jit, autodiff (jax.grad)...
    gradient: Gradient | None = None
    ci_low_s: float | None = field(default=None, metadata=_NON_NEGATIVE)
    ci_high_s: float | None = field(default=None, metadata=_NON_NEGATIVE)
    cv: float | None = field(default=None, metadata=_NON_NEGATIVE)
    warnings: list[str] = field(default_factory=list)
    n_replicates: int = field(default=0, metadata=_NON_NEGATIVE)
    replicate_medians_s: list[float] = field(default_factory=list, metadata=_NON_NEGATIVE)
    #: (max - min) of the replicates' medians over the median.
    replicate_spread: float | None = field(default=None, metadata=_NON_NEGATIVE)
    number: int | None = field(default=None, metadata={"min": 1})  # calls per sample
    device_median_s: float | None = field(default=None, metadata=_NON_NEGATIVE)
    timer: str = ""
    flops: float | None = field(default=None, metadata=_NON_NEGATIVE)
    bytes: float | None = field(default=None, metadata=_NON_NEGATIVE)
    compile_s: float | None = field(default=None, metadata=_NON_NEGATIVE)
    output_errors: list[float | None] = field(default_factory=list, metadata=_NON_NEGATIVE)
    output_names: list[str] = field(default_factory=list)
    #: Which machine measured it, where results hold several (``merge``, a cluster run); "" for
    #: the run's own machine. ``Results.environment["machines"][label]`` describes each.
    machine: str = ""
    #: What each worker process measured; the statistics above are derived from these.
    replicates: list[Replicate] = field(default_factory=list)
    # -- issue 14 --
    #: The workload's settings (time steps, a mode's name): part of the cell, like the size.
    params: dict[str, ParamValue] = field(default_factory=dict)

    @classmethod
    def for_cell(cls, cell: Cell, status: Status = "skipped", reason: str = "") -> "Record":
        """An empty record of a cell (nothing measured yet)."""
        return cls(workload=cell.workload, size_label=cell.size_label, size=cell.size,
                   backend=cell.backend, device=cell.device, dtype=cell.dtype, mode=cell.mode,
                   status=status, reason=reason, transfer=cell.transfer, params=dict(cell.params))

    @property
    def cell(self) -> Cell:
        return Cell(self.workload, self.size_label, self.size, self.backend, self.device, self.dtype,
                    self.mode, self.transfer, dict(self.params))

    @property
    def key(self) -> str:
        """The key of the cell this record measures (``plan.cell_key``)."""
        return cell_key(self.workload, self.size_label, self.backend, self.device, self.dtype,
                        self.mode, self.transfer, self.params)

    @property
    def samples_s(self) -> list[float]:
        """Every sample of every replicate, in replicate order (per-call seconds)."""
        return [x for rep in self.replicates for x in rep.samples_s]

    @property
    def config_label(self) -> str:
        """How the record is named in plots and tables: "PyTorch GPU", "JAX CPU (jit)"."""
        from .backends import SPECS

        label = SPECS[self.backend].label if self.backend in SPECS else self.backend
        text = f"{label} {self.device.upper()}"
        extras = []
        if self.mode != "latency":
            extras.append(self.mode)
        if self.transfer:
            extras.append("+transfer")
        if self.gradient == "finite_differences":
            extras.append("finite diff.")
        if extras:
            text += f" ({', '.join(extras)})"
        if self.machine:
            text += f" @ {self.machine}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return schema.to_json(self)

    def to_row(self) -> dict[str, Any]:
        """The record as one flat row (CSV, DataFrame): every scalar field, plus ``key`` and
        ``config``; ``warnings`` joined by "; ", the replicate medians by ";", the replicates'
        samples left out (``Results.to_dataframe(samples=True)`` has them)."""
        row: dict[str, Any] = {"key": self.key, "config": self.config_label}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "replicates":
                continue
            if f.name == "warnings":
                value = "; ".join(value)
            elif f.name == "replicate_medians_s":
                value = ";".join(repr(v) for v in value)
            elif f.name in ("output_errors", "output_names"):
                value = ";".join("" if v is None else str(v) for v in value)
            elif f.name == "params":
                value = params_text(value)
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
            return schema.from_json(cls, data, where=where)
        except schema.SchemaError as exc:
            raise ResultsError(str(exc)) from None


#: The fields every record in a results file carries, whatever else it has.
CONTRACT = ("workload", "size_label", "size", "backend", "device", "dtype", "mode", "status",
            "reason", "median_s", "iqr_s", "min_s", "n_samples", "first_call_s", "max_rel_error")

COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Record) if f.name != "replicates")
