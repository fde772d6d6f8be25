"""The timer: calibration on synthetic operations of known duration, and the synchronisation contract.

Durations here are lower bounds the operating system guarantees (a sleep never ends early), so
these assertions hold on a loaded machine; nothing asserts that something is fast.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from arraybench.numeric.stopping import MAX_WARMUP_CALLS, MOST_REGROWS
from arraybench.worker.sampling import Draw, Sampling, TimerSettings, warmed_up
from arraybench.worker.timer import Timer


def busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_slow_operation_is_timed_one_call_per_sample():
    timer = Timer(time.sleep, (0.02,))
    m = timer.measure(TimerSettings(min_samples=3, budget_s=0.05, target_sample_s=0.005))
    assert m.number == 1
    assert len(m.samples_s) >= 3
    assert min(m.samples_s) >= 0.02


def test_a_fast_operation_is_batched_so_a_sample_outlasts_the_target():
    target = 0.004
    timer = Timer(busy, (20e-6,))
    m = timer.measure(TimerSettings(min_samples=5, budget_s=0.1, target_sample_s=target))
    assert m.number >= 100  # 4 ms / 20 µs = 200, give or take the estimate
    assert all(s * m.number >= 0.8 * target for s in m.samples_s)
    assert min(m.samples_s) >= 20e-6


def test_a_one_time_cost_left_after_the_first_call_does_not_make_a_fast_call_look_slow():
    # The first warm-up call still pays 20 ms once (a pool starting, say); the op takes 20 µs after.
    calls = []

    def op() -> None:
        calls.append(None)
        busy(0.02 if len(calls) == 2 else 20e-6)

    timer = Timer(op, ())
    m = timer.measure(TimerSettings(min_samples=5, budget_s=0.1, target_sample_s=0.004, warmup_s=0.01))
    assert m.number >= 20  # batched as a 20 µs call is, never one call per sample
    assert max(m.samples_s) < 0.02  # the 20 ms call was warm-up, not a sample


def test_calls_calibrated_under_a_burst_are_batched_again_once_they_run_at_speed():
    """Warm-up under a neighbour's burst: every call 6 ms, then 20 µs. Calibrated one call a
    sample, the timer grows the batch from the first short one, and takes back what came before."""
    calls = []

    def op() -> None:
        calls.append(None)
        busy(0.006 if len(calls) <= 6 else 20e-6)

    timer = Timer(op, ())
    settings = TimerSettings(min_samples=5, budget_s=0.2, target_sample_s=0.004, warmup_s=0.01)
    m = timer.measure(settings)
    assert m.number >= 100  # as a 20 µs call is batched, not one call a sample
    assert all(s * m.number >= 0.8 * 0.004 for s in m.samples_s)
    assert max(m.samples_s) < 0.006 and len(m.samples_s) >= 5
    assert m.warmup_calls > 3  # the short batches were warm-up
    # Cold calls are one a sample by design: never regrown.
    cold = Timer(op, ()).start(TimerSettings(min_samples=5, budget_s=0.05, target_sample_s=0.004, cold=True))
    assert not cold.regrows


def test_a_batch_regrows_only_from_calls_far_shorter_than_calibrated_and_at_most_five_times():
    def sampling(per_call: list[float]) -> Sampling:
        def draw(number: int, rewarm: bool) -> Draw:
            return Draw(per_call.pop(0) * number, None, number, (), 0.0)

        return Sampling(draw, TimerSettings(min_samples=3, max_samples=100, rel_ci=0.0, budget_s=10.0,
                                            target_sample_s=0.005), 1, 0.0, 2, 0.006, 0.0, regrows=True)

    # A call at half its calibrated time is noise, not a calibration gone wrong.
    run = sampling([0.003] * 3)
    for _ in range(3):
        run.sample()
    assert run.number == 1 and len(run.samples_s) == 3
    # At 150 µs, then 40 µs: 34 calls, then as many as fill the target.
    run = sampling([0.003, 150e-6, 40e-6, 40e-6, 40e-6])
    for _ in range(5):
        run.sample()
    assert run.number == 125 and run.regrown == 2 and len(run.samples_s) == 2
    # Calls that keep getting faster stop growing the batch after MOST_REGROWS.
    run = sampling([1e-3 / 4 ** k for k in range(1, 12)])
    for _ in range(11):
        run.sample()
    assert run.regrown == MOST_REGROWS


def test_first_call_is_recorded_apart_from_the_samples():
    calls = []

    def op():
        calls.append(1)
        busy(0.03 if len(calls) == 1 else 0.0005)  # an expensive first call: a "compilation"

    m = Timer(op).measure(TimerSettings(min_samples=5, budget_s=0.05))
    assert m.first_call_s >= 0.03
    assert max(m.samples_s) < 0.03  # the first call is not among the samples


def test_sampling_stops_at_the_budget_when_the_ci_target_is_out_of_reach():
    import random

    rng = random.Random(0)
    timer = Timer(lambda: busy(rng.choice([0.0002, 0.002])))
    settings = TimerSettings(min_samples=5, budget_s=0.15, rel_ci=1e-6, target_sample_s=0.001)
    t0 = time.perf_counter()
    m = timer.measure(settings)
    assert m.stop_reason == "budget"
    assert time.perf_counter() - t0 < 5  # stopped, did not run to max_samples


def test_sampling_stops_early_once_the_ci_target_is_met():
    m = Timer(busy, (0.001,)).measure(TimerSettings(min_samples=5, budget_s=30, rel_ci=0.5))
    assert m.stop_reason == "converged"
    # Five samples on a quiet core; more where other processes preempted some of them (the
    # interval of five is their whole range; under the suite's other worker, a hundred), never
    # the 30 s budget.
    assert 5 <= len(m.samples_s) and m.elapsed_s < 5


def _async_sleep(pool: ThreadPoolExecutor, seconds: float) -> Future:
    return pool.submit(time.sleep, seconds)


def test_an_asynchronous_result_is_waited_for():
    """The contract: a library that returns before its work is done is timed to completion."""
    with ThreadPoolExecutor(1) as pool:
        synced = Timer(_async_sleep, (pool, 0.02), sync=lambda f: f.result())
        m = synced.measure(TimerSettings(min_samples=3, budget_s=0.05))
        assert min(m.samples_s) >= 0.02


def test_without_sync_an_asynchronous_result_would_be_timed_as_its_launch():
    """What the seed warned about: without the wait, we measure dispatch, not execution."""
    pool = ThreadPoolExecutor(1)
    try:
        m = Timer(_async_sleep, (pool, 0.02)).measure(
            TimerSettings(min_samples=3, budget_s=0.05, warmup_s=0))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # thousands of sleeps were queued, unwaited
    assert min(m.samples_s) < 0.02


def test_throughput_mode_waits_once_for_the_whole_batch():
    waited = []

    def sync(results):
        if isinstance(results, Future):  # the first call and the warm-up wait for one result
            results.result()
            return
        waited.append(len(results))
        for f in results:
            f.result()

    with ThreadPoolExecutor(4) as pool:
        timer = Timer(_async_sleep, (pool, 0.001), sync=sync)
        m = timer.measure(TimerSettings(mode="throughput", min_samples=3, budget_s=0.05,
                                        target_sample_s=0.01))
    assert m.number > 1
    assert max(waited) == m.number  # one wait per batch, covering every call in it
    # Four calls run at once, so a call costs about a quarter of its latency in throughput.
    assert min(m.samples_s) >= 0.001 / 4 * 0.9


def test_device_timer_requires_sync():
    class Events:
        def hold(self): ...

        def begin(self): ...

        def end(self): ...

        def elapsed(self):
            return 0.0

    with pytest.raises(ValueError):
        Timer(lambda: None, device_timer=Events())


def test_device_timer_is_read_once_per_call_in_latency_mode():
    class Events:
        def __init__(self):
            self.begun = 0

        def hold(self): ...

        def begin(self):
            self.begun += 1

        def end(self): ...

        def elapsed(self):
            return 0.001

    events = Events()
    timer = Timer(lambda: None, sync=lambda r: None, device_timer=events)
    m = timer.measure(TimerSettings(min_samples=3, budget_s=0.02, target_sample_s=0.001))
    assert m.device_samples_s is not None
    assert m.device_samples_s[0] == pytest.approx(0.001)  # device seconds per call


def test_an_operation_that_fails_in_its_turn_ends_its_own_sampling_only():
    count = []

    def flaky():
        count.append(1)
        if len(count) > 5:
            raise RuntimeError("boom")

    bad = Timer(flaky).start(TimerSettings(min_samples=50, budget_s=1, warmup_s=0, target_sample_s=1e-9))
    good = Timer(busy, (0.0001,)).start(TimerSettings(min_samples=3, budget_s=0.01))
    for _ in range(10_000):  # turns in rounds, as a worker is handed them
        for run in (bad, good):
            if not run.done:
                run.take_turn(rewarm=True)
        if bad.done and good.done:
            break
    assert isinstance(bad.error, RuntimeError) and bad.stop_reason == "error" and bad.calls_last == 0
    assert good.done and good.error is None and len(good.samples_s) >= 3


class _SpanClock:
    """A clock that knows whether a timed loop is between its two readings.

    A wall-clock loop (the generated ``_loop``) reads the clock once before its calls and once
    after; whatever runs in between is inside the wall-clock time. Readings from elsewhere (the
    sampler's own bookkeeping) do not count. Time advances by a microsecond per reading.
    """

    def __init__(self):
        self.ticks = 0
        self.inside = False

    def __call__(self):
        self.ticks += 1
        if sys._getframe(1).f_code.co_name == "_loop":
            self.inside = not self.inside
        return self.ticks * 1e-6


class _Events:
    """Stands for ``backends.gpu.CudaEvents``: record start, record end, wait and read (ms -> s).

    Each call notes whether it ran inside a wall-clock span: on a GPU each is a CUDA API call of a
    few microseconds (``cudaEventRecord``, ``cudaEventSynchronize``, ``cudaEventElapsedTime``).
    """

    def __init__(self, clock):
        self.clock = clock
        self.calls_inside = 0
        self.calls = 0

    def _note(self):
        self.calls += 1
        self.calls_inside += self.clock.inside

    def hold(self):  # the blocking kernel queued before each call of the device pass
        self._note()

    def begin(self):
        self._note()

    def end(self):
        self._note()

    def elapsed(self):
        self._note()
        return 0.002


def test_device_events_stay_out_of_the_wall_clock_time_in_latency_mode():
    """Events inside the timed span biased torch and CuPy against JAX."""
    clock = _SpanClock()
    events = _Events(clock)
    timer = Timer(lambda: None, sync=lambda r: None, device_timer=events, clock=clock)
    run = timer.start(TimerSettings(min_samples=3, max_samples=3, warmup_s=0, target_sample_s=0))
    while not run.done:
        run.sample()
    assert events.calls >= 4 * 3 * run.number  # a device pass per sample: hold, begin, end, elapsed per call
    assert events.calls_inside == 0
    assert run.device_samples_s == [pytest.approx(0.002)] * 3  # seconds per call, one per sample


def test_throughput_mode_records_one_event_pair_per_batch():
    clock = _SpanClock()
    events = _Events(clock)
    timer = Timer(lambda: None, sync=lambda r: None, device_timer=events, clock=clock)
    wall, device = timer.timeit(50, "throughput")
    assert device == pytest.approx(0.002)
    assert events.calls == 3  # begin, end, elapsed: not per call


def test_samples_taken_while_the_device_throttles_are_flagged():
    state = {"reasons": []}
    timer = Timer(lambda: None, monitor=lambda: state["reasons"])
    # One call a sample (no target length), so that no batch regrows and takes back the first.
    run = timer.start(TimerSettings(min_samples=4, max_samples=4, warmup_s=0, target_sample_s=0))
    run.sample()
    state["reasons"] = ["SW power cap"]
    run.sample()
    run.sample()
    state["reasons"] = []
    run.sample()
    assert run.throttled == [1, 2]
    assert run.throttle_reasons == ["SW power cap"]


def _sampling(draws, **settings) -> Sampling:
    """A ``Sampling`` fed by a plain function instead of a timer: each draw takes the next batch
    time from ``draws`` (10 calls a batch, 1 ms of the budget each)."""
    it = iter(draws)

    def draw(number: int, rewarm: bool) -> Draw:
        return Draw(next(it), None, number + rewarm, (), 0.001)

    return Sampling(draw, TimerSettings(**settings), 10, 0.0, 1, 1e-4, 0.0)


def test_sampling_decides_when_to_stop_without_a_timer():
    # Identical samples: the median's interval has no width once there are enough to have one.
    steady = _sampling([1e-3] * 100, min_samples=6, rel_ci=0.02)
    while not steady.done:
        steady.sample()
    assert steady.stop_reason == "converged" and len(steady.samples_s) == 6
    assert steady.samples_s[0] == pytest.approx(1e-4)  # seconds per call: the batch over its 10 calls
    # Samples spread wider than the target: the budget (5 draws of 1 ms) ends it.
    noisy = _sampling([1e-3, 2e-3, 4e-3] * 40, min_samples=3, rel_ci=0.01, budget_s=0.005)
    while not noisy.done:
        noisy.sample(rewarm=True)
    assert noisy.stop_reason == "budget" and len(noisy.samples_s) == 5 and noisy.calls_last == 11
    capped = _sampling([1e-3, 2e-3] * 10, min_samples=2, max_samples=4, rel_ci=0.0, budget_s=10)
    while not capped.done:
        capped.sample()
    assert capped.stop_reason == "max_samples" and len(capped.samples_s) == 4


def test_the_timer_and_its_sampling_do_not_import_each_other_and_a_worker_never_imports_analysis():
    import ast
    import subprocess

    import arraybench.worker.sampling as sampling_module

    tree = ast.parse(Path(sampling_module.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "timer" not in imported and not any("analysis" in (m or "") for m in imported)
    # A worker's own imports, as it starts and prepares cells: no analysis, and no scipy (seconds).
    code = ("import sys, arraybench.worker.main, arraybench.worker.prepare, arraybench.worker.selfcheck; "
            "print(sorted(m for m in sys.modules if m.startswith(('arraybench.analysis', 'scipy'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_warm_up_rule_wants_its_time_in_two_calls_unless_the_one_is_slow():
    s = TimerSettings(warmup_s=0.02)
    assert not warmed_up(0, 0.0, 0.0, s)
    assert not warmed_up(1, 0.05, 0.05, s)  # one call of 50 ms: time enough, but one call
    assert warmed_up(1, 0.15, 0.15, s)  # one slow call is its own warm-up
    assert not warmed_up(2, 0.015, 0.005, s) and warmed_up(2, 0.025, 0.005, s)
    assert warmed_up(MAX_WARMUP_CALLS, 1e-4, 1e-8, s)
