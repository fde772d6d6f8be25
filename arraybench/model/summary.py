"""What results.json holds of a record: its figures, under the names every reader uses.

A ``Record`` (``model.record``) derives its figures from its replicates; a file whose records kept
none (version 1, a contract-only file) reads as a ``Summary``, the figures as stored. Both are read
through ``Figures``: the cell, its names, one flat row, and the JSON every tool reading
results.json sees, the same keys either way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

from . import schema
from ..backends.base import Gradient
from .replicate import Replicate, Status
from .cell import Cell, Dtype, Mode, config_label
from .usage import SCALARS as USAGE_SCALARS
from .usage import Usage
from ..workloads.params import ParamValue, text as params_text

_NON_NEGATIVE = {"min": 0}


class Figures:
    """What a record and a summary are read by: the cell, its names, its row and its JSON (the
    names are ``Summary``'s fields, which a ``Record`` derives or keeps)."""

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

    def summary(self) -> "Summary":
        """Every figure, as results.json holds it."""
        return Summary(**{name: getattr(self, name) for name in NAMES})

    def to_dict(self) -> dict[str, Any]:
        return schema.to_json(self.summary())

    def to_row(self) -> dict[str, Any]:
        """The record as one flat row (CSV, DataFrame): every scalar field, plus ``key`` and
        ``config``; ``warnings`` joined by "; ", the replicate medians by ";", the usage as
        ``usage.<name>`` columns, the replicates' samples left out
        (``Results.to_dataframe(samples=True)`` has them)."""
        row: dict[str, Any] = {"key": self.key, "config": self.config_label}
        for name in NAMES:
            value = getattr(self, name)
            if name == "replicates":
                continue
            if name == "usage":
                for u in USAGE_SCALARS:
                    row[f"usage.{u}"] = None if value is None else getattr(value, u)
                continue
            if name == "warnings":
                value = "; ".join(value)
            elif name == "replicate_medians_s":
                value = ";".join(repr(v) for v in value)
            elif name in ("output_errors", "output_names"):
                value = ";".join("" if v is None else str(v) for v in value)
            elif name == "params":
                value = params_text(value)
            elif isinstance(value, dict):
                value = json.dumps(schema.to_json(value), sort_keys=True) if value else ""
            row[name] = value
        return schema.to_json(row)


@dataclass
class Summary(Figures):
    """A cell's figures as a file stored them, where it kept no replicates to derive them from
    (a version 1 file, a contract-only one); the same names a ``Record`` derives."""

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
    #: The reduced precision float32 matmuls ran in ("tf32"); "" for the dtype's own.
    reduced_precision: str = ""
    #: GPU clocks, temperature, power and throttling around the cell, or ``{"unavailable": why}``.
    gpu_health: dict[str, Any] = field(default_factory=dict)
    #: Which machine measured it, where results hold several (``merge``, a cluster run); "" for
    #: the run's own machine. ``Results.environment["machines"][label]`` describes each.
    machine: str = ""
    #: What each worker process measured: none in a summary read from a file.
    replicates: list[Replicate] = field(default_factory=list)
    #: How the interval was computed ("t over 6 processes' medians (log scale)").
    ci_method: str = ""
    #: Why the cell got no more processes (``analysis.policy``): "converged", "budget",
    #: "max_processes", "fixed", "not timed", "decided", "out of reach", "unpaired"; "" while it
    #: might have got more.
    replication_stop: str = ""
    #: The counters of its processes together (``usage.combine``): cores, faults, switches, load.
    usage: Usage | None = None
    #: Whether other processes loaded the machine during its samples (None: not measured).
    busy: bool | None = None
    #: The workload's settings (time steps, a mode's name): part of the cell, like the size.
    params: dict[str, ParamValue] = field(default_factory=dict)
    #: The environment it ran in (``--python``, ``--variant``): part of the cell. "" for the run's
    #: own; ``Results.environment["environments"][label]`` says its interpreter and variables.
    environment: str = ""
    #: The state of glibc's malloc the headline was measured in ("reused": freed memory kept for
    #: the next call); "" where it was not controlled.
    allocator: str = ""
    #: The same cell in the other state ("fresh"), with its own median and 95% interval over the
    #: processes that measured it, never averaged with the headline's; "" and None where not measured.
    other_allocator: str = ""
    other_median_s: float | None = field(default=None, metadata=schema.SECONDS)
    other_ci_low_s: float | None = field(default=None, metadata=schema.SECONDS)
    other_ci_high_s: float | None = field(default=None, metadata=schema.SECONDS)
    other_n_replicates: int = field(default=0, metadata=_NON_NEGATIVE)
    #: Minor page faults per call in that state (the headline's are ``usage.minor_faults_per_call``).
    other_faults_per_call: float | None = field(default=None, metadata=_NON_NEGATIVE)
    #: Bytes one call added at its highest; None where no process could measure it (``peak_note``).
    peak_bytes: int | None = field(default=None, metadata=_NON_NEGATIVE)
    peak_note: str = ""
    #: The bytes of one call's result, for "2.1x the output".
    output_bytes: int | None = field(default=None, metadata=_NON_NEGATIVE)
    #: Joules per call; None where no energy counter reads, and ``energy_note`` says why.
    energy_j: float | None = field(default=None, metadata=_NON_NEGATIVE)
    energy_note: str = ""

    def summary(self) -> "Summary":
        return self


#: Every figure, in the order results.json writes them.
NAMES = tuple(f.name for f in fields(Summary))

#: The fields every record in a results file carries, whatever else it has.
CONTRACT = ("workload", "size_label", "size", "backend", "device", "dtype", "mode", "status",
            "reason", "median_s", "iqr_s", "min_s", "n_samples", "first_call_s", "max_rel_error")

COLUMNS: tuple[str, ...] = tuple(
    column for name in NAMES if name != "replicates"
    for column in ([f"usage.{u}" for u in USAGE_SCALARS] if name == "usage" else [name]))
