"""A sample over which the process's resident memory grew is warm-up, not a measurement.

Such a sample paid for memory touched for the first time, once in a process's life; a plain
``timeit`` process makes those calls in ``autorange`` and never counts them (PyTorch's FFT at n = 10⁶
grew its worker's heap by 16 MB in three or four of its first eight samples, which took 21-23 ms
against 15-17 ms for the rest). One real run, one process, of three workloads that hold on
to memory differently; and the rule itself, fed by a plain function.
"""

from __future__ import annotations

import mmap

import pytest

import arraybench
from arraybench.worker.counters import SampleCounters
from arraybench.numeric.stopping import MAX_WARMUP_SAMPLES, WARMUP_GROWTH_BYTES
from arraybench.worker.sampling import Draw, Sampling, TimerSettings

MIB = 1 << 20
PAGES_PER_CALL = 2 * MIB // 4096
#: Calls of ``growing`` that keep memory: fewer than the samples taken back at most, so that all of
#: them are warm-up whatever the load. A busy machine leaves more of them to the samples: its slower
#: calls fill the warm-up's time in fewer of them, and a calibrated call that a burst made longer
#: than ``REWARM_BELOW_S`` is not re-warmed, so that each sample is one call (21 of 24 were).
GROWING_CALLS = 16

WORKLOADS = '''
import time

import arraybench

KEPT = {"growing": [], "hoarding": []}


def _slow(x):
    time.sleep(0.006)  # one call a sample
    return x * 2.0


@arraybench.workload(sizes={"small": 1_000}, namespace="native", reference=lambda x: x * 2.0,
                     backends=("numpy",))
def steady(xp, x):
    return _slow(x)


@arraybench.workload(sizes={"small": 1_000}, namespace="native", reference=lambda x: x * 2.0,
                     backends=("numpy",))
def growing(xp, x):
    if len(KEPT["growing"]) < %(growing)d:  # 2 MiB touched and kept by each of the first calls
        KEPT["growing"].append(xp.ones(1 << 18))
    return _slow(x)


@arraybench.workload(sizes={"small": 1_000}, namespace="native", reference=lambda x: x * 2.0,
                     backends=("numpy",))
def hoarding(xp, x):
    KEPT["hoarding"].append(xp.ones(1 << 18))  # by every call: the workload's own cost
    return _slow(x)
''' % {"growing": GROWING_CALLS}


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> dict[str, arraybench.Record]:
    folder = tmp_path_factory.mktemp("warmup")
    (folder / "memory.py").write_text(WORKLOADS)
    out = folder / "run"
    arraybench.run(["steady", "growing", "hoarding"], backends=["numpy"], devices=["cpu"],
                   workload_files=[str(folder / "memory.py")], output_dir=out, processes=1,
                   max_time=0.6, min_samples=8, plots=False, store=False)
    return {r.workload: r for r in arraybench.load_results(out).records}


def _replicate(record):
    assert record.status == "ok", record.reason
    (rep,) = record.replicates
    return rep


def test_samples_that_grew_memory_are_warm_up_and_the_rest_are_measured(records):
    steady, growing = _replicate(records["steady"]), _replicate(records["growing"])
    # Every call that kept 2 MiB was made outside the counted samples: the warm-up loop, the
    # first call, a re-warming call, or a sample taken back. None of the counted samples faulted
    # its pages, and it took warm-up calls that the steady one did not need. (Exact counts move
    # with load: a batch calibrated under a neighbour's burst regrows, and the samples before it
    # become warm-up; an untimed re-warming call may make one of them.)
    assert GROWING_CALLS < MAX_WARMUP_SAMPLES
    assert growing.warmup_calls >= 12 and growing.warmup_calls + 1 >= steady.warmup_calls
    assert max(steady.usage.sample_minor_faults) < PAGES_PER_CALL / 4
    assert len(growing.samples_s) >= 8
    assert max(growing.usage.sample_minor_faults) < PAGES_PER_CALL / 4
    assert len(growing.usage.sample_minor_faults) == len(growing.samples_s)


def test_memory_that_grows_on_every_call_is_the_workloads_own_and_is_measured(records):
    hoarding = _replicate(records["hoarding"])
    # Taken back up to the cap, then counted: hiding a cost that never ends would flatter it.
    assert hoarding.warmup_calls >= MAX_WARMUP_SAMPLES
    assert len(hoarding.samples_s) >= 8
    assert min(hoarding.usage.sample_minor_faults) >= PAGES_PER_CALL * 0.9


def _sampling(growth: list[int | None]) -> tuple[Sampling, list[bool]]:
    """A ``Sampling`` of 2 calls a sample whose memory grew by ``growth[i]`` over sample i."""
    def draw(number: int, rewarm: bool) -> Draw:
        return Draw(0.002 * number, None, number, (), 0.001)

    run = Sampling(draw, TimerSettings(min_samples=3, max_samples=100, rel_ci=0.0, budget_s=10.0),
                   2, 0.0, 5, 1e-3, 0.0)
    taken = []
    for g in growth:
        run.sample()
        taken.append(run.take_back_warmup(g))
    return run, taken


def test_the_rule_takes_back_growth_wherever_it_falls_up_to_the_cap():
    big = WARMUP_GROWTH_BYTES + 1
    run, taken = _sampling([0, big, 0, None, big, WARMUP_GROWTH_BYTES, 0])
    assert taken == [False, True, False, False, True, False, False]
    assert len(run.samples_s) == 5 and run.warmup_calls == 5 + 2 * 2
    # A cap: memory that grows in every sample is taken back MAX_WARMUP_SAMPLES times at most.
    run, taken = _sampling([big] * (MAX_WARMUP_SAMPLES + 5))
    assert sum(taken) == MAX_WARMUP_SAMPLES and not run.warming
    assert len(run.samples_s) == 5


def test_the_counters_read_how_much_resident_memory_a_sample_kept():
    counters = SampleCounters(1, hardware=False)
    try:
        counters.begin(0)
        # A mapping of its own: malloc might hand back memory an earlier test left resident.
        kept = mmap.mmap(-1, 8 * MIB)
        for offset in range(0, 8 * MIB, mmap.PAGESIZE):
            kept[offset] = 1
        grown = counters.resident_growth()
        counters.cancel()
        counters.begin(0)
        kept.close()  # handed back: the resident size falls again
        assert counters.resident_growth() < MIB and grown >= 7 * MIB
        counters.end(0, 1)
        assert counters.usage(0).calls == 1  # the cancelled window counted for nothing
    finally:
        counters.close()
