"""What to run: options in, a list of cells out.

A cell is one (workload, size, backend, device, dtype, mode[, transfer]); the plan is the list of
cells. Nothing is measured or imported here, so a plan can be checked before anything starts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Iterable

from . import backends
from .errors import UsageError

MODES = ("latency", "throughput", "compiled")
DTYPES = ("float64", "float32")
MAX_SIZE = 10**10  # elements; beyond this no machine holds the inputs
MAX_STEPS = 1000  # sizes in one LO:HI:STEPS range; more would take days, not a benchmark


def cell_key(workload: str, size_label: str, backend: str, device: str, dtype: str, mode: str,
             transfer: bool = False) -> str:
    """A cell's identity, the same in the journal, in results and across runs."""
    parts = [workload, size_label, backend, device, dtype, mode]
    if transfer:
        parts.append("transfer")
    return "|".join(parts)


@dataclass(frozen=True, order=True)
class Cell:
    """One measurement to make."""

    workload: str
    size_label: str
    size: int
    backend: str
    device: str
    dtype: str
    mode: str
    transfer: bool = False

    @property
    def key(self) -> str:
        return cell_key(self.workload, self.size_label, self.backend, self.device, self.dtype,
                        self.mode, self.transfer)

    @property
    def config(self) -> tuple[str, str]:
        """The worker that measures it: one process type per (backend, device)."""
        return self.backend, self.device

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Cell":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class RunOptions:
    """Everything that decides what a run measures and how; saved with the results."""

    backends: list[str] = field(default_factory=lambda: list(backends.SPECS))
    devices: list[str] = field(default_factory=lambda: list(backends.DEVICES))
    workloads: list[str] = field(default_factory=list)  # empty: the built-in suite
    sizes: list[str] = field(default_factory=list)  # empty: each workload's own named sizes
    dtype: str = "float64"
    modes: list[str] = field(default_factory=lambda: ["latency"])
    include_transfer: bool = False
    roofline: bool = False  # also measure the machine's ceilings (bandwidth, peak matmul)
    processes: int = 3
    max_time: float = 1.0  # seconds of sampling per cell, shared by its processes
    min_samples: int = 10  # per cell, shared by its processes
    rel_ci: float = 0.02
    target_sample: float = 0.005
    warmup: float = 0.05
    threads: int | None = None
    cold: bool = False
    allow_tf32: bool = False
    timeout: float = 300.0
    seed: int = 0
    workload_files: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunOptions":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def parse_sizes(text: str) -> list[str]:
    """``small,large``, explicit sizes ``100,1000``, or a geometric range ``16:4096[:steps]``."""
    out: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if ":" in part:
            out.extend(str(n) for n in geometric_range(part))
        else:
            out.append(part)
    if not out:
        raise UsageError(f"--sizes {text!r} names no size; use e.g. small,large or 100,1000 or 16:4096")
    return out


def geometric_range(spec: str) -> list[int]:
    """``lo:hi`` doubles from lo to hi; ``lo:hi:k`` takes k geometrically spaced sizes."""
    pieces = spec.split(":")
    if len(pieces) not in (2, 3):
        raise UsageError(f"size range {spec!r} must be LO:HI or LO:HI:STEPS")
    lo, hi = (_parse_size(p) for p in pieces[:2])
    if hi < lo:
        raise UsageError(f"size range {spec!r} goes down; write it as {hi}:{lo}")
    if len(pieces) == 3:
        steps = _parse_int(pieces[2], "STEPS")
        if steps < 2:
            raise UsageError(f"size range {spec!r}: STEPS must be at least 2")
        if steps > MAX_STEPS:
            raise UsageError(f"size range {spec!r}: STEPS must be at most {MAX_STEPS}")
        ratio = (hi / lo) ** (1 / (steps - 1))
        sizes = sorted({round(lo * ratio**i) for i in range(steps)})
    else:
        sizes = []
        n = lo
        while n < hi:
            sizes.append(n)
            n *= 2
        sizes.append(hi)
    return sizes


def _parse_int(text: str, what: str) -> int:
    try:
        return int(text.replace("_", ""))
    except ValueError:
        raise UsageError(f"{what} {text!r} is not a whole number") from None


def _parse_size(text: str) -> int:
    text = text.strip().replace("_", "")
    try:
        value = float(text) if ("e" in text.lower() or "." in text) else int(text)
    except ValueError:
        raise UsageError(f"size {text!r} is not a number (use a label such as small or a count)") from None
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise UsageError(f"size {text!r} is not a whole number")
    n = int(value)
    if n <= 0:
        raise UsageError(f"size {n} must be positive")
    if n > MAX_SIZE:
        raise UsageError(f"size {n} is absurdly large (the limit is {MAX_SIZE:.0e} elements)")
    return n


def _check_choices(kind: str, given: Iterable[str], valid: Iterable[str]) -> list[str]:
    valid = list(valid)
    given = list(dict.fromkeys(given))  # de-duplicate, keep order
    for g in given:
        if g not in valid:
            raise UsageError(f"unknown {kind} {g!r}; valid: {', '.join(valid)}")
    if not given:
        raise UsageError(f"no {kind} selected; valid: {', '.join(valid)}")
    return given


def validate(options: RunOptions, known_workloads: Iterable[str]) -> None:
    """Reject bad options with one line that says what would be valid."""
    options.backends = _check_choices("backend", options.backends, backends.SPECS)
    options.devices = _check_choices("device", options.devices, backends.DEVICES)
    options.modes = _check_choices("mode", options.modes, MODES)
    _check_choices("dtype", [options.dtype], DTYPES)
    if options.workloads:
        from .workloads import GROUPS, expand

        known = list(known_workloads)
        _check_choices("workload", options.workloads, known + [g for g in GROUPS if g not in known])
        options.workloads = expand(options.workloads)
    for name, value, lo in (
        ("--processes", options.processes, 1),
        ("--min-samples", options.min_samples, 1),
    ):
        if not isinstance(value, int) or value < lo:
            raise UsageError(f"{name} must be a whole number >= {lo}, not {value!r}")
    for name, value in (
        ("--max-time", options.max_time),
        ("--timeout", options.timeout),
        ("--target-sample", options.target_sample),
    ):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise UsageError(f"{name} must be a positive number of seconds, not {value!r}")
    if not (0 < options.rel_ci < 1):
        raise UsageError(f"--rel-ci must be a fraction between 0 and 1 (0.02 is 2%), not {options.rel_ci!r}")
    if options.warmup < 0:
        raise UsageError(f"--warmup must be >= 0 seconds, not {options.warmup!r}")
    if options.threads is not None and options.threads < 1:
        raise UsageError(f"--threads must be >= 1, not {options.threads}")
    for s in options.sizes:
        if not s.isidentifier():
            _parse_size(s)


def build_plan(options: RunOptions, workloads_by_name: dict[str, Any],
               default: list[str] | None = None) -> list[Cell]:
    """The cells of a run, in a canonical order (the runner shuffles per process).

    Without ``options.workloads``, the ``default`` list runs (every known workload if None).
    """
    selected = options.workloads or default or list(workloads_by_name)
    cells: list[Cell] = []
    for wname in selected:
        wl = workloads_by_name[wname]
        for s in options.sizes or list(wl.sizes):
            if s.isidentifier():
                if s not in wl.sizes:
                    raise UsageError(
                        f"workload {wname!r} has no size {s!r}; its sizes: {', '.join(wl.sizes)} "
                        "(or give a number)"
                    )
                label, n = s, wl.sizes[s]
            else:
                n = _parse_size(s)
                label = next((k for k, v in wl.sizes.items() if v == n), str(n))
            for bname in options.backends:
                for dev in options.devices:
                    if dev not in backends.SPECS[bname].devices:
                        continue
                    for mode in options.modes:
                        cells.append(Cell(wname, label, n, bname, dev, options.dtype, mode))
                        if options.include_transfer and dev != "cpu":
                            cells.append(Cell(wname, label, n, bname, dev, options.dtype, mode, True))
    if not cells:
        raise UsageError("the selection gives nothing to run (check --backends against --devices)")
    if options.roofline:
        from .workloads.ceilings import CEILING_WORKLOADS

        for backend, device in dict.fromkeys((c.backend, c.device) for c in cells):
            for wname in CEILING_WORKLOADS:
                if wname in workloads_by_name and wname not in selected:
                    n = workloads_by_name[wname].sizes[device]
                    cells.append(Cell(wname, device, n, backend, device, options.dtype, "latency"))
    # "small,100" (when small is 100) or "1e2,100" name one cell twice; measure it once.
    return list({c.key: c for c in cells}.values())
