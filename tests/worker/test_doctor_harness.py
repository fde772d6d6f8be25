"""The doctor's ``harness`` check: arraybench's timer against each library's own tool.

Real libraries in this process: NumPy against ``timeit``, PyTorch against
``torch.utils.benchmark.Timer``, JAX against a ``block_until_ready`` loop, all on the CPU. The
check itself takes a second pair when the first disagrees; where other processes kept the cores
busy meanwhile, a disagreement is "busy, not judged" (skipped, with its figures and the load).
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
BUSY = re.compile(r"; ratio (\d+\.\d\d)(; first try \d+\.\d\d)?: outside \[0\.8, 1\.25\]; busy, not "
                  r"judged: other processes used ([\d.]+) of \d+ cores meanwhile$")
FIGURES = re.compile(r"arraybench ([\d.]+) µs, .* ([\d.]+) µs per call in the median of")


@pytest.mark.parametrize("name, tool", [("numpy", "timeit"), ("torch", "torch.utils.benchmark.Timer"),
                                        ("jax", "a jax.block_until_ready loop")])
def test_arraybench_agrees_with_each_librarys_own_timer_on_the_cpu(name, tool):
    (outcome,) = selfcheck.run_checks(backend_or_skip(name), ("harness",))
    assert outcome.check == "harness"
    assert f", {tool} " in outcome.detail
    m = LINE.search(outcome.detail) or BUSY.search(outcome.detail)
    assert m, outcome.detail
    if outcome.status == "passed":
        assert 0.8 <= float(m.group(1)) <= 1.25, outcome.detail
    else:  # a disagreement is never failed or passed while others kept the cores busy
        assert outcome.status == "skipped" and m.re is BUSY, outcome.detail
        assert float(m.group(3)) >= selfcheck.BUSY_SHARE * (os.cpu_count() or 1), outcome.detail


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
    processes kept a quarter of the cores busy or more, a timed check's disagreement is "busy, not
    judged", its figures kept; a check that is not a timing still fails."""
    cpus = os.cpu_count() or 1
    apart = selfcheck.harness_outcome("sum", "timeit", [[(90e-6, 60e-6)] * 7])  # 1.5: outside the range
    assert apart.status == "failed"
    busy = selfcheck.judged_at(apart, 0.9 * cpus)
    assert busy.status == "skipped" and busy.detail.startswith(apart.detail)
    assert BUSY.search(busy.detail) and f"used {0.9 * cpus:.1f} of {cpus} cores" in busy.detail
    assert selfcheck.judged_at(apart, 0.0) == apart  # quiet: judged
    assert selfcheck.judged_at(apart, None) == apart  # load unknown (no /proc): judged
    agree = selfcheck.harness_outcome("sum", "timeit", [[(61e-6, 60e-6)] * 7])
    assert selfcheck.judged_at(agree, 0.9 * cpus) == agree
    wrong = selfcheck.CheckDone("float64", "failed", "float32 arithmetic in a float64 run")
    assert selfcheck.judged_at(wrong, 0.9 * cpus) == wrong
