"""The result schema: plain records, saved atomically, loaded with validation.

``results.json`` holds ``schema_version``, ``tool``, ``environment``, ``settings`` and ``records``.
Each record is a cell plus what was measured, or why it was skipped, failed or wrong. Times are
seconds per call. Reports read these and never measure.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

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
    samples_s: list[float] = field(default_factory=list)

    @property
    def key(self) -> str:
        parts = [self.workload, self.size_label, self.backend, self.device, self.dtype, self.mode]
        if self.transfer:
            parts.append("transfer")
        return "|".join(parts)

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

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "tool": self.tool,
            "complete": self.complete,
            "environment": _finite(self.environment),
            "settings": _finite(self.settings),
            "records": [r.to_dict() for r in self.records],
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically: a reader sees the old file or the new one, never half of one."""
        return write_atomic(path, json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n")

    def select(self, **match: Any) -> list[Record]:
        """Records whose attributes equal the given values."""
        return [r for r in self.records if all(getattr(r, k) == v for k, v in match.items())]


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write a text file through a temporary file in the same folder and a rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
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
    return Results(environment=env, settings=settings, records=parsed,
                   complete=bool(data.get("complete", True)))


def records_by_key(records: Iterable[Record]) -> dict[str, Record]:
    """Index records by their cell key."""
    return {r.key: r for r in records}
