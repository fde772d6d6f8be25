"""Drawing samples of one calibrated operation and deciding when there are enough (``Sampling``, by
``numeric/stopping``'s thresholds). It never reads the clock: the timer, which imports it, hands it ``draw``.
"""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass
from typing import Callable, Sequence

from ..model.replicate import TimerSettings
from ..numeric import medians
from ..numeric.stopping import (FULL_BATCH, MAX_WARMUP_CALLS, MAX_WARMUP_SAMPLES, MOST_REGROWS, REGROW_BELOW,
                                SLOW_CALL_S, WARMUP_GROWTH_BYTES)

@dataclass(frozen=True)
class Draw:
    """One sample as the timer took it: a batch's seconds, not yet divided by its calls."""

    wall_s: float
    device_s: float | None
    calls: int  # calls made, an untimed re-warming call included
    throttling: Sequence[str]  # the monitor's reasons after the sample (empty: not throttling)
    spent_s: float  # the whole draw: flushing, re-warming, the device pass and the monitor too


class gc_paused:
    """Collect garbage before, and never during, the timed loops (as ``timeit`` does)."""

    def __enter__(self) -> None:
        self._enabled = gc.isenabled()
        gc.collect()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._enabled:
            gc.enable()


class Sampling:
    """A calibrated operation being sampled; ``sample()`` draws one, ``done`` says when to stop.
    ``draw(number, rewarm)`` takes one sample of ``number`` calls (``rewarm``: one untimed call first)."""

    def __init__(self, draw: Callable[[int, bool], Draw], settings: TimerSettings, number: int,
                 first_call_s: float, warmup_calls: int, per_call_s: float, setup_s: float,
                 regrows: bool = False, pool: frozenset[str] = frozenset()) -> None:
        self.draw = draw
        #: The threads that ran beside its calls: where there are some, its turns wait for any other
        #: thread to stop running (``host.cpu_time.OwnThreads``).
        self.pool = pool
        self.settings = settings
        self.number = number
        self.first_call_s = first_call_s
        self.warmup_calls = warmup_calls
        self.per_call_s = per_call_s
        self.setup_s = setup_s
        #: Seconds per call, one per sample (and the device's, where a device pass times them).
        self.samples_s: list[float] = []
        self.device_samples_s: list[float] = []
        #: Indices of the samples after which the monitor reported throttling, and its reasons.
        self.throttled: list[int] = []
        self.throttle_reasons: list[str] = []
        self.sampling_s = 0.0  # this operation's own time spent sampling, rewarming included
        self.calls_last = 0  # calls made by the last sample, a re-warming call included
        self.stop_reason = ""  # then "converged" | "budget" | "max_samples" | "error"
        self.error: BaseException | None = None
        #: Whether samples that grew resident memory are still taken back (``take_back_warmup``).
        self.warming = True
        self.grew_samples = 0  # samples taken back for growing memory (``take_back_warmup``'s cap)
        #: Whether a batch far shorter than calibrated grows ``number`` (``_regrow``): calls the
        #: timer may batch freely, timed for their latency.
        self.regrows = regrows
        self.regrown = 0
        #: The last sample was taken back with those before it, its batch regrown.
        self.regrew_last = False

    @property
    def done(self) -> bool:
        return bool(self.stop_reason)

    @property
    def median_s(self) -> float:
        return medians.median(self.samples_s)

    @property
    def elapsed_s(self) -> float:
        """Set-up (first call, warm-up, calibration) and sampling together."""
        return self.setup_s + self.sampling_s

    def drop_samples(self) -> None:
        """Forget the samples taken so far (their time stays spent)."""
        self.samples_s.clear()
        self.device_samples_s.clear()
        self.throttled.clear()
        self.throttle_reasons.clear()
        self.stop_reason = ""

    def take_back_warmup(self, growth_bytes: int | None) -> bool:
        """Take the last sample back, as warm-up, where resident memory grew over it by more than
        ``WARMUP_GROWTH_BYTES`` (up to ``MAX_WARMUP_SAMPLES``); True where it did. Such a sample paid
        for memory touched for the first time, not always in the first samples (PyTorch's FFT at
        n = 10⁶ grew the heap in three of its first eight, 21-23 against 15-17 ms); memory returned
        between calls leaves the resident size alone, so its faults stay in every sample."""
        if not self.warming or not self.samples_s or growth_bytes is None or growth_bytes <= WARMUP_GROWTH_BYTES:
            return False
        self.samples_s.pop()
        if self.device_samples_s:
            self.device_samples_s.pop()
        if self.throttled and self.throttled[-1] == len(self.samples_s):
            self.throttled.pop()
        self.warmup_calls += self.calls_last
        # Counted apart from regrowths: a batch calibrated under a neighbour's burst must not use
        # up the memory's warm-up.
        self.grew_samples += 1
        self.warming = self.grew_samples < MAX_WARMUP_SAMPLES
        self.stop_reason = self._stop_reason()  # its time stays spent
        return True

    def sample(self, rewarm: bool = False) -> None:
        """Draw one sample. ``rewarm``: one untimed call first, because another operation ran since."""
        drawn = self.draw(self.number, rewarm)
        self.calls_last = drawn.calls
        self.sampling_s += drawn.spent_s
        self.regrew_last = self._regrow(drawn)
        if self.regrew_last:
            return
        self.samples_s.append(drawn.wall_s / self.number)
        if drawn.device_s is not None:
            self.device_samples_s.append(drawn.device_s / self.number)
        if drawn.throttling:
            self.throttled.append(len(self.samples_s) - 1)
            self.throttle_reasons += [r for r in drawn.throttling if r not in self.throttle_reasons]
        # A caller may sample past the stop: a reason found since replaces it, none leaves it.
        self.stop_reason = self._stop_reason() or self.stop_reason

    def take_turn(self, rewarm: bool = False) -> None:
        """Draw one sample, as ``sample`` does; an operation that raises ends its own sampling
        (``error``) instead, so that one failing does not stop the others."""
        try:
            self.sample(rewarm)
        except Exception as exc:
            self.warming = False  # no sample was added to take back
            self.error = exc
            self.stop_reason = "error"
            self.calls_last = 0

    def _regrow(self, drawn: Draw) -> bool:
        """Grow a batch far shorter than calibrated, taking back its samples; True where it did. A
        neighbour's burst during calibration can make warm-up calls last 100x longer (PyTorch's
        100x100 matmul), and one call a sample then times its thread pool waking, another quantity."""
        target = self.settings.target_sample_s
        per_call = drawn.wall_s / self.number
        if not self.regrows or self.regrown >= MOST_REGROWS or drawn.wall_s <= 0:
            return False
        # Once growing, as calibration grows a batch, until one lasts FULL_BATCH of the target.
        short = drawn.wall_s < FULL_BATCH * target if self.regrown else \
            drawn.wall_s < REGROW_BELOW * target and per_call < REGROW_BELOW * self.per_call_s
        if not short:
            return False
        self.warmup_calls += drawn.calls + len(self.samples_s) * self.number
        self.drop_samples()
        self.number = max(self.number + 1, math.ceil(self.number * target / drawn.wall_s))
        self.per_call_s = per_call
        self.regrown += 1
        return True

    def _stop_reason(self) -> str:
        """Why to stop now ("": draw another)."""
        s = self.settings
        n = len(self.samples_s)
        if n >= s.max_samples:
            return "max_samples"
        if n >= s.min_samples:
            if medians.relative_ci_halfwidth(self.samples_s) <= s.rel_ci:
                return "converged"
            if self.sampling_s >= s.budget_s:
                return "budget"
        return ""


def warmed_up(calls: int, spent_s: float, last_s: float, settings: TimerSettings) -> bool:
    """Whether the warm-up, ``calls`` untimed calls that took ``spent_s`` (the last ``last_s``),
    is over: ``settings.warmup_s`` spent, in two calls at least unless the one is slow (a one-time
    cost left after the first call made a 35 µs matmul's only warm-up call last 5 ms)."""
    return calls >= MAX_WARMUP_CALLS or (calls >= 1 and spent_s >= settings.warmup_s
                                         and (calls >= 2 or last_s >= SLOW_CALL_S))
