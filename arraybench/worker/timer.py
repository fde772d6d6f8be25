"""The only place that measures time: first call, warm-up, batch calibration, synchronisation.

A ``Timer`` owns one operation and its arguments; ``Timer.start`` calibrates it and returns a
``sampling.Sampling`` that draws samples through ``Timer.draw`` and decides when to stop, and
``Timer.measure`` a ``sampling.SampleSet`` holding the raw per-call samples. Statistics are derived
from the samples, never kept instead of them. The timed loops themselves are generated in ``loops``.
"""

from __future__ import annotations

import math
import time
from functools import partial
from typing import Any, Callable, Protocol, Sequence

from ..backends.gpu import DeviceTimer
from .loops import compile_loop
from ..numeric.stopping import FULL_BATCH, SLOW_CALL_S
from .sampling import Draw, SampleSet, Sampling, TimerSettings, gc_paused, warmed_up

Clock = Callable[[], float]


class Fresh(Protocol):
    """Inputs that a call changes, given fresh to every timed call (``fresh.FreshInputs``)."""

    def pool(self, calls: int) -> Sequence[tuple[Any, ...]]:
        """Up to ``calls`` argument tuples whose changed inputs are restored, ready on the device."""
        ...

    def calibrated(self, per_call_s: float, batched: bool = False) -> None:
        """The time of one call, once warmed up (how to restore may depend on it); ``batched``:
        throughput mode on an asynchronous device, whose batches must not be split per call."""
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
            self._loops[mode, pooled] = compile_loop(
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
            device = self.device_time(number)
        throttling = self.monitor() if self.monitor is not None else ()
        return Draw(wall, device, calls, tuple(throttling or ()), self.clock() - t0)

    def start(self, settings: TimerSettings, first: tuple[float, Any] | None = None) -> Sampling:
        """First call, warm-up and calibration; returns the state to draw samples from.

        ``first``: the first call's (seconds, result), where the caller made it (to look at what
        the call did to its inputs before any other call runs).
        """
        started = self.clock() - (first[0] if first is not None else 0.0)
        first_s, first_result = first if first is not None else self.first_call()
        # Warm-up (``sampling.warmed_up``): excluded from the samples; it also gives a per-call
        # estimate for calibration, the last call's where the mean carries a one-time cost.
        warm_calls = 0
        warm_time = 0.0
        last = 0.0
        while not warmed_up(warm_calls, warm_time, last, settings):
            last, _ = self.timeit(1, "latency")
            warm_calls += 1
            warm_time += last
        per_call = max(min(warm_time / warm_calls, last), 1e-9)
        if self.fresh is not None:
            self.fresh.calibrated(per_call, batched=settings.mode == "throughput" and self.sync is not None)
        number = self._calibrate(per_call, settings, first_result)
        # A batch may grow later (``Sampling._regrow``) where calibration alone chose it: not
        # cold calls (one per eviction), nor fresh inputs (a pool sized for the batch), nor a
        # throughput batch (bounded by its outputs' bytes).
        regrows = settings.mode == "latency" and not settings.cold and self.fresh is None
        run = Sampling(partial(self.draw, settings), settings, number, first_s, first_result,
                       warm_calls, per_call, self.clock() - started, regrows=regrows)
        if number == 1 and last >= SLOW_CALL_S and settings.mode == "latency" and not settings.cold:
            # A slow call after the first is a sample in its own right (the first call took the
            # one-time costs); discarding it would cost as much as a sample and teach nothing.
            run.samples.append(last)
        return run

    def measure(self, settings: TimerSettings) -> SampleSet:
        """First call, warm-up, calibration, then samples until the CI target or the budget is met."""
        run = self.start(settings)
        with gc_paused():
            while not run.done:
                run.sample()
        return run.sample_set()

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
            if wall >= settings.target_sample_s * FULL_BATCH or wall <= 0:
                break
            number = max(number + 1, math.ceil(number * settings.target_sample_s / wall))
            if settings.mode == "throughput":
                out_bytes = _nbytes(first_result)
                if out_bytes:
                    number = max(1, min(number, int(settings.max_batch_bytes // out_bytes)))
        return number
