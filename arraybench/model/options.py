"""Run options: what a run measures and how, one ``RunOptions`` for every entry point (the API, the
commands, ``--resume``); and a run's context labels (``--context commit=abc``), saved in its
environment, never here, so giving them does not change what ``--resume`` continues.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping

from ..backends import DEFAULT_BACKENDS, DEVICES
from . import schema
from ..errors import UsageError, from_command_line
from ..workloads.params import ParamValue
from .cell import DTYPES, MODES  # noqa: F401  (the options' choices)
from .results import legacy_names

#: Worker processes per cell, the most: each costs a library import (seconds); beyond this a run
#: would never end, and the plan alone would fill the memory.
MAX_PROCESSES = 1000


@dataclass
class RunOptions:
    """What a run measures and how; each field an option of ``options.OPTIONS``, whose help says it."""

    backends: list[str] = field(default_factory=lambda: list(DEFAULT_BACKENDS))
    devices: list[str] = field(default_factory=lambda: list(DEVICES))
    workloads: list[str] = field(default_factory=list)  # empty: the built-in suite
    sizes: list[str] = field(default_factory=list)  # empty: each workload's own named sizes
    dtype: str = "float64"
    modes: list[str] = field(default_factory=lambda: ["latency"])
    include_transfer: bool = False
    roofline: bool = False
    processes: int = field(default=3, metadata={"min": 1})
    max_time: float = 1.0
    min_samples: int = 10
    rel_ci: float = 0.02
    target_sample: float = 0.005
    #: After 20 ms a process's first samples read 0.99-1.06 of its later ones, within the
    #: processes' own spread (``benchmarks/warmup_enough.py``).
    warmup: float = 0.02
    threads: int | None = None
    allocator: str = "both"  # or one state alone: then the headline, and no second worker
    cold: bool = False
    allow_tf32: bool = False
    timeout: float = 300.0
    seed: int = 0
    workload_files: list[str] = field(default_factory=list)
    shipped_workloads: list[str] = field(default_factory=list)  # ``workloads.trust``
    #: Each becomes its workload's own type when the plan is built (``workloads.params.coerce``).
    params: dict[str, ParamValue] = field(default_factory=dict)
    cluster: str | None = None  # None: this machine only
    on: str = "every-node"
    gpu_type: str | None = None
    #: None: exactly ``processes``; else more while the interval is wide (``analysis.policy``).
    max_processes: int | None = 6
    pythons: dict[str, str] = field(default_factory=dict)  # empty: the workers run with this Python
    variants: dict[str, dict[str, str]] = field(default_factory=dict)
    against: str | None = None
    self_check: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> "RunOptions":
        """Options read back from a journal or results file, each checked against its type."""
        if isinstance(data, dict):  # no max_processes: written before adaptive replication, fixed
            data = {"max_processes": None, **legacy_names(data)}
        return schema.from_json(cls, data, where="options")

    @property
    def adaptive(self) -> bool:
        """Whether cells get more processes until their interval is tight enough."""
        return self.max_processes is not None and self.max_processes > self.processes

    @property
    def processes_text(self) -> str:
        """The processes setting as ``--processes`` spells it: ``3`` or ``3:6``."""
        return f"{self.processes}:{self.max_processes}" if self.adaptive else str(self.processes)


def refuse_other_settings(saved: RunOptions, given: Mapping[str, Any]) -> None:
    """``UsageError`` naming every option in ``given`` that differs from a saved run's own, each
    as ``name (saved X, given Y)``."""
    wanted = saved.to_dict()
    differs: list[str] = []
    for name, value in given.items():
        if name == "workload_files":  # naming the run's files says they may run; nothing else
            others = [f for f in value if f not in wanted[name]]
            if others:
                differs.append(f"workload_files ({others[0]} is not one the run used; saved "
                               f"{wanted[name]!r})")
        elif name in ("processes", "max_processes"):  # --processes sets both: one entry, as typed
            typed = RunOptions(processes=given.get("processes", wanted["processes"]),
                               max_processes=given.get("max_processes", wanted["max_processes"]))
            entry = f"processes (saved {saved.processes_text}, given {typed.processes_text})"
            if saved.processes_text != typed.processes_text and entry not in differs:
                differs.append(entry)
        elif name in wanted and wanted[name] != value:
            differs.append(f"{name} (saved {wanted[name]!r}, given {value!r})")
    if differs:
        what = "--resume" if from_command_line() else "resume()"
        raise UsageError(f"{what} uses the run's own settings; these differ: " + "; ".join(differs))


_KEY = re.compile(r"[A-Za-z0-9_.\-/]{1,64}")
MAX_VALUE = 500


def parse_context(labels: Mapping[str, Any] | Iterable[str] | None) -> dict[str, str]:
    """``{"commit": "abc"}`` or ``["commit=abc"]`` as a checked dict (``UsageError`` else)."""
    pairs: list[tuple[str, Any]] = []
    if labels is None or isinstance(labels, Mapping):
        pairs = list((labels or {}).items())
    elif isinstance(labels, str):
        raise UsageError(f"context {labels!r}: give a list of key=value labels, or a dict")
    else:
        for item in labels:
            if not isinstance(item, str) or "=" not in item:
                raise UsageError(f"--context {item!r} is not key=value (e.g. --context commit=abc123)")
            key, _, value = item.partition("=")
            pairs.append((key.strip(), value.strip()))
    out: dict[str, str] = {}
    for key, value in pairs:
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise UsageError(f"--context key {key!r} must be 1-64 letters, digits or _.-/")
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise UsageError(f"--context {key}: the value must be text, not {value!r}")
        value = str(value)
        if len(value) > MAX_VALUE or any(ch in value for ch in "\n\r\0"):
            raise UsageError(f"--context {key}: the value must be one line of at most {MAX_VALUE} characters")
        out[key] = value
    return out
