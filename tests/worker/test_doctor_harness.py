"""The doctor's ``harness`` check: arraybench's timer against each library's own tool.

Real libraries in this process: NumPy against ``timeit``, PyTorch against
``torch.utils.benchmark.Timer``, JAX against a ``block_until_ready`` loop, all on the CPU. The
check itself takes a second pair when the first disagrees; on a machine busier still, the test
asks once more, as the doctor's other checks do.
"""

from __future__ import annotations

import os

import re
import time

import pytest

from arraybench.backends.numpy import NumpyBackend
from arraybench.worker import selfcheck

from ..conftest import backend_or_skip

LINE = re.compile(r"in the median of \d+ alternating rounds .*; ratio (\d+\.\d\d)(; first try \d+\.\d\d)?: "
                  r"(within|outside) \[0\.8, 1\.25\]$")
FIGURES = re.compile(r"arraybench ([\d.]+) µs, .* ([\d.]+) µs per call in the median of")


def _harness(backend) -> selfcheck.CheckDone:
    outcome = selfcheck.check_harness(backend)
    if outcome.status != "passed":  # a busy machine: ask once more
        outcome = selfcheck.check_harness(backend)
    return outcome


@pytest.mark.parametrize("name, tool", [("numpy", "timeit"), ("torch", "torch.utils.benchmark.Timer"),
                                        ("jax", "a jax.block_until_ready loop")])
def test_arraybench_agrees_with_each_librarys_own_timer_on_the_cpu(name, tool):
    outcome = _harness(backend_or_skip(name))
    assert outcome.check == "harness"
    assert outcome.status == "passed", outcome.detail
    assert f", {tool} " in outcome.detail
    m = LINE.search(outcome.detail)
    assert m and 0.8 <= float(m.group(1)) <= 1.25, outcome.detail


class SlowWait(NumpyBackend):
    """Stands for a library whose wait arraybench's timer calls does work of its own (a sync that
    also copies, a monitor called inside the loop): the timer would report more than the call."""

    def __init__(self, device: str) -> None:
        super().__init__(device)
        self.sync = self.slow_wait

    @staticmethod
    def slow_wait(_result) -> None:
        end = time.perf_counter() + 30e-6
        while time.perf_counter() < end:
            pass


def test_a_timer_that_adds_to_the_call_fails_the_harness_check(monkeypatch):
    monkeypatch.setattr(selfcheck, "HARNESS_ROUNDS", 3)  # 30 µs on a 6 µs call shows in any round
    monkeypatch.setattr(selfcheck, "HARNESS_BUSY_SHARE", float("inf"))  # judged, whatever the load
    outcome = selfcheck.check_harness(SlowWait("cpu"))
    assert outcome.status == "failed", outcome.detail
    assert "outside [0.8, 1.25]" in outcome.detail and "first try" in outcome.detail


def test_the_line_prints_the_two_times_its_ratio_was_made_of():
    """A JAX doctor run printed "arraybench 83.8 µs, a jax.block_until_ready loop 61 µs per call ...
    ratio 1.02": times pooled over rounds beside the median of the rounds' ratios, one round
    slowed by a neighbour. The line now shows the median round's own times."""
    rounds = [(61e-6, 60e-6), (62e-6, 61e-6), (60e-6, 61e-6), (150e-6, 61e-6), (140e-6, 60e-6),
              (62.5e-6, 61.2e-6), (61e-6, 62e-6)]
    outcome = selfcheck.harness_outcome("sum of 32,768 float64", "a jax.block_until_ready loop", [rounds])
    assert outcome.status == "passed", outcome.detail
    ours, theirs = map(float, FIGURES.search(outcome.detail).groups())
    ratio = float(LINE.search(outcome.detail).group(1))
    assert (ours, theirs, ratio) == (61.0, 60.0, 1.02)
    assert f"{ours / theirs:.2f}" == f"{ratio:.2f}"
    assert "rounds 0.98-2.46" in outcome.detail  # the spread the median left out is said


def test_a_disagreement_on_a_busy_machine_is_not_judged_and_says_why():
    """At load 9 on two cores the doctor failed a timer that agrees on a quiet machine: where other
    processes kept a quarter of the cores busy or more, a disagreement is "busy, not judged"."""
    cpus = os.cpu_count() or 1
    apart = [(90e-6, 60e-6)] * 7  # 1.5: outside the range
    busy = selfcheck.harness_outcome("sum", "timeit", [apart], others_cores=0.9 * cpus)
    assert busy.status == "skipped"
    assert f"busy, not judged: other processes used {0.9 * cpus:.1f} of {cpus} cores" in busy.detail
    quiet = selfcheck.harness_outcome("sum", "timeit", [apart], others_cores=0.0)
    assert quiet.status == "failed" and "outside [0.8, 1.25]" in quiet.detail
    unknown = selfcheck.harness_outcome("sum", "timeit", [apart], others_cores=None)
    assert unknown.status == "failed"
    agree = selfcheck.harness_outcome("sum", "timeit", [[(61e-6, 60e-6)] * 7], others_cores=0.9 * cpus)
    assert agree.status == "passed"
