"""The doctor's ``harness`` check: arraybench's timer against each library's own tool.

Real libraries in this process: NumPy against ``timeit``, PyTorch against
``torch.utils.benchmark.Timer``, JAX against a ``block_until_ready`` loop, all on the CPU. The
check itself takes a second pair when the first disagrees; on a machine busier still, the test
asks once more, as the doctor's other checks do.
"""

from __future__ import annotations

import re
import time

import pytest

from arraybench.backends.numpy import NumpyBackend
from arraybench.worker import selfcheck

from ..conftest import backend_or_skip

LINE = re.compile(r"ratio (\d+\.\d\d), the median of \d+ alternating rounds(; first try \d+\.\d\d)?: "
                  r"(within|outside) \[0\.8, 1\.25\]$")


def _harness(backend) -> selfcheck.Outcome:
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
    outcome = selfcheck.check_harness(SlowWait("cpu"))
    assert outcome.status == "failed", outcome.detail
    assert "outside [0.8, 1.25]" in outcome.detail and "first try" in outcome.detail
