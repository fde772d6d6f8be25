"""Timing on the device itself: the protocol of a device timer, CUDA-style events around each
call (with a hold that keeps the GPU busy until the call is issued), and the spin kernel that
holds it."""

from __future__ import annotations

import time
from typing import Any, Callable, Protocol

__all__ = ["MAX_HOLD_S", "MIN_HOLD_S", "CudaEvents", "DeviceTimer", "SpinKernel"]


#: The shortest hold before a timed call, and the longest (see ``CudaEvents.hold``).
MIN_HOLD_S = 20e-6
MAX_HOLD_S = 10e-3


class DeviceTimer(Protocol):
    """Device-side timing (CUDA events): ``begin`` and ``end`` mark the stream, ``elapsed`` waits;
    ``hold``, before ``begin`` in the device pass, keeps the stream busy while a call is issued."""

    def hold(self) -> None: ...

    def begin(self) -> None: ...

    def end(self) -> None: ...

    def elapsed(self) -> float: ...


class CudaEvents:
    """A pair of CUDA events around the timed calls: the device's own clock (torch and CuPy alike).

    ``make_event()`` returns an event with ``record()`` and ``synchronize()``;
    ``elapsed_ms(start, end)`` reads the time between two recorded events. ``spin(seconds)``, where
    given, queues a kernel that keeps the stream busy that long: ``hold`` uses it, nvbench's way,
    so that the start event fires only once the host has issued the whole call. Without it, a
    start event recorded on an idle stream fires at once, and a fast call's events would span the
    host issuing its kernels rather than the kernels.
    """

    def __init__(self, make_event: Callable[[], Any], elapsed_ms: Callable[[Any, Any], float],
                 spin: Callable[[float], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._start = make_event()
        self._end = make_event()
        self._elapsed_ms = elapsed_ms
        self._spin = spin
        self._clock = clock
        #: How long the next hold keeps the stream busy: twice the time the host took to issue the
        #: last held call (hold to end), or half the last hold if that is longer (a slow issue
        #: raises it at once, fast ones lower it over a few calls), within [MIN_HOLD_S,
        #: MAX_HOLD_S]. A call whose issuing takes longer than MAX_HOLD_S keeps the rest of it in
        #: its device time.
        self.hold_s = 1e-3
        self._issued_at: float | None = None
        #: Held calls whose issuing outlasted their hold (their events include host time).
        self.uncovered = 0

    def hold(self) -> None:
        """Keep the stream busy while the next call is issued (before ``begin``; the device pass only)."""
        if self._spin is not None:
            self._spin(self.hold_s)
            self._issued_at = self._clock()

    def begin(self) -> None:
        self._start.record()

    def end(self) -> None:
        self._end.record()
        if self._issued_at is not None:
            issued = self._clock() - self._issued_at
            self._issued_at = None
            if issued > self.hold_s:
                self.uncovered += 1
            self.hold_s = min(MAX_HOLD_S, max(MIN_HOLD_S, 2 * issued, self.hold_s / 2))

    def elapsed(self) -> float:
        self._end.synchronize()
        return self._elapsed_ms(self._start, self._end) / 1e3


class SpinKernel:
    """Seconds of device time as a count of GPU clock cycles, for a kernel that spins that long
    (``torch.cuda._sleep``, or CuPy's ``clock64`` loop). The rate is measured once, with events,
    rather than read from the device's properties: clocks boost and idle, and CUDA 13 dropped
    ``cudaDeviceProp.clockRate``."""

    #: Cycles in the calibrating spin (about a millisecond at 1-2 GHz).
    CALIBRATION_CYCLES = 2_000_000

    def __init__(self, spin_cycles: Callable[[int], None], make_event: Callable[[], Any],
                 elapsed_ms: Callable[[Any, Any], float]) -> None:
        self._spin_cycles = spin_cycles
        self._make_event = make_event
        self._elapsed_ms = elapsed_ms
        self._hz: float | None = None

    def cycles_per_second(self) -> float:
        if self._hz is None:
            start, end = self._make_event(), self._make_event()
            self._spin_cycles(self.CALIBRATION_CYCLES // 10)  # the first launch loads the kernel
            start.record()
            self._spin_cycles(self.CALIBRATION_CYCLES)
            end.record()
            end.synchronize()
            seconds = self._elapsed_ms(start, end) / 1e3
            # A GPU that boosts later spins shorter than planned: the hold is twice the issuing.
            self._hz = self.CALIBRATION_CYCLES / seconds if seconds > 0 else 2e9
        return self._hz

    def __call__(self, seconds: float) -> None:
        self._spin_cycles(max(1, int(seconds * self.cycles_per_second())))
