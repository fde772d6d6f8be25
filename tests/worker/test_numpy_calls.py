"""NumPy called on a library's arrays inside its cell: never ``ok`` under that library's name, and
PyTorch's own error for it says what happened. Judged in this process by the worker's own code."""

from __future__ import annotations

import numpy as np
import pytest

from arraybench import workload
from arraybench.model.cell import Cell
from arraybench.model.replicate import TimerSettings
from arraybench.worker.prepare import ReferenceCache, prepare

from ..conftest import backend_or_skip

QUICK = TimerSettings(min_samples=1, max_samples=1, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)

pytestmark = pytest.mark.usefixtures("registry_restored")  # conftest.py


def judged(backend_name, wl, n, mode="latency"):
    backend = backend_or_skip(backend_name)
    cell = Cell(wl.name, str(n), n, backend.name, "cpu", "float64", mode, params=wl.params_for(n))
    return prepare(backend, wl, cell, QUICK, ReferenceCache()).replicate


# NumPy 2 warns that PyTorch's __array_wrap__ has the old signature when np.exp is handed a
# tensor: the user's mistake this test makes on purpose, not something arraybench does.
@pytest.mark.filterwarnings("ignore:__array_wrap__ must accept context:DeprecationWarning")
@pytest.mark.parametrize("backend, label", [("torch", "PyTorch"), ("jax", "JAX")])
def test_np_exp_inside_a_cell_whose_result_is_the_librarys_own_type_is_never_ok(backend, label):
    """``xp.sum(np.exp(x))`` ends in the library's own type (and PyTorch's ``np.exp`` of a tensor
    is a tensor): only the call itself shows that NumPy computed the exponentials."""
    @workload(sizes={"s": 100}, inputs=lambda n, rng: rng.standard_normal(n))
    def np_exp_inside(xp, x):
        return xp.sum(np.exp(x)) + xp.max(x) * np.pi  # np.pi, a constant, is no NumPy work

    rep = judged(backend, np_exp_inside, 100)
    assert rep.status == "failed", rep.reason
    assert rep.reason.startswith(f"np.exp got {label}'s array: NumPy computed that part on the host")
    assert "use the xp namespace the workload is given (xp.exp)" in rep.reason
    assert "test_numpy_calls.py" in rep.reason and "np.exp(x)" in rep.reason  # the user's line
    assert not rep.timed
    assert judged("numpy", np_exp_inside, 100).status == "ok"  # NumPy's own backend: its own arrays


def test_pytorchs_error_for_np_sum_with_axis_gets_the_hint_to_use_xp():
    @workload(sizes={"s": 100}, inputs=lambda n, rng: rng.standard_normal((n, 4)))
    def np_sum_axis(xp, x):
        return np.sum(x * 2.0, axis=0)

    rep = judged("torch", np_sum_axis, 100)
    assert rep.status == "failed"
    assert "unexpected keyword argument 'axis'" in rep.reason
    assert "np.sum was called on PyTorch's array" in rep.reason and "use xp.sum" in rep.reason
    assert "\n" not in rep.reason and "Traceback" not in rep.reason


def test_the_watch_leaves_the_workloads_globals_as_they_were_and_correct_code_ok():
    @workload(sizes={"s": 100}, inputs=lambda n, rng: rng.standard_normal(n))
    def xp_only(xp, x):
        return xp.exp(x) * np.float64(2.0)  # a NumPy scalar constant is not NumPy work on x

    for backend in ("torch", "jax"):
        rep = judged(backend, xp_only, 100)
        assert rep.status == "ok", rep.reason
    assert xp_only.function_for("torch").__globals__["np"] is np
