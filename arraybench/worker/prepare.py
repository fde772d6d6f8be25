"""Cells in a worker: ``prepare`` puts a cell's inputs on the device, makes the first call, warms
up, calibrates and checks the first result against the float64 reference; ``finish`` turns the
samples into the cell's ``Replicate``. Exceptions from the library or a user's workload become a
``failed`` replicate carrying the exception's own line, never a dead worker.
"""

from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from . import accuracy, footprint
from ..backends.base import Backend, Unavailable
from ..model.replicate import Replicate, Status, TimerSettings
from ..model.cell import Cell
from .sampling import Sampling
from .timer import FreshInputs, Timer, pool_capacity
from ..workloads.userfile import describe_exception
from ..workloads.inputs import Bound, bind, input_bytes
from ..workloads.definition import Workload
from .references import UNCHECKED, ReferenceCache, is_none, narrower_than_numpys
from .effects import (FirstCall, ForeignResult, Watch, dtype_of, fingerprint, host_copy, input_names, look,
                      output_bytes, to_host, workload_arrays)
from .accuracy import known_limitation, second_opinion


@dataclass
class Prepared:
    """A cell ready to be sampled (``run``), or already ended (``replicate`` has its status)."""

    cell: Cell
    replicate: Replicate
    run: Sampling | None = None
    #: Where a user's workload function is defined, for errors that carry no line of theirs.
    origin: str = ""
    #: The device-event timer of the device pass, asked at the end how many calls its hold missed.
    device_timer: Any = None
    #: One untimed call, waited for, for what a call costs besides time (``footprint``).
    call: Callable[[], Any] | None = None


def prepare(backend: Backend, wl: Workload, cell: Cell, base: TimerSettings,
            references: ReferenceCache, *, seed: int = 0,
            flush: Callable[[], None] | None = None, check: bool = True) -> Prepared:
    """Everything before sampling: inputs, binding, first call, warm-up, calibration, check
    (``check=False``: another process or allocator state judges the same arithmetic)."""
    rep = Replicate()
    origin = "" if wl.source == "builtin" else wl.origin(backend.name)
    returned_by = f" [returned by {origin}]" if origin else ""
    try:
        # The plan gives every cell its settings; a cell made by hand may leave them out.
        params = wl.call_settings(cell.size, cell.params)
        work = wl.work_for(cell.size, np.dtype(cell.dtype).itemsize, params)
    except Exception as exc:
        return Prepared(cell, Replicate.ended("failed", f"{describe_exception(exc, origin)} "
                                                        "(during reading the settings and work model)"))
    if work is not None:
        rep.flops, rep.bytes = work.flops, work.bytes
    device_timer = backend.device_timer()
    rep.timer = backend.device_timer_note if device_timer is None \
        else "wall clock and " + backend.device_timer_note
    if backend.device != "cpu":
        # nvbench's practice: the GPU's state before the cell (after it: ``finish``).
        rep.gpu_health = ({"before": backend.health.snapshot()} if backend.health is not None
                          else {"unavailable": backend.health_note or "no GPU monitor"})
    prepared = Prepared(cell, rep, origin=origin, device_timer=device_timer)
    not_applicable = wl.not_applicable(backend.name, cell.mode) or backend.unsupported_dtype(cell.dtype)
    if not_applicable:
        return _ended(backend, prepared, "skipped", not_applicable)
    if cell.transfer and wl.placement == "host":
        # Its inputs stay host data and it times the move itself.
        return _ended(backend, prepared, "skipped",
                      f"not applicable: {wl.name}'s inputs stay on the host, so it times the "
                      "transfer already; --include-transfer adds nothing")
    stage = "building inputs"
    numpy_watch = Watch(backend.name, backend.label, wl, cell.mode)
    try:
        built = references.inputs(wl, cell.size, cell.dtype, seed, params)
        host = built.arrays
        stage = "moving inputs to the device"
        arrays: tuple[Any, ...] | None = None  # with transfer, each call moves fresh inputs itself
        if cell.transfer:
            bound = _with_transfer(backend, wl, cell, host, params)
        else:
            # ``host`` stays as built, for the reference and to see what a call changed.
            arrays = workload_arrays(backend, wl, host)
            stage = "binding"
            bound = bind(wl, backend, cell.mode, arrays, cell.dtype, params)
        rep.method = bound.method + (" +transfer" if cell.transfer else "")
        rep.gradient = bound.gradient
        settings = replace(base, mode="throughput" if cell.mode == "throughput" else "latency")
        timer = Timer(bound.op, bound.args, sync=backend.sync, device_timer=device_timer,
                      flush=flush if settings.cold else None, kwargs=bound.kwargs,
                      monitor=backend.health.throttling if backend.health is not None else None)
        if arrays is not None:
            _restore(backend, timer, bound, arrays, host, wl.mutated_positions(len(arrays)), settings)
        stage = "the first call" if cell.mode != "compiled" else "compiling (first call)"
        with numpy_watch:
            first = timer.first_call()
        stage = "looking at what the first call did"
        seen = _look_at_first_call(backend, wl, timer, bound, arrays, host, first[1], settings, rep)
        if numpy_watch.reason():  # the result is the library's type, but NumPy did (some of) the work
            raise ForeignResult(numpy_watch.reason())
        stage = "warming up" if cell.mode != "compiled" else "warming up (compiled)"
        run = timer.start(settings, first=first)
        if isinstance(timer.fresh, FreshInputs):  # how it restores, chosen now, and what it subtracts
            if timer.fresh.per_call:
                rep.restore_overhead_s = timer.span_overhead_s
            rep.warnings.append(timer.fresh.describe(rep.restored))
        if cell.mode == "compiled":
            rep.warnings += backend.compile_notes()
    except Unavailable as exc:
        return _ended(backend, prepared, "skipped", str(exc))
    except ForeignResult as exc:
        return _ended(backend, prepared, "failed", str(exc) + returned_by)
    except Exception as exc:
        status, reason = _classify(backend, cell, stage, exc, origin)
        return _ended(backend, prepared, status, reason + numpy_watch.hint())
    out_dtype, out = seen.dtype, seen.result

    def ready() -> Prepared:
        rep.output_bytes = output_bytes(out)
        prepared.run = run
        prepared.call = lambda: timer.first_call()[1]
        return prepared

    try:
        if not check:
            return ready()
        reference = references.reference(wl, cell.size, cell.dtype, host, params)
        if is_none(reference.value):  # timed, its result left unjudged, and said so
            rep.warnings.append(UNCHECKED)
            return ready()
        tolerance = None
        precision = backend.reduced_precision(cell.dtype) if wl.check.matmul else None
        if precision:
            # --allow-tf32 on a GPU that uses it: the float32 bound would call every matmul wrong.
            tolerance = wl.check.tolerance(cell.dtype, cell.size, precision)
            rep.reduced_precision = precision
            rep.warnings.append(accuracy.reduced_precision_note(precision, cell.dtype))
        if rep.gradient == "finite_differences":
            tolerance = max(wl.check.tolerance(cell.dtype, cell.size, precision),
                            accuracy.finite_difference_tolerance(cell.dtype, cell.size))
        if reference.error:  # an approximate reference (finite differences) widens the tolerance
            base_tolerance = wl.check.settle(None, cell.dtype).tolerance(cell.dtype, cell.size) \
                if tolerance is None else tolerance
            tolerance = base_tolerance + reference.error
            rep.warnings.append(reference.note)
        fixed = built.fixed_dtypes(input_names(wl, len(host)))
        if fixed and narrower_than_numpys(wl, host, params, out_dtype, cell.dtype):
            # NumPy keeps the run's dtype on these very inputs: the narrow result is the library's cast.
            fixed = {}
        noise = references.noise(wl, cell.size, cell.dtype, host, params) \
            if wl.check.needs_noise(cell.dtype) else None

        def judged(r: Any, out_dtype: str | None = out_dtype) -> accuracy.Verdict:
            return accuracy.judge(r, reference.value, wl.check, cell.dtype, cell.size, tolerance=tolerance,
                                  out_dtype=out_dtype, fixed=fixed, noise=noise, inputs=host)

        verdict = judged(out)
        if not verdict.ok and noise is None and verdict.max_rel_error is not None:
            # Only to say, in the reason, how far the reference itself moves.
            noise = references.noise(wl, cell.size, cell.dtype, host, params)
            verdict = judged(out)
        if verdict.note:
            rep.warnings.append(verdict.note)
    except Exception as exc:
        fallback = "" if wl.source == "builtin" else wl.origin("numpy")
        return _ended(backend, prepared, "failed",
                      f"checking the result failed: {describe_exception(exc, fallback)}")
    if not verdict.ok:
        if seen.fingerprint and fingerprint(out) != seen.fingerprint:
            return _ended(backend, prepared, "failed",
                          "the result changed in memory after the call returned it, before it was "
                          f"checked ({verdict.reason}): a write into memory the result owns, by "
                          "this process or a library's thread, not the library's arithmetic")
        again = second_opinion(backend, wl, timer, seen, arrays, verdict.max_rel_error, judged)
        if again:
            verdict = replace(verdict, reason=f"{verdict.reason}; {again}")
    rep.max_rel_error = verdict.max_rel_error
    rep.tolerance = verdict.tolerance
    if verdict.output_errors:
        rep.output_errors = list(verdict.output_errors)
        rep.output_names = list(wl.outputs or (f"output {i}" for i in range(len(verdict.output_errors))))
    if not verdict.ok:
        explained = known_limitation(
            backend, wl, cell, host, params, verdict,
            right=lambda r: judged(r, out_dtype=None).ok,
            same=lambda r: accuracy.judge(out, r, wl.check, cell.dtype, cell.size, out_dtype=out_dtype,
                                          fixed=fixed).ok)
        if explained:
            return _ended(backend, prepared, "skipped", explained)
        rep.status = "wrong"
        drawn = accuracy.random_draws(wl.function_for(backend.name))
        reason = accuracy.random_stream_reason(verdict, drawn, backend.label) if drawn else verdict.reason
        rep.reason = reason + returned_by
    return ready()


def finish(backend: Backend, prepared: Prepared, footprint_too: bool = True) -> Replicate:
    """The replicate of a prepared cell once sampling is over; ``footprint_too``: with its peak
    memory and energy per call (calls of their own: one process of a cell is enough)."""
    rep, run = prepared.replicate, prepared.run
    if run is None:
        return rep
    prepared.run = None
    if run.error is not None:
        rep.status, rep.reason = _classify(backend, prepared.cell, "timing", run.error, prepared.origin)
        return rep
    for name in ("samples_s", "number", "first_call_s", "warmup_calls", "elapsed_s"):
        setattr(rep, name, getattr(run, name))
    rep.stop_reason, rep.device_samples_s = run.stop_reason or "stopped", run.device_samples_s or None
    if getattr(prepared.device_timer, "uncovered", 0) and run.device_samples_s:
        # The same words in every process, so that the record says it once.
        rep.warnings.append("device time: some calls took the host longer to issue than the blocking "
                            "kernel held the GPU (10 ms at most), so their device time includes host time")
    if prepared.call is not None and footprint_too:
        rep.peak_bytes, rep.peak_note = footprint.peak(backend, prepared.call)
        rep.energy_j, rep.energy_note = footprint.energy(backend, prepared.call)
    health = rep.gpu_health
    if health and "before" in health and backend.health is not None:
        health.update(after=backend.health.snapshot(), samples=len(run.samples_s),
                      throttled_samples=len(run.throttled), reasons=run.throttle_reasons)
    return rep


def _classify(backend: Backend, cell: Cell, stage: str, exc: BaseException,
              origin: str = "") -> tuple[Status, str]:
    """(status, reason) for an exception raised while preparing or timing a cell: out of memory
    first, then the compiler's own refusals; anything else is a failure."""
    if backend.is_out_of_memory(exc):
        gc.collect()  # what the failed attempt left behind is not "in use"
        try:
            backend.free()
            available = backend.memory_available()
        except Exception:  # asked right after a failure: the device may refuse to answer
            available = None
        where = "host memory" if backend.device == "cpu" else f"on the {backend.device.upper()}"
        return "failed", footprint.describe(str(exc).strip() or type(exc).__name__, stage, available, where)
    if cell.mode == "compiled" and backend.recompile_limit_hit(exc):
        return "failed", (f"{backend.compile_method} reached its recompile limit during {stage}: "
                          "past it the calls would run eager, so this cell is not timed as compiled")
    refusal = backend.compile_refusal(exc) if cell.mode == "compiled" else None
    if refusal is not None:
        return "skipped", (f"not applicable: {backend.compile_method} cannot compile this workload "
                           f"({refusal or describe_exception(exc)})")
    return "failed", f"{describe_exception(exc, origin)} (during {stage})"


def _ended(backend: Backend, prepared: Prepared, status: Status, reason: str) -> Prepared:
    prepared.replicate.status, prepared.replicate.reason = status, reason
    prepared.run = prepared.call = None
    gc.collect()
    with contextlib.suppress(Exception):
        backend.free()
    return prepared


def _with_transfer(backend: Backend, wl: Workload, cell: Cell, host: tuple[np.ndarray, ...],
                   params: dict[str, Any]) -> Bound:
    """A call from host NumPy data to the result back on the host (inputs fresh by construction)."""
    probe = bind(wl, backend, cell.mode, tuple(backend.asarray(h) for h in host), cell.dtype, params)
    prefix = probe.args[: len(probe.args) - len(host)]
    op = probe.op
    settings = probe.kwargs
    from_numpy = backend.from_numpy

    def call(*arrays: np.ndarray) -> Any:
        moved = tuple(from_numpy(a) for a in arrays)
        return to_host(backend, wl.result_of(op(*prefix, *moved, **settings), moved))

    return Bound(call, host, probe.method, probe.gradient)


def _look_at_first_call(backend: Backend, wl: Workload, timer: Timer, bound: Bound,
                        arrays: tuple[Any, ...] | None, host: tuple[Any, ...], result: Any,
                        settings: TimerSettings, rep: Replicate) -> FirstCall:
    """The first result on the host, before any other call; inputs it changed get restored, and
    the replicate's warnings say what the call did (``effects.look``)."""
    if arrays is None:  # with transfer: inputs move anew with every call, and the result is a copy
        return FirstCall(to_host(backend, result), dtype_of(backend, result))
    seen = look(backend, wl, arrays, host, result)
    rep.warnings += seen.notes
    if seen.changed:
        changed = sorted({*wl.mutated_positions(len(arrays)), *seen.changed})
        _restore(backend, timer, bound, arrays, host, changed, settings)
    if isinstance(timer.fresh, FreshInputs):
        names = input_names(wl, len(host))
        rep.restored = [names[i - bound.prefix] for i in timer.fresh.positions]
    return seen


def _restore(backend: Backend, timer: Timer, bound: Bound, arrays: tuple[Any, ...],
             host: tuple[Any, ...], positions: Sequence[int], settings: TimerSettings) -> None:
    """Give the timer fresh copies of the inputs at ``positions`` that can change (not JAX's), its
    pristine ones where they live: on the device, restoring is a device-to-device copy."""
    mutable = [i for i in positions
               if isinstance(arrays[i], (np.ndarray, list)) or backend.mutable_arrays]
    if mutable:
        pristine = [host_copy(host[i]) if isinstance(arrays[i], (np.ndarray, list)) else backend.asarray(host[i])
                    for i in mutable]
        capacity = pool_capacity(settings.restore, input_bytes(pristine), settings.pool_bytes)
        timer.fresh = FreshInputs(bound.args, [bound.prefix + i for i in mutable], pristine, clone=backend.clone,
                                  copy_into=backend.copy_into, sync=backend.sync, capacity=capacity,
                                  restore=settings.restore)
