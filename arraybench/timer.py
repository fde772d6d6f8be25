"""The only place that measures time: first call, warm-up, batch calibration, synchronisation, sampling.

A ``Timer`` owns one operation and its arguments; ``Timer.measure`` returns a ``Measurement`` holding
the raw per-call samples. Statistics are derived from the samples (``stats``), never kept instead of
them.

The timed loops are generated as source and compiled, as ``timeit`` does, so that the loop adds no
more than a tight ``timeit`` loop would: no closure layer, no ``*args`` unpacking, no sync call for
libraries that compute synchronously.
"""

from __future__ import annotations

import gc
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from . import stats

Clock = Callable[[], float]

MODES = ("latency", "throughput")

#: See ``Timer.start``: a warm-up call this slow is kept as the first sample.
SLOW_CALL_S = 0.1


class DeviceTimer(Protocol):
    """Device-side timing (CUDA events): ``begin`` and ``end`` mark the stream, ``elapsed`` waits."""

    def begin(self) -> None: ...

    def end(self) -> None: ...

    def elapsed(self) -> float: ...


@dataclass(frozen=True)
class TimerSettings:
    """How to sample one cell in one worker process."""

    mode: str = "latency"
    target_sample_s: float = 0.005  # one sample (a batch of calls) lasts at least this long
    min_samples: int = 5
    max_samples: int = 2000
    budget_s: float = 0.5  # sampling stops when this is spent, once min_samples are taken
    rel_ci: float = 0.02  # ...or as soon as the median's 95% CI half-width is within this
    warmup_s: float = 0.05
    cold: bool = False  # evict caches before every sample (forces one call per sample)
    max_batch_bytes: float = 2 * 1024**3  # throughput mode keeps a batch's results alive
    # -- issue 14: inputs a call changes (``mutates=``), fresh for every call (``fresh.py``) --
    restore: str = "auto"  # "pool": copies refilled per batch; "per_call": before each call; "auto": by speed
    pool_bytes: float = 256 * 1024**2  # the most a pool of copies may take

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown timer mode {self.mode!r}; expected one of {', '.join(MODES)}")


@dataclass
class Measurement:
    """Raw samples of one operation, in seconds per call, with how they were taken."""

    samples_s: list[float]
    number: int  # calls per sample
    first_call_s: float
    warmup_calls: int
    stop_reason: str  # "converged" | "budget" | "max_samples"
    elapsed_s: float
    device_samples_s: list[float] | None = None
    first_result: Any = field(default=None, repr=False)
    #: Indices of the samples after which the monitor reported throttling, and its reasons.
    throttled: list[int] = field(default_factory=list)
    throttle_reasons: list[str] = field(default_factory=list)

    @property
    def median_s(self) -> float:
        return stats.median(self.samples_s)


_LOOP_TEMPLATE = """
def _loop(_it, _op, {params}_sync, _clock, _dt):
{body}
"""


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
        # The device pass of latency mode (cupyx.profiler.benchmark's convention: events around
        # each call, then wait). It reads no clock: recording, waiting for and reading two events
        # costs microseconds per call that a wall-clock sample must not carry, or torch and CuPy
        # would pay them and JAX, which has no events, would not.
        lines += [
            "    _dev = 0.0",
            f"    for {each} in _it:",
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
        # One event pair per batch: the end event's record is the one event call inside the
        # wall-clock span, once per batch, not once per call.
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
    return _LOOP_TEMPLATE.format(params=params, body="\n".join(lines))


def _compile_loop(arity: int, mode: str, has_sync: bool, has_device_timer: bool,
                  keywords: Sequence[str] = (), pooled: bool = False) -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    source = _loop_source(arity, mode, has_sync, has_device_timer, keywords, pooled)
    exec(compile(source, f"<arraybench timer loop {mode}/{arity}>", "exec"), namespace)
    return namespace["_loop"]


class Fresh(Protocol):
    """Inputs that a call changes, given fresh to every timed call (``fresh.FreshInputs``)."""

    def pool(self, calls: int) -> Sequence[tuple[Any, ...]]:
        """Up to ``calls`` argument tuples whose changed inputs are restored, ready on the device."""
        ...

    def calibrated(self, per_call_s: float) -> None:
        """The time of one call, once warmed up (how to restore may depend on it)."""
        ...


def _nbytes(result: Any) -> int:
    if isinstance(result, (tuple, list)):
        return sum(_nbytes(r) for r in result)
    return int(getattr(result, "nbytes", 0) or 0)


class Timer:
    """Times ``op(*args)``, waiting for each result with ``sync`` where the library is asynchronous.

    >>> t = Timer(sum, ([1, 2, 3],))
    >>> m = t.measure(TimerSettings(budget_s=0.05))
    >>> m.median_s > 0
    True
    """

    def __init__(
        self,
        op: Callable[..., Any],
        args: Sequence[Any] = (),
        *,
        sync: Callable[[Any], None] | None = None,
        device_timer: DeviceTimer | None = None,
        flush: Callable[[], None] | None = None,
        monitor: Callable[[], Sequence[str]] | None = None,
        clock: Clock = time.perf_counter,
        kwargs: dict[str, Any] | None = None,
        fresh: Fresh | None = None,
    ) -> None:
        if device_timer is not None and sync is None:
            raise ValueError("a device timer needs a sync function to wait for the device")
        self.op = op
        self.args = tuple(args)
        self.sync = sync
        self.device_timer = device_timer
        self.flush = flush
        #: Asked after every sample, outside the timed loop: the reasons the device is throttling
        #: now (empty when it is not), so that samples taken while it was can be counted.
        self.monitor = monitor
        self.clock = clock
        #: Settings passed by keyword to every call.
        self.kwargs = dict(kwargs or {})
        #: Inputs a call changes, restored outside the timed span before each call (None: none).
        self.fresh = fresh
        self._loops: dict[tuple[str, bool], Callable[..., Any]] = {}
        self._span_overhead_s: float | None = None

    def _loop(self, mode: str, pooled: bool = False) -> Callable[..., Any]:
        if (mode, pooled) not in self._loops:
            self._loops[mode, pooled] = _compile_loop(
                len(self.args), mode, self.sync is not None, self.device_timer is not None,
                tuple(self.kwargs), pooled,
            )
        return self._loops[mode, pooled]

    def _sync(self, result: Any) -> None:
        if self.sync is not None:
            self.sync(result)

    def first_call(self) -> tuple[float, Any]:
        """Time the very first call (compilation, dispatch caches, lazy initialisation) on its own."""
        t0 = self.clock()
        result = self.op(*self.args, **self.kwargs)
        self._sync(result)
        return self.clock() - t0, result

    def timeit(self, number: int, mode: str = "latency") -> tuple[float, float | None]:
        """Run ``number`` calls in one timed batch; return (wall seconds, device seconds or None).

        Latency mode returns no device time: ``device_time`` takes it in a pass of its own.
        """
        if self.fresh is not None:
            return self._timeit_fresh(number, mode)
        loop = self._loop(mode)
        return loop(range(number), self.op, *self.args, *self.kwargs.values(), self.sync, self.clock,
                    self.device_timer)

    def device_time(self, number: int) -> float | None:
        """Device seconds of ``number`` calls, one event pair around each and a wait after it.

        A separate pass from the wall-clock one, so that neither carries the other's costs.
        """
        if self.device_timer is None:
            return None
        settings = tuple(self.kwargs.values())
        if self.fresh is None:
            _, device = self._loop("device")(range(number), self.op, *self.args, *settings,
                                             self.sync, self.clock, self.device_timer)
            return device
        loop, total, left = self._loop("device", pooled=True), 0.0, number
        while left > 0:  # fresh inputs for every call here too, restored outside the events
            pool = self.fresh.pool(left)
            if self.flush is not None:
                self.flush()
            total += loop(pool, self.op, *settings, self.sync, self.clock, self.device_timer)[1]
            left -= len(pool)
        return total

    def _timeit_fresh(self, number: int, mode: str) -> tuple[float, float | None]:
        """``number`` calls, each on fresh inputs: the pool is refilled outside the timed spans.

        A pool smaller than the batch (memory) means several spans; the clock reads each extra
        span adds are subtracted (``span_overhead_s``), so a sample reads as one span of
        ``number`` calls, as without fresh inputs. A pool of one is per-call restoring.
        """
        assert self.fresh is not None
        loop = self._loop(mode, pooled=True)
        settings = tuple(self.kwargs.values())
        wall, device, spans, left = 0.0, None, 0, number
        while left > 0:
            pool = self.fresh.pool(left)
            if self.flush is not None:
                self.flush()  # cold caches: evict after restoring, which warmed them
            w, d = loop(pool, self.op, *settings, self.sync, self.clock, self.device_timer)
            wall += w
            if d is not None:  # throughput's one event pair per span
                device = (device or 0.0) + d
            left -= len(pool)
            spans += 1
        if spans > 1:
            wall = max(wall - (spans - 1) * self.span_overhead_s(), 0.0)
        return wall, device

    def span_overhead_s(self) -> float:
        """What one timed span costs beyond its calls (two clock reads, the loop's set-up): the
        median of 201 empty spans, measured once."""
        if self._span_overhead_s is None:
            loop = self._loop("latency", pooled=True)
            settings = tuple(self.kwargs.values())
            spans = sorted(loop((), self.op, *settings, self.sync, self.clock, None)[0] for _ in range(201))
            self._span_overhead_s = spans[len(spans) // 2]
        return self._span_overhead_s

    def start(self, settings: TimerSettings, first: tuple[float, Any] | None = None) -> "Sampling":
        """First call, warm-up and calibration; returns the state to draw samples from.

        ``first``: the first call's (seconds, result), where the caller made it (to look at what
        the call did to its inputs before any other call runs).
        """
        started = self.clock() - (first[0] if first is not None else 0.0)
        first_s, first_result = first if first is not None else self.first_call()
        # Warm-up: excluded from the samples; it also gives a per-call estimate for calibration.
        warm_calls = 0
        warm_time = 0.0
        last = 0.0
        while warm_calls < 1 or warm_time < settings.warmup_s:
            last, _ = self.timeit(1, "latency")
            warm_calls += 1
            warm_time += last
            if warm_calls >= 10_000:
                break
        per_call = max(warm_time / warm_calls, 1e-9)
        if self.fresh is not None:
            self.fresh.calibrated(per_call)
        number = self._calibrate(per_call, settings, first_result)
        run = Sampling(self, settings, number, first_s, first_result, warm_calls, per_call,
                       self.clock() - started)
        if number == 1 and last >= SLOW_CALL_S and settings.mode == "latency" and not settings.cold:
            # A slow call after the first is a sample in its own right (the first call took the
            # one-time costs); discarding it would cost as much as a sample and teach nothing.
            run.samples.append(last)
        return run

    def measure(self, settings: TimerSettings) -> Measurement:
        """First call, warm-up, calibration, then samples until the CI target or the budget is met."""
        run = self.start(settings)
        with _gc_paused():
            while not run.done:
                run.sample()
        return run.measurement()

    def _calibrate(self, per_call: float, settings: TimerSettings, first_result: Any) -> int:
        """Calls per sample so that one sample lasts at least ``target_sample_s``.

        Like ``timeit.autorange`` it checks its guess with a real batch and grows it if the batch
        fell short, since the warm-up estimate of a very fast call is itself noisy.
        """
        if settings.cold:
            return 1  # only the first call after an eviction is cold
        number = max(1, math.ceil(settings.target_sample_s / per_call))
        if settings.mode == "throughput":
            out_bytes = _nbytes(first_result)
            if out_bytes:
                number = max(1, min(number, int(settings.max_batch_bytes // out_bytes)))
        for _ in range(5):
            if number == 1 and per_call >= settings.target_sample_s:
                break
            wall, _ = self.timeit(number, settings.mode)
            if wall >= settings.target_sample_s * 0.8 or wall <= 0:
                break
            number = max(number + 1, math.ceil(number * settings.target_sample_s / wall))
            if settings.mode == "throughput":
                out_bytes = _nbytes(first_result)
                if out_bytes:
                    number = max(1, min(number, int(settings.max_batch_bytes // out_bytes)))
        return number


class _gc_paused:
    """Collect garbage before, and never during, the timed loops (as ``timeit`` does)."""

    def __enter__(self) -> None:
        self._enabled = gc.isenabled()
        gc.collect()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._enabled:
            gc.enable()


class Sampling:
    """A calibrated operation being sampled; ``sample()`` draws one, ``done`` says when to stop."""

    def __init__(self, timer: Timer, settings: TimerSettings, number: int, first_call_s: float,
                 first_result: Any, warmup_calls: int, per_call_s: float, setup_s: float) -> None:
        self.timer = timer
        self.settings = settings
        self.number = number
        self.first_call_s = first_call_s
        self.first_result = first_result
        self.warmup_calls = warmup_calls
        self.per_call_s = per_call_s
        self.setup_s = setup_s
        self.samples: list[float] = []
        self.device_samples: list[float] = []
        self.throttled: list[int] = []
        self.throttle_reasons: list[str] = []
        self.sampling_s = 0.0  # this operation's own time spent sampling, rewarming included
        self.calls_last = 0  # calls made by the last sample, a re-warming call included
        self.stop_reason = ""
        self.error: BaseException | None = None

    @property
    def done(self) -> bool:
        return bool(self.stop_reason)

    def sample(self, rewarm: bool = False) -> None:
        """Draw one sample. ``rewarm``: one untimed call first, because another operation ran since."""
        t0 = self.timer.clock()
        s = self.settings
        self.calls_last = self.number
        if s.cold and self.timer.flush is not None and self.timer.fresh is None:
            self.timer.flush()  # (with fresh inputs, the timer flushes after restoring them)
        elif rewarm:
            self.timer.timeit(1, "latency")
            self.calls_last += 1
        wall, device = self.timer.timeit(self.number, s.mode)
        if device is None and s.mode == "latency" and self.timer.device_timer is not None:
            if s.cold and self.timer.flush is not None and self.timer.fresh is None:
                self.timer.flush()  # the device pass is cold too
            device = self.timer.device_time(self.number)
        self.samples.append(wall / self.number)
        if device is not None:
            self.device_samples.append(device / self.number)
        if self.timer.monitor is not None:
            reasons = self.timer.monitor()
            if reasons:
                self.throttled.append(len(self.samples) - 1)
                self.throttle_reasons += [r for r in reasons if r not in self.throttle_reasons]
        self.sampling_s += self.timer.clock() - t0
        n = len(self.samples)
        if n >= s.max_samples:
            self.stop_reason = "max_samples"
        elif n >= s.min_samples:
            if stats.relative_ci_halfwidth(self.samples) <= s.rel_ci:
                self.stop_reason = "converged"
            elif self.sampling_s >= s.budget_s:
                self.stop_reason = "budget"

    def measurement(self) -> Measurement:
        return Measurement(
            samples_s=self.samples,
            number=self.number,
            first_call_s=self.first_call_s,
            warmup_calls=self.warmup_calls,
            stop_reason=self.stop_reason or "stopped",
            elapsed_s=self.setup_s + self.sampling_s,
            device_samples_s=self.device_samples or None,
            first_result=self.first_result,
            throttled=list(self.throttled),
            throttle_reasons=list(self.throttle_reasons),
        )


#: Calls shorter than this are re-warmed (one untimed call) before a sample that follows another
#: operation's; longer calls are their own warm-up, near enough, and re-warming would double them.
REWARM_BELOW_S = 0.01


def interleave(runs: Sequence[Sampling], order_seed: int = 0,
               before_sample: Callable[[int], None] | None = None,
               after_sample: Callable[[int], None] | None = None) -> None:
    """Sample several operations round-robin until each is done.

    Spreading each operation's samples over the whole sampling period means that a slow phase of a
    shared machine (a neighbour's burst, a throttled core) lands on every operation alike, instead
    of on whichever happened to be timed during it. ``before_sample(i)`` and ``after_sample(i)``
    run around each sample of ``runs[i]``, outside its timed loop (the worker reads its counters
    there; ``runs[i].calls_last`` says how many calls the sample made).
    """
    import random

    rng = random.Random(order_seed)
    active = [i for i, r in enumerate(runs) if not r.done]
    last: int | None = None
    with _gc_paused():
        while active:
            rng.shuffle(active)
            for i in active:
                if before_sample is not None:
                    before_sample(i)
                run = runs[i]
                try:
                    run.sample(rewarm=(last is not None and last != i and run.per_call_s < REWARM_BELOW_S))
                except Exception as exc:  # one operation failing must not stop the others
                    run.error = exc
                    run.stop_reason = "error"
                    run.calls_last = 0
                if after_sample is not None:
                    after_sample(i)
                last = i
            active = [i for i in active if not runs[i].done]
