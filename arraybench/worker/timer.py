"""The only place that measures time: first call, warm-up, calibration, the timed loops (compiled
from source as ``timeit``'s are), and fresh inputs for code that changes its arguments, restored
outside the clock from a pool of argument tuples refilled before a batch. Against a hand-written
``timeit`` loop (``benchmarks/inplace.py``) the pool is within 2.5% for 6.7-54 µs calls, where
restoring per call is 3-6% slow; from 0.8 ms both are within 2%, so ``auto`` restores per call there.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from dataclasses import KW_ONLY, dataclass, field
from functools import partial
from typing import Any, Callable, Sequence

from ..backends.gpu import CudaEvents
from .effects import output_bytes
from ..host.cpu_time import thread_seconds
from ..numeric.stopping import FULL_BATCH, OWN_THREAD_SHARE, SLOW_CALL_S
from .sampling import Draw, Sampling, TimerSettings, gc_paused, warmed_up

def _loop_source(arity: int, mode: str, has_sync: bool, has_device_timer: bool,
                 keywords: Sequence[str] = (), pooled: bool = False) -> str:
    """The timed loop. ``keywords``: settings passed by name (``_op(_a0, tsteps=_k0)``).
    ``pooled``: ``_it`` is a pool of argument tuples, one per call (inputs a call changes, fresh
    for each), instead of a range over the same arguments."""
    args = ", ".join([f"_a{i}" for i in range(arity)] + [f"{k}=_k{j}" for j, k in enumerate(keywords)])
    call = f"_op({args})"
    settings = "".join(f"_k{j}, " for j in range(len(keywords)))
    params = settings if pooled else "".join(f"_a{i}, " for i in range(arity)) + settings
    # A pool's tuples unpack in the for statement itself, as cheap as timeit's own loop variable.
    each = ("(" + "".join(f"_a{i}, " for i in range(arity)) + ")") if pooled else "_"
    lines: list[str] = []
    if mode == "device":
        # The device pass reads no clock: the events' microseconds must not land in wall-clock samples
        # (JAX, with no events, never pays them). ``hold`` queues nvbench's blocking kernel, so the
        # events time the call's kernels, not the host issuing them.
        lines += [
            "    _dev = 0.0",
            f"    for {each} in _it:",
            "        _dt.hold()",
            "        _dt.begin()",
            f"        _r = {call}",
            "        _dt.end()",
            "        _sync(_r)",
            "        _dev += _dt.elapsed()",
            "    return None, _dev",
        ]
    elif mode == "latency":
        stmt = f"_sync({call})" if has_sync else call
        lines += [
            "    _t0 = _clock()",
            f"    for {each} in _it:",
            f"        {stmt}",
            "    _t1 = _clock()",
            "    return _t1 - _t0, None",
        ]
    else:  # throughput: issue the whole batch, wait once, at the end
        # One event pair per batch, not per call.
        lines += ["    _keep = []", "    _push = _keep.append"]
        if has_device_timer:
            lines.append("    _dt.begin()")
        lines += [
            "    _t0 = _clock()",
            f"    for {each} in _it:",
            f"        _push({call})",
        ]
        if has_device_timer:
            lines.append("    _dt.end()")
        if has_sync:
            lines.append("    _sync(_keep)")
        lines.append("    _t1 = _clock()")
        lines.append("    return _t1 - _t0, " + ("_dt.elapsed()" if has_device_timer else "None"))
    return "\n".join([f"def _loop(_it, _op, {params}_sync, _clock, _dt):", *lines, ""])


#: How inputs are restored: a pool of copies per batch, before every call, or (``auto``) by call time.
RESTORES = ("auto", "pool", "per_call")
#: ``auto`` restores before every call for calls at least this long (the module's docstring says why).
PER_CALL_FROM_S = 100e-6
#: However small the inputs, a pool holds no more tuples than this.
MAX_POOL = 1 << 16


class FreshInputs:
    """The arguments of a bound call, with the inputs at ``positions`` fresh for every call (slot 0
    is the bound arguments themselves, the others clones made when first needed)."""

    def __init__(self, args: Sequence[Any], positions: Sequence[int], pristine: Sequence[Any], *,
                 clone: Callable[[Any], Any], copy_into: Callable[[Any, Any], None],
                 sync: Callable[[Any], None] | None = None, capacity: int = 1,
                 restore: str = "pool") -> None:
        self.args = tuple(args)
        self.positions = tuple(positions)
        self.pristine = tuple(pristine)
        self._clone = clone
        self._copy_into = copy_into
        self._sync = sync
        #: The most argument tuples the memory budget allows, and how many a batch uses now.
        self.pool_size = max(1, int(capacity))
        self.capacity = self.pool_size
        self.restore = restore
        self._slots: list[tuple[Any, ...]] = [self.args]
        #: Calls that found their inputs restored, over this object's life (for the record).
        self.restored = 0

    def pool(self, calls: int) -> list[tuple[Any, ...]]:
        """Up to ``calls`` (at most ``capacity``) argument tuples, every changed input restored."""
        k = max(1, min(int(calls), self.capacity))
        while len(self._slots) < k:
            self._slots.append(self._new_slot())
        slots = self._slots[:k]
        for slot in slots:
            for pos, src in zip(self.positions, self.pristine):
                self._copy_into(slot[pos], src)
        if self._sync is not None:
            self._sync(None)  # the copies are done before the clock starts
        self.restored += k
        return slots

    def calibrated(self, per_call_s: float, batched: bool = False) -> None:
        """Told the time of one call once warmed up, ``auto`` chooses per-call restoring or the pool;
        ``batched`` (throughput on an asynchronous device) keeps the pool: one wait a call times latency."""
        if self.restore == "auto":
            self.capacity = 1 if per_call_s >= PER_CALL_FROM_S and not batched else self.pool_size

    @property
    def per_call(self) -> bool:
        """Whether every call has its inputs restored just before it (a pool of one)."""
        return self.capacity == 1

    def _new_slot(self) -> tuple[Any, ...]:
        slot = list(self.args)
        for pos, src in zip(self.positions, self.pristine):
            slot[pos] = self._clone(src)
        return tuple(slot)

    def describe(self, names: Sequence[str]) -> str:
        """The note a record carries: what was restored, and how (the same text in every process)."""
        what = ", ".join(names)
        if self.per_call:
            how = ("before every call, with the clock stopped (the clock reads this adds are "
                   "subtracted: restore_overhead_s)")
        else:
            how = f"from a pool of up to {self.capacity} copies refilled before each batch, outside the timer"
        return f"fresh inputs: {what} restored {how}"


def pool_capacity(restore: str, slot_bytes: int, budget_bytes: float) -> int:
    """How many argument tuples a pool may hold: 1 per call restoring, else what the budget allows."""
    if restore not in RESTORES:
        raise ValueError(f"restore must be one of {', '.join(RESTORES)}, not {restore!r}")
    if restore == "per_call":
        return 1
    return max(1, min(MAX_POOL, math.floor(budget_bytes / max(slot_bytes, 1))))


@dataclass(eq=False)
class Timer:
    """Times ``op(*args)``, waiting for each result with ``sync`` where the library is asynchronous.

    >>> t = Timer(sum, ([1, 2, 3],))
    >>> m = t.measure(TimerSettings(budget_s=0.05))
    >>> m.median_s > 0
    True
    """

    op: Callable[..., Any]
    args: Sequence[Any] = ()
    _: KW_ONLY
    sync: Callable[[Any], None] | None = None
    device_timer: CudaEvents | None = None
    flush: Callable[[], None] | None = None
    #: Asked after every sample: the reasons the device is throttling now (empty: it is not).
    monitor: Callable[[], Sequence[str]] | None = None
    clock: Callable[[], float] = time.perf_counter
    kwargs: dict[str, Any] = field(default_factory=dict)
    fresh: FreshInputs | None = None

    def __post_init__(self) -> None:
        if self.device_timer is not None and self.sync is None:
            raise ValueError("a device timer needs a sync function to wait for the device")
        self.args = tuple(self.args)
        self.kwargs = dict(self.kwargs)
        self._loops: dict[tuple[str, bool], Callable[..., Any]] = {}

    def _loop(self, mode: str, pooled: bool = False) -> Callable[..., Any]:
        if (mode, pooled) not in self._loops:
            source = _loop_source(len(self.args), mode, self.sync is not None, self.device_timer is not None,
                                  tuple(self.kwargs), pooled)
            namespace: dict[str, Any] = {}
            exec(compile(source, f"<arraybench timer loop {mode}/{len(self.args)}>", "exec"), namespace)
            self._loops[mode, pooled] = namespace["_loop"]
        return self._loops[mode, pooled]

    def first_call(self) -> tuple[float, Any]:
        """Time the very first call (compilation, dispatch caches, lazy initialisation) on its own."""
        t0 = self.clock()
        result = self.op(*self.args, **self.kwargs)
        if self.sync is not None:
            self.sync(result)
        return self.clock() - t0, result

    def timeit(self, number: int, mode: str = "latency") -> tuple[float, float | None]:
        """Run ``number`` calls in one timed batch; (wall seconds, device seconds or None)."""
        if self.fresh is not None:
            return self._timeit_fresh(number, mode)
        loop = self._loop(mode)
        return loop(range(number), self.op, *self.args, *self.kwargs.values(), self.sync, self.clock,
                    self.device_timer)

    def _timeit_fresh(self, number: int, mode: str) -> tuple[float, float | None]:
        """``number`` calls, each on fresh inputs refilled outside the timed spans; what each
        span past the first adds is subtracted, so a sample reads as one span."""
        assert self.fresh is not None
        loop = self._loop(mode, pooled=True)
        settings = tuple(self.kwargs.values())
        wall, device, spans, left = 0.0, None, 0, number
        while left > 0:
            pool = self.fresh.pool(left)
            if self.flush is not None:
                self.flush()  # cold caches: evict after restoring, which warmed them
            w, d = loop(pool, self.op, *settings, self.sync, self.clock, self.device_timer)
            wall += w or 0.0  # the device pass reads no clock
            if d is not None:  # throughput's one event pair per span
                device = (device or 0.0) + d
            left -= len(pool)
            spans += 1
        if spans > 1 and mode != "device":
            wall = max(wall - (spans - 1) * self.span_overhead_s, 0.0)
        return wall, device

    @functools.cached_property
    def span_overhead_s(self) -> float:
        """What one timed span costs beyond its calls (two clock reads, the loop's set-up)."""
        loop = self._loop("latency", pooled=True)
        settings = tuple(self.kwargs.values())
        return statistics.median(loop((), self.op, *settings, self.sync, self.clock, None)[0] for _ in range(201))

    def draw(self, settings: TimerSettings, number: int, rewarm: bool = False) -> Draw:
        """One sample of ``number`` calls, as ``settings`` ask (cold caches, a device pass), and the
        monitor's word after it. ``rewarm``: one untimed call first, because another operation ran."""
        t0 = self.clock()
        calls = number
        # With fresh inputs the flush comes after restoring them, inside ``timeit``.
        flush = self.flush if settings.cold and self.fresh is None else None
        if flush is not None:
            flush()
        elif rewarm:
            self.timeit(1, "latency")
            calls += 1
        wall, device = self.timeit(number, settings.mode)
        if device is None and settings.mode == "latency" and self.device_timer is not None:
            if flush is not None:
                flush()  # the device pass is cold too
            # A pass apart from the wall clock's: neither carries the other's costs.
            device = self.timeit(number, "device")[1]
        throttling = self.monitor() if self.monitor is not None else ()
        return Draw(wall, device, calls, tuple(throttling or ()), self.clock() - t0)

    def start(self, settings: TimerSettings, first: tuple[float, Any] | None = None) -> Sampling:
        """First call (or ``first``, its (seconds, result) where the caller made it), warm-up and
        calibration; the state to draw samples from."""
        started = self.clock() - (first[0] if first is not None else 0.0)
        first_s, first_result = first if first is not None else self.first_call()
        warm: list[float] = []  # the warm-up calls' seconds
        before = thread_seconds()  # the other threads that run beside its calls are its pool
        while not warmed_up(len(warm), sum(warm), warm[-1] if warm else 0.0, settings):
            warm.append(self.timeit(1, "latency")[0])
        pool = frozenset(tid for tid, s in thread_seconds().items()
                         if s - before.get(tid, 0.0) >= OWN_THREAD_SHARE * sum(warm))
        # Calibrated from the warm-up's lower median: not its mean, which carries the first calls'
        # one-time costs, nor its last call, often the one a neighbour's burst took past warmup_s
        # (a 16 µs call's last warm-up call took 168 ms at load 9, and its samples were single calls).
        per_call, last, warm_calls = max(sorted(warm)[(len(warm) - 1) // 2], 1e-9), warm[-1], len(warm)
        if self.fresh is not None:
            self.fresh.calibrated(per_call, batched=settings.mode == "throughput" and self.sync is not None)
        number = self._calibrate(per_call, settings, first_result)
        # A batch may grow later only where calibration alone chose it: not cold calls (one per
        # eviction), fresh inputs (a pool sized for the batch) or throughput (bounded by bytes).
        regrows = settings.mode == "latency" and not settings.cold and self.fresh is None
        run = Sampling(partial(self.draw, settings), settings, number, first_s, warm_calls, per_call,
                       self.clock() - started, regrows=regrows, pool=pool)
        if number == 1 and last >= SLOW_CALL_S and settings.mode == "latency" and not settings.cold:
            # A slow call after the first is a sample in its own right: the first took the one-time costs.
            run.samples_s.append(last)
        return run

    def measure(self, settings: TimerSettings) -> Sampling:
        """First call, warm-up, calibration, then samples until the CI target or the budget is met."""
        run = self.start(settings)
        with gc_paused():
            while not run.done:
                run.sample()
        return run

    def _calibrate(self, per_call: float, settings: TimerSettings, first_result: Any) -> int:
        """Calls per sample so that one lasts ``target_sample_s``: like ``timeit.autorange``, the
        guess is checked with real batches, since a very fast call's warm-up estimate is noisy."""
        if settings.cold:
            return 1  # only the first call after an eviction is cold
        out_bytes = output_bytes(first_result) if settings.mode == "throughput" else 0

        def bounded(n: int) -> int:  # a throughput batch keeps all its outputs alive
            return max(1, min(n, int(settings.max_batch_bytes // out_bytes))) if out_bytes else n

        number = bounded(max(1, math.ceil(settings.target_sample_s / per_call)))
        for _ in range(5):
            if number == 1 and per_call >= settings.target_sample_s:
                break
            wall, _ = self.timeit(number, settings.mode)
            if wall >= settings.target_sample_s * FULL_BATCH or wall <= 0:
                break
            number = bounded(max(number + 1, math.ceil(number * settings.target_sample_s / wall)))
        return number
