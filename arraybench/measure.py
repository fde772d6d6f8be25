"""Cells in a worker: inputs on the device, the bound operation, the timer, the correctness check.

``prepare`` puts a cell's inputs on the device, makes the first call, warms up, calibrates and checks
the first result against the float64 reference; ``finish`` turns the samples into a shard, a plain
dict of what this process measured. In between, the worker samples every prepared cell of a batch
round-robin (``timer.interleave``). Exceptions from the library or from a user's workload become a
``failed`` shard carrying the exception's own line, never a dead worker.
"""

from __future__ import annotations

import gc
import os
import sysconfig
import traceback
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from . import accuracy
from .backends.base import Backend, Unavailable
from .plan import Cell
from .timer import Sampling, Timer, TimerSettings
from .workloads import Workload
from .workloads.api import Bound, Reference


class ReferenceCache:
    """Float64 references, computed once per (workload, size, dtype) in a process."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int, str], Reference] = {}

    def get(self, wl: Workload, size: int, dtype: str, inputs: tuple[np.ndarray, ...]) -> Any:
        """The reference value."""
        return self.reference(wl, size, dtype, inputs).value

    def reference(self, wl: Workload, size: int, dtype: str, inputs: tuple[np.ndarray, ...]) -> Reference:
        """The reference with its own estimated error (nonzero for finite-difference gradients)."""
        key = (wl.name, size, dtype)
        if key not in self._cache:
            self._cache.clear()  # large references are big; keep one
            self._cache[key] = single_threaded(lambda: wl.reference_result(inputs))
        return self._cache[key]


def single_threaded(fn: Callable[[], Any]) -> Any:
    """Run NumPy work with a one-thread BLAS, so no idle BLAS pool spins beside the library timed.

    Waking OpenBLAS's pool in a torch or JAX worker slows that library's next operations (measured
    on a 2-core machine: ~1.8x for a torch matmul right after a NumPy one).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return fn()
    with threadpool_limits(limits=1, user_api="blas"):
        return fn()


def _library_roots() -> tuple[str, ...]:
    """Folders whose code is not the user's: arraybench itself, the standard library, installed packages."""
    roots = {os.path.dirname(os.path.abspath(__file__))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            roots.add(os.path.abspath(sysconfig.get_paths()[key]))
        except KeyError:
            pass
    return tuple(r + os.sep for r in roots)


_LIBRARY_ROOTS = _library_roots()


def is_user_file(path: str) -> bool:
    """Whether a traceback frame's file is the user's own code (not arraybench, Python or a library)."""
    if not path or path.startswith("<"):
        return False
    full = os.path.abspath(path)
    if "site-packages" in full or "dist-packages" in full:
        return False
    return not full.startswith(_LIBRARY_ROOTS)


def user_frame(exc: BaseException) -> str:
    """The innermost traceback line outside arraybench and the libraries: the user's own code."""
    chosen = None
    for fr in traceback.extract_tb(exc.__traceback__):
        if is_user_file(fr.filename):
            chosen = fr
    if chosen is None:
        return ""
    return f"{chosen.filename}:{chosen.lineno}: {(chosen.line or '').strip()}"


def describe_exception(exc: BaseException, fallback: str = "") -> str:
    """``TypeError: message`` on one line, with the user's frame where there is one.

    ``fallback`` (e.g. where the user's workload is defined) is shown when no frame of the user's
    own code is on the traceback, as when PyTorch's backward pass raises from C++.
    """
    text = str(exc).strip().splitlines()
    head = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    where = user_frame(exc)
    if where:
        return f"{head} [at {where}]"
    return f"{head} [in {fallback}]" if fallback else head


def to_host(backend: Backend, x: Any) -> Any:
    """A result (or tuple of results) as host NumPy arrays."""
    if isinstance(x, (tuple, list)):
        return tuple(to_host(backend, v) for v in x)
    if isinstance(x, np.ndarray):
        return x
    return backend.to_numpy(x)


def _dtype_of(backend: Backend, x: Any) -> str | None:
    if isinstance(x, (tuple, list)):
        return None
    try:
        return backend.dtype_name(x)
    except Exception:
        return None


@dataclass
class Prepared:
    """A cell ready to be sampled (``run``), or already ended (``shard`` has its status)."""

    cell: Cell
    shard: dict[str, Any]
    run: Sampling | None = None
    input_bytes: int = 0
    #: Where a user's workload function is defined, for errors that carry no line of theirs.
    origin: str = ""


def prepare(backend: Backend, wl: Workload, cell: Cell, base: TimerSettings,
            references: ReferenceCache, *, seed: int = 0,
            flush: Callable[[], None] | None = None) -> Prepared:
    """Everything before sampling: inputs, binding, first call, warm-up, calibration, check."""
    shard: dict[str, Any] = {"status": "ok", "reason": "", "warnings": []}
    work = wl.work_for(cell.size, np.dtype(cell.dtype).itemsize)
    if work is not None:
        shard["flops"], shard["bytes"] = work.flops, work.bytes
    device_timer = backend.device_timer()
    shard["timer"] = backend.device_timer_note if device_timer is None \
        else "wall clock and " + backend.device_timer_note
    if backend.device != "cpu":
        # nvbench's practice: the GPU's state before the cell (after it: ``finish``).
        shard["gpu_health"] = ({"before": backend.health.snapshot()} if backend.health is not None
                               else {"unavailable": backend.health_note or "no GPU monitor"})
    origin = "" if wl.source == "builtin" else wl.origin(backend.name)
    prepared = Prepared(cell, shard, origin=origin)
    not_applicable = wl.not_applicable(backend.name, cell.mode)
    if not_applicable:
        return _ended(backend, prepared, "skipped", not_applicable)
    if cell.transfer and wl.placement == "host":
        # Its inputs stay host data and it times the move itself; the transfer wrapper would hand
        # them to from_numpy a second time (a list to torch.from_numpy raises).
        return _ended(backend, prepared, "skipped",
                      f"not applicable: {wl.name}'s inputs stay on the host, so it times the "
                      "transfer already; --include-transfer adds nothing")
    stage = "building inputs"
    try:
        host = wl.build_inputs(cell.size, cell.dtype, seed)
        prepared.input_bytes = sum(getattr(h, "nbytes", 8 * len(h)) for h in host)
        stage = "moving inputs to the device"
        if cell.transfer:
            bound = _with_transfer(backend, wl, cell, host)
        else:
            arrays = host if wl.placement == "host" else tuple(backend.asarray(h) for h in host)
            stage = "binding"
            bound = wl.bind(backend, cell.mode, arrays, cell.dtype)
        shard["method"] = bound.method + (" +transfer" if cell.transfer else "")
        settings = replace(base, mode="throughput" if cell.mode == "throughput" else "latency")
        timer = Timer(bound.op, bound.args, sync=backend.sync, device_timer=device_timer,
                      flush=flush if settings.cold else None,
                      monitor=backend.health.throttling if backend.health is not None else None)
        stage = "the first call" if cell.mode != "compiled" else "compiling (first call)"
        run = timer.start(settings)
        if cell.mode == "compiled":
            shard["warnings"] += backend.compile_notes()
    except Unavailable as exc:
        return _ended(backend, prepared, "skipped", str(exc))
    except Exception as exc:
        return _ended(backend, prepared, *_classify(backend, cell, stage, exc, origin))
    try:
        out_dtype = _dtype_of(backend, run.first_result)
        out = to_host(backend, run.first_result)
        run.first_result = None  # the check has what it needs; free device memory now
        reference = references.reference(wl, cell.size, cell.dtype, host)
        tolerance = None
        precision = backend.reduced_precision(cell.dtype) if wl.check.matmul else None
        if precision:
            # --allow-tf32 on a GPU that uses it: the float32 bound would call every matmul wrong.
            tolerance = wl.check.tolerance(cell.dtype, cell.size, precision)
            shard["reduced_precision"] = precision
            shard["warnings"].append(accuracy.reduced_precision_note(precision, cell.dtype))
        if wl.grad and "finite differences" in shard["method"]:
            tolerance = max(wl.check.tolerance(cell.dtype, cell.size, precision),
                            accuracy.finite_difference_tolerance(cell.dtype, cell.size))
        if reference.error:
            # A reference that is itself approximate (finite differences) cannot tell errors below
            # its own apart: widen the tolerance by it, and say so.
            base_tolerance = wl.check.tolerance(cell.dtype, cell.size) if tolerance is None else tolerance
            tolerance = base_tolerance + reference.error
            shard["warnings"].append(reference.note)
        verdict = accuracy.judge(out, reference.value, wl.check, cell.dtype, cell.size,
                                 tolerance=tolerance, out_dtype=out_dtype)
    except Exception as exc:
        fallback = "" if wl.source == "builtin" else wl.origin("numpy")
        return _ended(backend, prepared, "failed",
                      f"checking the result failed: {describe_exception(exc, fallback)}")
    shard["max_rel_error"] = verdict.max_rel_error
    shard["tolerance"] = verdict.tolerance
    if verdict.output_errors:
        shard["output_errors"] = list(verdict.output_errors)
        names = wl.outputs or tuple(f"output {i}" for i in range(len(verdict.output_errors)))
        shard["output_names"] = list(names)
    if not verdict.ok:
        shard["status"] = "wrong"
        shard["reason"] = verdict.reason + (f" [returned by {origin}]" if origin else "")
    prepared.run = run
    return prepared


def finish(backend: Backend, prepared: Prepared) -> dict[str, Any]:
    """The shard of a prepared cell once sampling is over."""
    shard = prepared.shard
    run = prepared.run
    if run is None:
        return shard
    if run.error is not None:
        status, reason = _classify(backend, prepared.cell, "timing", run.error, prepared.origin)
        shard["status"], shard["reason"] = status, reason
        prepared.run = None
        return shard
    m = run.measurement()
    shard.update(
        samples_s=m.samples_s,
        number=m.number,
        first_call_s=m.first_call_s,
        warmup_calls=m.warmup_calls,
        stop_reason=m.stop_reason,
        elapsed_s=m.elapsed_s,
        device_samples_s=m.device_samples_s,
    )
    health = shard.get("gpu_health")
    if health and "before" in health and backend.health is not None:
        health.update(after=backend.health.snapshot(), samples=len(m.samples_s),
                      throttled_samples=len(m.throttled), reasons=m.throttle_reasons)
    prepared.run = None
    return shard


def _classify(backend: Backend, cell: Cell, stage: str, exc: BaseException,
              origin: str = "") -> tuple[str, str]:
    """(status, reason) for an exception raised while preparing or timing a cell.

    Out of memory first, then the compiler's own refusals; everything else (CUDA errors included)
    is a failure.
    """
    if backend.is_out_of_memory(exc):
        return "failed", _out_of_memory(backend, stage, exc)
    if cell.mode == "compiled" and backend.compile_unsupported(exc):
        return "skipped", (f"not applicable: {backend.compile_method} cannot compile this workload "
                           f"({describe_exception(exc)})")
    return "failed", f"{describe_exception(exc, origin)} (during {stage})"


def _out_of_memory(backend: Backend, stage: str, exc: BaseException) -> str:
    """``out of memory during ... (needed X, available Y of Z ...): the library's words``."""
    from . import memory

    gc.collect()  # what the failed attempt left behind is not "in use"
    try:
        backend.free()
        available = backend.memory_available()
    except Exception:  # asked right after a failure: the device may refuse to answer
        available = None
    where = "host memory" if backend.device == "cpu" else f"on the {backend.device.upper()}"
    return memory.describe(str(exc).strip() or type(exc).__name__, stage, available, where)


def _ended(backend: Backend, prepared: Prepared, status: str, reason: str) -> Prepared:
    prepared.shard["status"] = status
    prepared.shard["reason"] = reason
    prepared.run = None
    gc.collect()
    try:
        backend.free()
    except Exception:
        pass
    return prepared


def _with_transfer(backend: Backend, wl: Workload, cell: Cell, host: tuple[np.ndarray, ...]) -> Bound:
    """A call that starts from host NumPy data and ends with the result back on the host."""
    probe = wl.bind(backend, cell.mode, tuple(backend.asarray(h) for h in host), cell.dtype)
    prefix = probe.args[: len(probe.args) - len(host)]
    op = probe.op
    from_numpy = backend.from_numpy

    def call(*arrays: np.ndarray) -> Any:
        return to_host(backend, op(*prefix, *(from_numpy(a) for a in arrays)))

    return Bound(call, host, probe.method)


def measure_cell(backend: Backend, wl: Workload, cell: Cell, base: TimerSettings,
                 references: ReferenceCache, *, seed: int = 0,
                 flush: Callable[[], None] | None = None) -> dict[str, Any]:
    """Prepare, sample and finish one cell on its own (no interleaving)."""
    from .timer import interleave

    prepared = prepare(backend, wl, cell, base, references, seed=seed, flush=flush)
    if prepared.run is not None:
        interleave([prepared.run])
    return finish(backend, prepared)
