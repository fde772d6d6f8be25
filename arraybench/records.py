"""The result schema: plain records, saved atomically, loaded with validation.

``results.json`` holds ``schema_version``, ``tool``, ``environment``, ``settings``, ``records`` and
``errors``. Each record is a cell plus what was measured, or why it was skipped, failed or wrong.
Times are seconds per call. ``errors`` lists what failed before any cell existed (a workload file
that did not load: ``{"kind", "source", "error"}``). Reports read these and never measure.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import ResultsError

SCHEMA_VERSION = 1
TOOL = "arraybench"
STATUSES = ("ok", "skipped", "failed", "wrong")


@dataclass
class Record:
    """One cell and its outcome."""

    workload: str
    size_label: str
    size: int
    backend: str
    device: str
    dtype: str
    mode: str
    status: str
    reason: str = ""
    median_s: float | None = None
    iqr_s: float | None = None
    min_s: float | None = None
    n_samples: int = 0
    first_call_s: float | None = None
    max_rel_error: float | None = None
    # -- beyond the core contract --
    transfer: bool = False
    tolerance: float | None = None
    method: str = ""  # how the library computed it: eager, jax.jit, finite differences...
    ci_low_s: float | None = None
    ci_high_s: float | None = None
    cv: float | None = None
    warnings: list[str] = field(default_factory=list)
    n_processes: int = 0
    process_medians_s: list[float] = field(default_factory=list)
    process_spread: float | None = None  # (max - min) of the process medians over the median
    number: int | None = None  # calls per sample (calibrated batch)
    device_median_s: float | None = None  # device-event time per call, where there is one
    timer: str = ""
    flops: float | None = None
    bytes: float | None = None
    compile_s: float | None = None  # compiled mode: first call minus a steady call
    output_errors: list[float | None] = field(default_factory=list)  # per output, when several
    output_names: list[str] = field(default_factory=list)
    #: The reduced precision float32 matmuls ran in ("tf32", with --allow-tf32 on a GPU that has
    #: it), which the check's tolerance then used; "" for the dtype's own precision.
    reduced_precision: str = ""
    #: GPU clocks, temperature, power and throttling around the cell (``gpu_health.summarize``),
    #: or ``{"unavailable": why}``; empty on the CPU.
    gpu_health: dict[str, Any] = field(default_factory=dict)
    samples_s: list[float] = field(default_factory=list)

    @property
    def key(self) -> str:
        """The key of the cell this record measures (``plan.cell_key``)."""
        from .plan import cell_key

        return cell_key(self.workload, self.size_label, self.backend, self.device, self.dtype,
                        self.mode, self.transfer)

    @property
    def config_label(self) -> str:
        """How the record is named in plots and tables: "PyTorch GPU", "JAX CPU (jit)"."""
        from .backends import SPECS

        label = SPECS[self.backend].label if self.backend in SPECS else self.backend
        text = f"{label} {self.device.upper()}"
        extras = []
        if self.mode != "latency":
            extras.append({"compiled": "compiled", "throughput": "throughput"}.get(self.mode, self.mode))
        if self.transfer:
            extras.append("+transfer")
        if "finite differences" in self.method:
            extras.append("finite diff.")
        if extras:
            text += f" ({', '.join(extras)})"
        return text

    def to_dict(self) -> dict[str, Any]:
        return _finite(asdict(self))

    def to_row(self) -> dict[str, Any]:
        """The record as one flat row (CSV, DataFrame): every scalar field, plus ``key`` and
        ``config``; ``warnings`` joined by "; ", the process medians by ";", the samples left out."""
        row: dict[str, Any] = {"key": self.key, "config": self.config_label}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "samples_s":
                continue
            if f.name == "warnings":
                value = "; ".join(value)
            elif f.name == "process_medians_s":
                value = ";".join(repr(v) for v in value)
            elif isinstance(value, dict):
                value = json.dumps(_finite(value), sort_keys=True) if value else ""
            row[f.name] = value
        return _finite(row)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Record":
        names = {f.name for f in fields(cls)}
        missing = [f.name for f in fields(cls) if f.name in _REQUIRED and f.name not in data]
        if missing:
            raise ResultsError(f"a record lacks {', '.join(missing)}")
        values = {k: v for k, v in data.items() if k in names}
        for k, v in values.items():
            _check_type(k, v)
        rec = cls(**values)
        if rec.status not in STATUSES:
            raise ResultsError(f"a record has status {rec.status!r}; valid: {', '.join(STATUSES)}")
        return rec


def _check_type(name: str, value: Any) -> None:
    kind = _TYPES.get(name)
    if kind is None:
        return
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = {
        "str": isinstance(value, str),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "num?": value is None or number,
        "int?": value is None or (isinstance(value, int) and not isinstance(value, bool)),
        "nums": isinstance(value, list) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value),
        "strs": isinstance(value, list) and all(isinstance(v, str) for v in value),
        "nums?": isinstance(value, list) and all(
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in value),
        "dict": isinstance(value, dict),
    }[kind]
    if not ok:
        raise ResultsError(f"field {name!r} has the wrong type ({type(value).__name__})")


_TYPES = {
    "workload": "str", "size_label": "str", "size": "int", "backend": "str", "device": "str",
    "dtype": "str", "mode": "str", "status": "str", "reason": "str", "median_s": "num?",
    "iqr_s": "num?", "min_s": "num?", "n_samples": "int", "first_call_s": "num?",
    "max_rel_error": "num?", "transfer": "bool", "tolerance": "num?", "method": "str",
    "ci_low_s": "num?", "ci_high_s": "num?", "cv": "num?", "warnings": "strs",
    "n_processes": "int", "process_medians_s": "nums", "process_spread": "num?", "number": "int?",
    "device_median_s": "num?", "timer": "str", "flops": "num?", "bytes": "num?", "samples_s": "nums",
    "compile_s": "num?", "output_errors": "nums?", "output_names": "strs",
    "reduced_precision": "str", "gpu_health": "dict",
}

_REQUIRED = {
    "workload", "size_label", "size", "backend", "device", "dtype", "mode", "status", "reason",
    "median_s", "iqr_s", "min_s", "n_samples", "first_call_s", "max_rel_error",
}


def _finite(value: Any) -> Any:
    """JSON has no inf or NaN: store them as null (a record's reason says what happened)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


@dataclass
class Results:
    """A run: where, how, and every record."""

    environment: dict[str, Any]
    settings: dict[str, Any]
    records: list[Record]
    schema_version: int = SCHEMA_VERSION
    tool: str = TOOL
    complete: bool = True
    #: Failures that belong to no cell, e.g. a workload file that did not load.
    errors: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "tool": self.tool,
            "complete": self.complete,
            "environment": _finite(self.environment),
            "settings": _finite(self.settings),
            "records": [r.to_dict() for r in self.records],
            "errors": list(self.errors),
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically: a reader sees the old file or the new one, never half of one."""
        return write_atomic(path, json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n")

    def select(self, **match: Any) -> list[Record]:
        """Records whose attributes equal the given values."""
        return [r for r in self.records if all(getattr(r, k) == v for k, v in match.items())]

    def to_dataframe(self, samples: bool = False) -> Any:
        """The records as a pandas DataFrame, one row per record (``Record.to_row``).

        With ``samples=True``, one row per timing sample instead, in a ``sample_s`` column next to
        its record's fields: the long form that seaborn and ``groupby`` want. Needs pandas, which
        arraybench itself does not depend on::

            df = arraybench.load_results("benchmark_plots/results.json").to_dataframe()
            df.pivot_table(index="workload", columns="config", values="median_s")
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "Results.to_dataframe() needs pandas, which arraybench does not install: "
                "pip install pandas"
            ) from None
        columns = ["key", "config", *(f.name for f in fields(Record) if f.name != "samples_s")]
        if not samples:
            return pd.DataFrame([r.to_row() for r in self.records], columns=columns)
        rows = [{**r.to_row(), "sample": i, "sample_s": s}
                for r in self.records for i, s in enumerate(r.samples_s)]
        return pd.DataFrame(rows, columns=[*columns, "sample", "sample_s"])


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write a text file through a temporary file in the same folder and a rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file private (0600); a report is meant to be read like any file.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def resolve(path: str | os.PathLike[str]) -> Path:
    """A results file named directly, or the ``results.json`` inside a folder named instead."""
    path = Path(path)
    if path.is_dir() and (path / "results.json").is_file():
        return path / "results.json"
    return path


def load(path: str | os.PathLike[str]) -> Results:
    """Read and validate a results file; ``ResultsError`` says in one line what is wrong with it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ResultsError(f"{path}: is a folder; give its results.json") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: cannot be read ({exc.__class__.__name__}: {exc})") from None
    if not text.strip():
        raise ResultsError(f"{path}: is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON (truncated?): {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise ResultsError(f"{path}: not an arraybench results file (nested too deeply to read)") from None
    return from_dict(data, str(path))


def from_dict(data: Any, origin: str = "results") -> Results:
    """Validate parsed JSON as arraybench results."""
    if not isinstance(data, dict):
        raise ResultsError(f"{origin}: not an arraybench results file (top level is not an object)")
    if data.get("tool") != TOOL:
        raise ResultsError(f"{origin}: not an arraybench results file (tool is {data.get('tool')!r})")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ResultsError(
            f"{origin}: schema version {version!r}; this arraybench reads version {SCHEMA_VERSION}"
        )
    records = data.get("records")
    if not isinstance(records, list):
        raise ResultsError(f"{origin}: 'records' is missing or not a list")
    env = data.get("environment")
    settings = data.get("settings", {})
    if not isinstance(env, dict) or not isinstance(settings, dict):
        raise ResultsError(f"{origin}: 'environment' and 'settings' must be objects")
    parsed: list[Record] = []
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            raise ResultsError(f"{origin}: record {i} is not an object")
        try:
            parsed.append(Record.from_dict(r))
        except ResultsError as exc:
            raise ResultsError(f"{origin}: record {i}: {exc}") from None
        except TypeError as exc:
            raise ResultsError(f"{origin}: record {i} is malformed ({exc})") from None
    errors = data.get("errors", [])  # absent in files written before it existed
    if not isinstance(errors, list) or not all(
            isinstance(e, dict) and all(isinstance(v, str) for v in e.values()) for e in errors):
        raise ResultsError(f"{origin}: 'errors' must be a list of objects of strings")
    return Results(environment=env, settings=settings, records=parsed,
                   complete=bool(data.get("complete", True)), errors=errors)
