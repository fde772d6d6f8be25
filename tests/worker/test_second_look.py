"""A result judged wrong is looked at twice more before the verdict is given.

A wrong result may be the library's arithmetic (every call gives it), an intermittent fault (a
race, a library thread), or memory written after the call returned it; the verdict says which,
because only the first is a verdict on the library's code.
"""

from __future__ import annotations

import numpy as np
import pytest

from arraybench import workload
from arraybench.model.cell import Cell
from arraybench.worker.prepare import ReferenceCache
from arraybench.model.replicate import TimerSettings

from ..conftest import backend_or_skip
from ..measuring import measure_cell

QUICK = TimerSettings(min_samples=2, max_samples=2, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)

pytestmark = pytest.mark.usefixtures("registry_restored")  # conftest.py


def _measure(wl):
    cell = Cell(wl.name, "small", 64, "numpy", "cpu", "float64", "latency")
    return measure_cell(backend_or_skip("numpy"), wl, cell, QUICK, ReferenceCache())


def _same(x):
    return np.array(x, copy=True)


def test_a_wrong_result_every_call_gives_is_wrong_and_says_so():
    @workload(sizes={"small": 64}, reference=_same)
    def always_off(xp, x):
        return x + 1.0

    rep = _measure(always_off)
    assert rep.status == "wrong"
    assert "a second call gave the same error" in rep.reason


def test_a_wrong_first_call_with_a_right_second_one_is_called_intermittent():
    calls = []

    @workload(sizes={"small": 64}, reference=_same)
    def first_off(xp, x):
        calls.append(1)
        return x + 1.0 if len(calls) == 1 else x * 1.0

    rep = _measure(first_off)
    assert rep.status == "wrong"  # a user's program may meet the wrong one: still a wrong verdict
    assert "intermittent" in rep.reason and "second call" in rep.reason
    assert len(calls) > 2  # the timed calls ran as well


def test_a_result_written_after_the_call_returned_is_not_blamed_on_the_arithmetic():
    buffer = np.zeros(64)
    calls = []

    @workload(sizes={"small": 64}, reference=_same)
    def reused_buffer(xp, x):
        # Returns memory it owns and writes again later: the first call's result is right when it
        # returns, and changes under the check's feet (what a stale pointer does to freed memory).
        calls.append(1)
        buffer[:] = x if len(calls) == 1 else x + 1.0
        return buffer

    rep = _measure(reused_buffer)
    assert rep.status == "failed"
    assert "changed in memory after the call returned it" in rep.reason
    assert "max relative error" in rep.reason  # what the check saw is kept in the reason


def _mkl_2024_2() -> bool:
    torch = pytest.importorskip("torch")
    from arraybench.backends.torch_support import torch_build_linalg

    return "Version 2024.2" in torch_build_linalg(torch.__config__.show()).get("torch_blas_detail", "")


def test_a_first_pytorch_call_off_like_mkls_low_accuracy_kernel_names_the_known_bug():
    """pytorch/pytorch#188792: with oneMKL 2024.2 and several threads, a float unary op's first
    call can run MKL's low-accuracy kernel on one thread's share (~1e-8 off); later calls are
    right. The verdict stays wrong and says so; a larger error, or one thread, is not blamed on it."""
    import torch

    if not _mkl_2024_2():
        pytest.skip("this PyTorch build's MKL is not 2024.2, which the bug needs")
    calls = []

    @workload(sizes={"small": 64}, reference=_same, backends=("torch",))
    def first_slightly_off(xp, x):
        calls.append(1)
        return x * (1.0 + 3e-8) if len(calls) == 1 else x * 1.0

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        backend = backend_or_skip("torch")
        rep = measure_cell(backend, first_slightly_off, Cell(first_slightly_off.name, "small", 64, "torch",
                                                            "cpu", "float64", "latency"), QUICK, ReferenceCache())
        assert rep.status == "wrong" and "pytorch/pytorch#188792" in rep.reason
        assert "intermittent" in rep.reason and "--threads 1" in rep.reason
        assert backend.intermittent_cause(1e-3) == ""  # far beyond the low-accuracy kernel's error
        torch.set_num_threads(1)
        assert backend.intermittent_cause(3e-8) == ""  # one thread: no concurrent first calls
    finally:
        torch.set_num_threads(threads)
