"""Every built-in workload against its float64 reference, on every installed CPU backend.

These run in the test process with the real libraries; timing is cut to the minimum, because what
is checked here is the result, its dtype and its error.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from arraybench.worker import accuracy
from arraybench.worker.prepare import ReferenceCache
from ..measuring import measure_cell, shared_references
from arraybench.model.cell import Cell
from arraybench.model.replicate import TimerSettings
from arraybench.workloads import BUILTIN, REGISTRY, Workload
from arraybench.workloads.inputs import make_inputs
from arraybench.workloads.inputs import bind

from ..conftest import backend_or_skip

QUICK = TimerSettings(min_samples=1, max_samples=1, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)


def run(backend, workload: str, dtype: str = "float64", mode: str = "latency", size: int | None = None):
    wl = REGISTRY[workload]
    n = size or wl.sizes["small"]
    cell = Cell(workload, "small", n, backend.name, backend.device, dtype, mode)
    return measure_cell(backend, wl, cell, QUICK, shared_references())  # a built-in: its name is its code


@pytest.mark.parametrize("backend_name", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("workload", BUILTIN)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_builtin_workload_matches_reference(backend_name, workload, dtype):
    backend = backend_or_skip(backend_name)
    shard = run(backend, workload, dtype)
    wl = REGISTRY[workload]
    if backend_name == "numpy" and workload == "gradient":
        assert "finite differences" in shard.method
    assert shard.status == "ok", shard.reason
    assert shard.max_rel_error <= shard.tolerance
    assert shard.samples_s and shard.first_call_s > 0
    if wl.check.kind == "exact":
        assert shard.max_rel_error == 0.0


@pytest.mark.parametrize("backend_name", ["numpy", "torch", "jax"])
def test_float32_run_is_checked_against_float32_tolerance(backend_name):
    backend = backend_or_skip(backend_name)
    shard64 = run(backend, "matmul", "float64")
    shard32 = run(backend, "matmul", "float32")
    # float32 errors are ~2^29 times float64's; a float32 result would fail the float64 tolerance.
    assert shard32.tolerance > 1e6 * shard64.tolerance
    assert shard32.max_rel_error > shard64.tolerance


def test_jax_keeps_float64():
    backend = backend_or_skip("jax")
    import jax

    x = backend.asarray(np.arange(4, dtype=np.float64))
    assert str(x.dtype) == "float64"
    # The pitfall the backend guards against: with x64 off, JAX silently stores float32.
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(RuntimeError, match="float32"):
            backend.asarray(np.arange(4, dtype=np.float64))
    finally:
        jax.config.update("jax_enable_x64", True)


def test_numpy_finite_differences_in_float32_are_judged_honestly():
    backend = backend_or_skip("numpy")
    shard = run(backend, "gradient", "float32", size=10_000)
    # Forward differences lose ~sqrt(eps) * n of accuracy: at 10,000 float32 parameters the result
    # is a few percent off, and arraybench says so instead of timing it as a valid gradient.
    assert shard.status == "wrong"
    assert "exceeds tolerance" in shard.reason
    assert shard.max_rel_error > accuracy.FINITE_DIFFERENCE_CAP


def _workload(fn, **kw) -> Workload:
    base = dict(name="probe", fn=fn, inputs=lambda n, rng: (rng.standard_normal(n),),
                sizes={"small": 64}, namespace="native")
    base.update(kw)
    return Workload(**base)


def _measure(backend, wl: Workload, dtype="float64"):
    cell = Cell(wl.name, "small", 64, backend.name, backend.device, dtype, "latency")
    return measure_cell(backend, wl, cell, QUICK, ReferenceCache())


def test_a_result_in_the_wrong_dtype_is_marked_wrong():
    backend = backend_or_skip("numpy")
    shard = _measure(backend, _workload(lambda xp, a: (a * 2).astype(np.float32)))
    assert shard.status == "wrong"
    assert "float32" in shard.reason and "float64" in shard.reason


def test_sort_semantics_are_matched_before_values_are_compared():
    backend = backend_or_skip("torch")
    raw_sort = _workload(lambda xp, a: xp.sort(a), reference=lambda a: np.sort(a),
                         check=accuracy.Check.exact())
    shard = _measure(backend, raw_sort)
    assert shard.status == "wrong"
    assert "indices" in shard.reason
    assert run(backend, "sort").status == "ok"  # the built-in override returns values only


def test_a_wrong_value_is_caught_by_the_elementwise_check():
    backend = backend_or_skip("numpy")
    shard = _measure(backend, _workload(lambda xp, a: np.sin(a) * (1 + 1e-9),
                                        reference=lambda a: np.sin(a)))
    assert shard.status == "wrong"
    assert shard.max_rel_error == pytest.approx(1e-9, rel=1e-3)


def test_nan_is_wrong():
    backend = backend_or_skip("numpy")
    shard = _measure(backend, _workload(lambda xp, a: a * np.nan, reference=lambda a: a))
    assert shard.status == "wrong" and "NaN" in shard.reason


def test_an_exception_in_a_workload_fails_that_cell_with_its_line():
    backend = backend_or_skip("numpy")

    def broken(xp, a):
        return a @ a.reshape(3, -1)  # 64 elements do not reshape to 3 rows

    shard = _measure(backend, _workload(broken))
    assert shard.status == "failed"
    assert "ValueError" in shard.reason
    assert "test_workloads.py" in shard.reason  # the user's own line


@pytest.mark.parametrize("backend_name", ["jax", "torch"])
def test_autodiff_matches_the_analytic_gradient(backend_name):
    backend = backend_or_skip(backend_name)
    shard = run(backend, "gradient", "float64", size=1000)
    assert shard.status == "ok"
    assert "autodiff" in shard.method
    assert shard.max_rel_error < 1e-14


def test_torch_gradient_does_not_accumulate_across_calls():
    backend = backend_or_skip("torch")
    wl = REGISTRY["gradient"]
    w, x = (backend.asarray(a) for a in make_inputs(wl, 100, "float64").arrays)
    bound = bind(wl, backend, "latency", (w, x))
    first = backend.to_numpy(bound.op(*bound.args)).copy()
    for _ in range(3):
        again = backend.to_numpy(bound.op(*bound.args))
    np.testing.assert_array_equal(first, again)
    assert w.grad is None  # the input itself never becomes a leaf that accumulates


def test_inputs_are_identical_for_every_backend_and_process():
    wl = REGISTRY["matmul"]
    a1, b1 = make_inputs(wl, 50, "float32", seed=0).arrays
    a2, b2 = make_inputs(wl, 50, "float32", seed=0).arrays
    np.testing.assert_array_equal(a1, a2)
    assert a1.dtype == np.float32
    assert not np.array_equal(a1, make_inputs(wl, 50, "float32", seed=1).arrays[0])


def test_jax_jit_mode_compiles_and_matches():
    backend = backend_or_skip("jax")
    for workload in BUILTIN:
        shard = run(backend, workload, mode="compiled")
        assert shard.status == "ok", (workload, shard.reason)
        assert "jax.jit" in shard.method


def test_include_transfer_times_the_round_trip_from_host_data():
    backend = backend_or_skip("torch")
    wl = REGISTRY["elementwise"]
    cell = Cell("elementwise", "small", 1000, "torch", "cpu", "float64", "latency", transfer=True)
    shard = measure_cell(backend, wl, cell, QUICK, ReferenceCache())
    assert shard.status == "ok", shard.reason
    assert shard.method == "eager +transfer"


@pytest.mark.slow
def test_torch_compile_once():
    """torch.compile's first call costs ~15 s here: this is the suite's only one.

    The function has a graph break (a Python float taken from a tensor), which arraybench reports:
    compiled code that falls back to Python between graphs is a common reason compiling does not pay.
    """
    backend = backend_or_skip("torch")

    def scaled(xp, a):
        return a * float(a.sum())  # data-dependent Python value: a graph break

    wl = _workload(scaled, reference=lambda a: a * a.sum())
    cell = Cell("probe", "small", 64, "torch", "cpu", "float64", "compiled")
    shard = measure_cell(backend, wl, cell, QUICK, ReferenceCache())
    assert shard.status == "ok", shard.reason
    assert shard.method == "torch.compile"
    assert shard.first_call_s > max(shard.samples_s)  # compilation is in the first call only
    assert any("graph break" in w for w in shard.warnings), shard.warnings


def test_torch_compile_that_made_no_graph_is_not_a_compiled_time():
    """Dynamo compiles nothing of a function without tensor operations: every call runs eager, and
    a "compiled" time would be an eager one. (No graph reaches Inductor: this costs no compile.)"""
    backend = backend_or_skip("torch")
    wl = _workload(lambda xp, a: a)
    cell = Cell("probe", "small", 64, "torch", "cpu", "float64", "compiled")
    shard = measure_cell(backend, wl, cell, QUICK, ReferenceCache())
    assert shard.status == "skipped", (shard.status, shard.reason)
    assert "torch.compile made no graph of it, so every call ran eager" in shard.reason
    assert not shard.samples_s


_CALLS = [0]


def test_torch_compile_that_reaches_its_recompile_limit_fails_the_cell_loudly():
    """A function that needs a new graph on every call: past Dynamo's recompile limit the calls
    would run eager, so the cell fails and says why instead of timing them as compiled."""
    backend = backend_or_skip("torch")

    def drifting(xp, a):
        _CALLS[0] += 1  # a global Dynamo guards on: every call is a recompile
        return a * _CALLS[0]

    wl = _workload(drifting, reference=lambda a: a)
    cell = Cell("probe", "small", 8, "torch", "cpu", "float64", "compiled")
    twelve_calls = replace(QUICK, min_samples=12, max_samples=12, budget_s=10.0)  # past the limit of 8
    shard = measure_cell(backend, wl, cell, twelve_calls, ReferenceCache())
    assert shard.status == "failed", (shard.status, shard.reason)
    assert "torch.compile reached its recompile limit" in shard.reason
    assert "not timed as compiled" in shard.reason and not shard.samples_s
