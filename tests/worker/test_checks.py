"""The default check derived from the computation, and checks that know the dtype. Cells are
judged in this process by the worker's own code, on the real libraries."""

from __future__ import annotations

import numpy as np
import pytest

from arraybench import Check, workload
from arraybench.model.cell import Cell
from arraybench.worker import accuracy
from arraybench.worker.prepare import ReferenceCache, prepare
from arraybench.model.replicate import TimerSettings
from arraybench.workloads.check import STABLE_ELEMENTWISE_ULPS
from arraybench.workloads.reference import reference_noise, reference_result
from arraybench.workloads import REGISTRY  # importing the package registers the built-ins

from ..conftest import backend_or_skip

QUICK = TimerSettings(min_samples=1, max_samples=1, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)
EPS64 = float(np.finfo(np.float64).eps)

pytestmark = pytest.mark.usefixtures("registry_restored")  # conftest.py


def judged(backend_name, wl, n, dtype="float64", references=None):
    backend = backend_or_skip(backend_name)
    cell = Cell(wl.name, str(n), n, backend.name, "cpu", dtype, "latency", params=wl.params_for(n))
    return prepare(backend, wl, cell, QUICK, references or ReferenceCache()).replicate


def _softmax(xp, x, axis=1):
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _qkv(n, rng):
    return tuple(rng.standard_normal((n, 64)) for _ in range(3))


# -- correct code is ok ---------------------------------------------------------------------------

def test_correct_float64_code_that_the_old_default_called_wrong_is_ok():
    """Attention on PyTorch and a cumulative sum on JAX: 6e-14 and 5e-14 off NumPy, 8 ulp is 1.8e-15."""
    @workload(sizes={"s": 64}, inputs=_qkv)
    def attention(xp, q, k, v):
        return _softmax(xp, q @ xp.matrix_transpose(k) / 8.0) @ v

    @workload(sizes={"s": 1000}, inputs=lambda n, rng: rng.standard_normal(n))
    def running_total(xp, x):
        return xp.cumulative_sum(x)

    assert attention.check.kind == "derived"
    for backend, wl in (("torch", attention), ("jax", running_total)):
        rep = judged(backend, wl, wl.sizes["s"])
        assert rep.status == "ok", rep.reason
        assert 8 * EPS64 < rep.tolerance < 1e-11
        old = judged(backend, _with(wl, Check.elementwise()), wl.sizes["s"])
        assert old.status == "wrong"  # what the old default said of the same result


def test_float32_runs_get_a_float32_tolerance():
    @workload(sizes={"s": 64}, inputs=_qkv)
    def attention32(xp, q, k, v):
        return _softmax(xp, q @ xp.matrix_transpose(k) / 8.0) @ v

    rep64 = judged("torch", attention32, 64)
    rep32 = judged("torch", attention32, 64, "float32")
    assert rep32.status == "ok", rep32.reason
    # The same conditioning (measured on the float32-rounded inputs) in ulps of float32: about the
    # epsilons' ratio, 2**29, apart.
    assert 2.0 ** 27 < rep32.tolerance / rep64.tolerance < 2.0 ** 31


def test_a_long_sequential_float32_scan_is_judged_by_float32_rounding():
    """Inputs rounded to float32 make the float64 reference's sums exact: the noise must come from
    running NumPy in float32 (its sequential cumsum, ~90 ulp off at 200,000 elements)."""
    @workload(sizes={"s": 200_000}, inputs=lambda n, rng: rng.standard_normal(n))
    def long_scan(xp, x):
        return xp.cumulative_sum(x)

    rep = judged("numpy", long_scan, 200_000, "float32")
    assert rep.status == "ok", rep.reason
    floor = 2 * np.log2(200_000) * np.finfo(np.float32).eps  # 2 log2(N) ulp
    assert rep.max_rel_error > floor  # above the floor: the NumPy-in-float32 rerun set the tolerance


def _with(wl, check):
    import dataclasses

    return dataclasses.replace(wl, check=check)


# -- planted bugs are wrong, and say how to accept them ----------------------------------------------

def _f32(xp, x):
    return xp.astype(xp.astype(x, xp.float32), x.dtype)


def _bugs():
    vec = {"sizes": {"s": 1000}, "inputs": lambda n, rng: rng.standard_normal(n)}
    square = {"sizes": {"s": 64}, "inputs": lambda n, rng: rng.standard_normal((n, n))}
    return [
        (workload(**vec, reference=lambda x: np.var(x, ddof=1), name="var_f32")(
            lambda xp, x: xp.var(_f32(xp, x), correction=1)), "float32 step"),
        (workload(**vec, reference=np.cumsum, name="scan_off_by_one")(
            lambda xp, x: xp.concat([xp.zeros(1, dtype=x.dtype), xp.cumulative_sum(x)[:-1]])),
         "off-by-one"),
        (workload(**square, reference=lambda x: _softmax(np, x), name="softmax_axis")(
            lambda xp, x: _softmax(xp, x, axis=0)), "wrong axis"),
        (workload(**vec, reference=lambda x: np.std(x, ddof=1), name="std_ddof")(
            lambda xp, x: xp.std(x)), "wrong ddof"),
    ]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_planted_bugs_are_wrong_with_the_noise_and_the_check_that_accepts(backend):
    for wl, kind in _bugs():
        rep = judged(backend, wl, wl.sizes["s"])
        assert rep.status == "wrong", (kind, rep.reason)
        assert "the reference itself moves by" in rep.reason, rep.reason
        assert "\n" not in rep.reason
        if rep.max_rel_error * 1.25 > accuracy.SUGGESTION_CAP:
            # No check is offered that would accept anything (the off-by-one, the wrong axis).
            assert "check=" not in rep.reason and "does not match the reference" in rep.reason
            continue
        assert "would accept it" in rep.reason
        # The check it names does accept that error, and only just.
        suggested = eval(rep.reason.split("check=")[1].split(" would")[0], {"Check": Check})
        assert rep.max_rel_error <= suggested.tolerance("float64", 1000) <= 2 * rep.max_rel_error


def test_a_wrong_result_under_an_explicit_check_also_quotes_the_reference_noise():
    @workload(sizes={"s": 100}, inputs=lambda n, rng: rng.standard_normal(n),
              reference=lambda x: np.exp(x), check=Check.elementwise())
    def exp_f32(xp, x):
        return xp.exp(_f32(xp, x))

    rep = judged("numpy", exp_f32, 100)
    assert rep.status == "wrong"
    assert rep.tolerance == 8 * EPS64  # the explicit check is kept as written
    assert "the reference itself moves by" in rep.reason
    assert "check=Check.elementwise(rtol={'float64': " in rep.reason


# -- the explicit checks of the built-ins stay --------------------------------------------------------

def test_builtin_checks_stay_explicit_and_tight():
    assert REGISTRY["sort"].check.kind == "exact"
    assert REGISTRY["elementwise"].check == Check.elementwise(ulps=8)
    assert all(wl.check.kind != "derived" for wl in REGISTRY.values() if wl.source == "builtin")
    assert Check.elementwise().tolerance("float64", 10 ** 6) == 8 * EPS64


# -- the noise: what it measures, and its cost -------------------------------------------------------

def test_noise_is_elementwise_for_stable_outputs_and_normwise_after_cancellation():
    @workload(sizes={"s": 1000}, inputs=lambda n, rng: rng.standard_normal(n))
    def scan_and_exp(xp, x):
        return xp.cumulative_sum(x), xp.exp(x)

    x = (scan_and_exp.inputs(1000, np.random.default_rng(0)),)
    ref = reference_result(scan_and_exp, x)
    scan, exp = reference_noise(scan_and_exp, x, ref.value)
    assert "perturbed by 4 ulp" in scan.sources
    assert exp.elementwise <= STABLE_ELEMENTWISE_ULPS  # exp is stable element by element
    assert Check.derived().settle(exp).kind == "elementwise"
    assert scan.elementwise > STABLE_ELEMENTWISE_ULPS  # partial sums near zero are not
    assert Check.derived().settle(scan).kind == "normwise"
    assert 0 < scan.normwise < 1e3
    assert scan.elements == 1000


def test_the_floor_grows_with_the_log_of_the_input_elements():
    quiet = accuracy.Noise(elementwise=0.0, normwise=0.0, elements=2 ** 20)
    assert Check.derived().settle(quiet).ulps == 40.0 and Check.derived().settle(quiet).kind == "elementwise"
    assert Check.derived().settle(accuracy.Noise(0.0, 0.0, elements=100)).ulps == 16.0


def test_noise_costs_a_few_reference_calls_once_per_cell():
    calls = []

    def reference(x):
        calls.append(x.dtype)
        return np.cumsum(x)

    @workload(sizes={"s": 100}, inputs=lambda n, rng: rng.standard_normal(n), reference=reference)
    def counted(xp, x):
        return xp.cumulative_sum(x)

    references = ReferenceCache()
    for _ in range(2):
        assert judged("numpy", counted, 100, references=references).status == "ok"
    # The reference in long double and in float64, two reruns on perturbed inputs; for the two cells.
    assert calls == [np.longdouble] + [np.float64] * 3


# -- the reference as accurate as the best library, decided alike in every worker ----------------------

def _column_std(n, columns=4):
    @workload(sizes={"s": n}, inputs=lambda n, rng: rng.normal(1.0, 1.0, (n, columns)), name=f"colstd{n}")
    def colstd(xp, x):
        return xp.std(x, axis=0)
    return colstd


def test_the_reference_of_a_long_column_reduction_is_the_exact_answer_not_numpys_rounding():
    """NumPy reduces a C-ordered matrix over axis 0 row after row (error ~ sqrt(n)); the reference
    is its long-double run, within a few ulp of math.fsum's exact answer, where NumPy is not."""
    import math

    n = 200_000
    wl = _column_std(n)
    x = (wl.inputs(n, np.random.default_rng(3)),)
    ref = reference_result(wl, x)
    exact = np.array([math.sqrt(math.fsum((c - math.fsum(c) / n) ** 2) / n) for c in x[0].T])
    assert np.max(np.abs(ref.value - exact) / exact) <= 4 * EPS64
    assert np.max(np.abs(ref.plain - exact) / exact) > 16 * EPS64  # NumPy's own float64 rounding
    noise = reference_noise(wl, x, ref.value, plain=ref.plain)
    assert "NumPy's float64 against its long double" in noise.sources


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_column_std_over_2e5_rows_is_ok_on_every_library(backend):
    rep = judged(backend, _column_std(200_000), 200_000)
    assert rep.status == "ok", rep.reason


def test_the_long_double_rule_is_on_sizes_and_work_not_time():
    from arraybench.workloads.reference import LONG_DOUBLE_ELEMENTS, LONG_DOUBLE_FLOPS, extended_allowed

    small = (np.zeros(LONG_DOUBLE_ELEMENTS // 2), np.zeros(LONG_DOUBLE_ELEMENTS // 2))
    assert extended_allowed(small) and extended_allowed(small, flops=LONG_DOUBLE_FLOPS)
    assert not extended_allowed(small + (np.zeros(1),))
    assert not extended_allowed(small, flops=2 * LONG_DOUBLE_FLOPS)  # a declared matmul's work
    import arraybench.workloads.reference as reference
    assert not any(name in vars(reference) for name in ("time", "LONG_DOUBLE_BUDGET_S"))


# -- checks that know the dtype (6d) ----------------------------------------------------------------

def test_a_float64_growth_bound_no_longer_passes_a_50_percent_float32_error():
    ref = np.linspace(1.0, 2.0, 100)
    half_off = ref * 1.5
    old = Check.normwise(growth=lambda n: 1e-9 / (8 * EPS64))  # written for float64: 1e-9
    assert old.tolerance("float32", 100) > 0.5  # what growth(n) alone gave a float32 run
    assert accuracy.judge(half_off.astype(np.float32), ref, old, "float32", 100).ok

    seen = []
    per_dtype = Check.normwise(growth=lambda n, dtype: seen.append(dtype) or (64 if dtype == "float32"
                                                                              else 1e-9 / (8 * EPS64)))
    assert per_dtype.tolerance("float64", 100) == pytest.approx(1e-9)
    assert per_dtype.tolerance("float32", 100) == pytest.approx(64 * 8 * 2.0 ** -23)
    assert seen == ["float64", "float32"]
    assert not accuracy.judge(half_off.astype(np.float32), ref, per_dtype, "float32", 100).ok
    assert Check.normwise(lambda n: n).tolerance("float64", 100) == 100 * 8 * EPS64  # growth(n) works


def test_rtol_per_dtype_and_derived_for_a_dtype_left_out():
    both = Check.normwise(rtol={"float64": 1e-12, "float32": 1e-5})
    assert both.tolerance("float64", 10) == 1e-12 and both.tolerance("float32", 10) == 1e-5
    assert not both.needs_noise("float32")
    assert Check.elementwise(rtol=1e-6).tolerance("float32", 10) == 1e-6  # one number: every dtype
    tf32 = Check.normwise(rtol={"float32": 1e-5}, matmul=True)
    assert tf32.tolerance("float32", 10, "tf32") == pytest.approx(1e-5 * 2.0 ** 13)
    only64 = Check.normwise(rtol={"float64": 1e-9})
    assert only64.needs_noise("float32") and not only64.needs_noise("float64")
    noise = accuracy.Noise(elementwise=2.0, normwise=1.0)
    assert only64.settle(noise, "float64") is only64
    assert only64.settle(noise, "float32") == Check.derived().settle(noise)


def test_a_float64_rtol_checks_a_real_float32_run():
    """``{"float64": 1e-9}`` scaled to float32 by epsilons would be 0.54 and pass a 50% error."""
    loose = Check.normwise(rtol={"float64": 1e-9})

    @workload(sizes={"s": 1000}, inputs=lambda n, rng: rng.standard_normal(n), check=loose)
    def total(xp, x):
        return xp.sum(x)

    @workload(sizes={"s": 1000}, inputs=lambda n, rng: rng.standard_normal(n),
              reference=lambda x: 1.5 * np.sum(x), check=loose)
    def half_off(xp, x):
        return xp.sum(x)

    for backend in ("numpy", "torch"):
        rep = judged(backend, total, 1000, "float32")
        assert rep.status == "ok", rep.reason
        assert rep.tolerance < 1e-4
        assert any("rtol for float64 only" in w for w in rep.warnings)
        assert judged(backend, total, 1000).tolerance == 1e-9
        bad = judged(backend, half_off, 1000, "float32")
        assert bad.status == "wrong" and bad.max_rel_error > 0.3


@pytest.mark.parametrize("make, words", [
    (lambda: Check.normwise(rtol={"int8": 1}), "floating dtypes"),
    (lambda: Check.normwise(rtol={"floot64": 1e-9}), "dtype names"),
    (lambda: Check.elementwise(rtol=-1.0), "positive"),
    (lambda: Check.normwise(rtol={}), "name a dtype"),
    (lambda: Check.derived(factor=0), "positive"),
])
def test_a_bad_check_is_one_clear_line(make, words):
    with pytest.raises(ValueError, match=words) as info:
        make()
    assert "\n" not in str(info.value)


def test_a_bad_check_in_a_workload_file_is_reported_on_one_line(tmp_path):
    from arraybench.workloads.userfile import load_files

    path = tmp_path / "bad_check.py"
    path.write_text("import arraybench\n"
                    "@arraybench.workload(sizes=[100], check=arraybench.Check.normwise(rtol={'float46': 1e-9}))\n"
                    "def shifted(xp, x):\n    return x + 1\n")
    error = load_files([str(path)]).errors[str(path)]
    assert "rtol is keyed by dtype names" in error and "bad_check.py:2" in error
    assert "\n" not in error and "Traceback" not in error


# -- results judged by what they are -------------------------------------------------------------------

def test_numpy_called_inside_a_jax_cell_is_never_ok_under_jaxs_name():
    @workload(sizes={"s": 100}, inputs=lambda n, rng: rng.standard_normal(n))
    def np_inside(xp, x):
        return np.exp(x) + 1.0  # np. where xp. was meant: NumPy computes it in the JAX worker

    rep = judged("jax", np_inside, 100)
    assert rep.status == "failed"
    assert rep.reason.startswith("returned a numpy.ndarray, not a jax.Array: the workload called np.")
    assert "\n" not in rep.reason and "Traceback" not in rep.reason
    assert judged("numpy", np_inside, 100).status == "ok"  # NumPy's own backend is exempt


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_a_reference_that_returned_none_leaves_the_cell_not_checked_never_wrong(backend):
    def forgot_to_return(x):
        np.exp(x)

    @workload(sizes={"s": 50}, inputs=lambda n, rng: rng.standard_normal(n), reference=forgot_to_return)
    def exp_cell(xp, x):
        return xp.exp(x)

    rep = judged(backend, exp_cell, 50)
    assert rep.status == "ok" and rep.max_rel_error is None
    assert any(w.startswith("not checked: the reference") and "returned None" in w for w in rep.warnings)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_argsort_with_ties_is_judged_by_the_order_it_promises(backend):
    @workload(sizes={"s": 2000}, inputs=lambda n, rng: rng.integers(0, 20, n).astype(np.float64))
    def ranking(xp, scores):
        return xp.argsort(scores)

    rep = judged(backend, ranking, 2000)
    assert rep.status == "ok", rep.reason

    @workload(sizes={"s": 2000}, inputs=lambda n, rng: rng.integers(0, 20, n).astype(np.float64),
              reference=lambda s: np.argsort(-s, kind="stable"))
    def ranking_reversed(xp, scores):
        return xp.argsort(scores)  # ascending where descending is meant: a real bug

    assert judged(backend, ranking_reversed, 2000).status == "wrong"


def test_integers_are_judged_by_value_whatever_their_integer_type():
    ref = np.array([3, 0, 2, 1], dtype=np.int64)
    v = accuracy.judge(ref.astype(np.uint32), ref, Check.exact(), "float64", 4)
    assert v.ok and "uint32, not int64" in v.note
    assert not accuracy.judge(np.array([3, 0, 1, 2], np.uint32), ref, Check.exact(), "float64", 4).ok
    # a permutation that is not an ordering of any input stays wrong
    keys = (np.array([4.0, 1.0, 3.0, 2.0]),)
    assert not accuracy.judge(np.array([0, 1, 2, 3]), ref, Check.exact(), "float64", 4, inputs=keys).ok


def test_a_python_float_returned_on_pytorch_is_named_as_the_workloads_mistake():
    @workload(sizes={"s": 50}, inputs=lambda n, rng: rng.standard_normal(n))
    def as_float(xp, x):
        return float(xp.sum(x))

    rep = judged("torch", as_float, 50)
    assert rep.status == "failed"
    assert rep.reason.startswith("returned a Python float, not a torch.Tensor: return the library's array")
    assert "detach" not in rep.reason


def test_a_float32_cast_beside_a_fixed_float32_input_stays_wrong():
    """Only ``w`` is fixed float32: NumPy gives float64 on these inputs, so a float32 result comes
    from a cast in the code (``x.float()``), not from following ``w``."""
    import arraybench

    def inputs(n, rng):
        return arraybench.fixed(rng.standard_normal(n), "float32"), rng.standard_normal(n)

    @workload(sizes={"s": 10_000}, inputs=inputs)
    def weighted_scan(xp, w, x):
        return xp.cumulative_sum(w * x)

    @weighted_scan.override("torch")
    def _planted(xp, w, x):
        return xp.cumsum(w * x.float(), 0)  # the planted float32 step

    assert judged("numpy", weighted_scan, 10_000).status == "ok"
    rep = judged("torch", weighted_scan, 10_000)
    assert rep.status == "wrong" and "result is float32, expected float64" in rep.reason


def test_the_other_allocator_states_process_times_without_judging_again():
    """The same cell in the other allocator state is the same arithmetic on the same inputs, judged
    by its headline process: its worker neither computes the reference nor judges (prepare's
    ``check=False``), so a planted bug shows in the headline's status only."""
    wl, _ = _bugs()[0]
    backend = backend_or_skip("numpy")
    cell = Cell(wl.name, "s", 1000, "numpy", "cpu", "float64", "latency", params=wl.params_for(1000))
    judged_here = prepare(backend, wl, cell, QUICK, ReferenceCache())
    timed_only = prepare(backend, wl, cell, QUICK, ReferenceCache(), check=False)
    assert judged_here.replicate.status == "wrong"
    assert timed_only.replicate.status == "ok" and timed_only.run is not None
    assert timed_only.replicate.max_rel_error is None and timed_only.replicate.tolerance is None
    assert timed_only.replicate.output_bytes == judged_here.replicate.output_bytes
