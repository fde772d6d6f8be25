"""Real users' workloads: code that updates its inputs in place, returns views, takes
settings, and fixes its own dtypes. Measured in this process on the real libraries, as
tests/test_workloads.py does."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import arraybench
from arraybench import Check, workload
from arraybench.worker.effects import look
from arraybench.worker.timer import FreshInputs, pool_capacity
from arraybench.worker.prepare import ReferenceCache
from ..measuring import measure_cell
from arraybench.model.options import RunOptions
from arraybench.plan import validate
from arraybench.plan import Cell, build_plan
from arraybench.model.record import Record
from arraybench.model.replicate import TimerSettings
from arraybench.worker.timer import Timer
from arraybench.workloads.inputs import make_inputs

from ..conftest import backend_or_skip, run_here

QUICK = TimerSettings(min_samples=3, max_samples=3, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)
MUTABLE = ["numpy", "torch"]


pytestmark = pytest.mark.usefixtures("registry_restored")  # conftest.py


def measure(backend, wl, dtype="float64", mode="latency", n=None, params=None, settings=QUICK):
    n = n or next(iter(wl.sizes.values()))
    cell = Cell(wl.name, str(n), n, backend.name, backend.device, dtype, mode,
                params=params if params is not None else wl.params_for(n))
    return measure_cell(backend, wl, cell, settings, ReferenceCache())


# -- the timer: restoring happens outside the timed span ------------------------------------------

class VirtualTime:
    """A clock that moves only when told: a call costs ``call_s`` (1 ms), restoring an input 1 s."""

    def __init__(self, call_s: float = 1e-3) -> None:
        self.now = 0.0
        self.call_s = call_s

    def clock(self) -> float:
        return self.now

    def call(self, x: np.ndarray) -> None:
        self.now += self.call_s
        x += 1.0

    def copy_into(self, dst: np.ndarray, src: np.ndarray) -> None:
        self.now += 1.0
        np.copyto(dst, src)


@pytest.mark.parametrize("capacity", [1, 3, 100])
def test_restoring_is_outside_the_timed_span_whatever_the_pool(capacity):
    vt = VirtualTime()
    x = np.zeros(4)
    fresh = FreshInputs((x,), [0], [np.zeros(4)], clone=np.copy, copy_into=vt.copy_into, capacity=capacity)
    timer = Timer(vt.call, (x,), clock=vt.clock, fresh=fresh)
    wall, _ = timer.timeit(10)
    # Ten calls of 1 ms; the restores (1 s each) and the extra spans' clock reads are not in it.
    assert wall == pytest.approx(10e-3, abs=1e-12)
    assert fresh.restored == 10


@pytest.mark.parametrize("capacity", [1, 4])
def test_every_timed_call_finds_its_input_as_built(capacity):
    seen: list[float] = []

    def increment(x: np.ndarray) -> None:
        seen.append(float(x[0]))
        x += 1.0

    x = np.zeros(8)
    fresh = FreshInputs((x,), [0], [np.zeros(8)], clone=np.copy, copy_into=np.copyto, capacity=capacity)
    timer = Timer(increment, (x,), fresh=fresh)
    timer.start(TimerSettings(min_samples=2, warmup_s=0.0, target_sample_s=1e-4)).sample()
    assert len(seen) > 10 and set(seen) == {0.0}  # without fresh inputs: 0, 1, 2, ...


@pytest.mark.parametrize("call_s, per_call", [(1e-3, True), (1e-6, False)])
def test_auto_restores_before_each_slow_call_and_pools_fast_ones(call_s, per_call):
    vt = VirtualTime(call_s)
    x = np.zeros(4)
    fresh = FreshInputs((x,), [0], [np.zeros(4)], clone=np.copy, copy_into=vt.copy_into, capacity=50,
                        restore="auto")
    timer = Timer(vt.call, (x,), clock=vt.clock, fresh=fresh)
    run = timer.start(TimerSettings(warmup_s=0.0, target_sample_s=1e-4))
    assert fresh.per_call is per_call
    run.sample()
    assert run.samples_s[-1] == pytest.approx(call_s, rel=1e-9)  # restoring (1 s) is never in it


def test_a_pool_is_bounded_by_its_memory_budget():
    assert pool_capacity("pool", slot_bytes=1_000, budget_bytes=10_000) == 10
    assert pool_capacity("pool", slot_bytes=10**9, budget_bytes=10_000) == 1  # then per call
    assert pool_capacity("per_call", slot_bytes=8, budget_bytes=10**9) == 1
    assert pool_capacity("auto", slot_bytes=1_000, budget_bytes=10_000) == 10
    with pytest.raises(ValueError, match="restore"):
        pool_capacity("sometimes", 8, 8)


# -- in-place workloads in the worker ---------------------------------------------------------------

def _refuses_changed_input(declare: bool):
    """x -> 2x + 1 in place; raises if a call ever sees an x that a previous call changed."""

    @workload(name="doubles_in_place", sizes={"small": 64}, inputs=lambda n, rng: np.ones(n),
              mutates=("x",) if declare else (), reference=lambda x: 2 * x + 1)
    def doubles_in_place(xp, x):
        if float(x[0]) != 1.0:
            raise RuntimeError("a call saw the previous call's output")
        x *= 2
        x += 1

    return doubles_in_place


@pytest.mark.parametrize("restore", ["pool", "per_call"])
@pytest.mark.parametrize("backend_name", MUTABLE)
def test_a_declared_input_is_fresh_for_every_call_and_the_result_is_what_it_changed(backend_name, restore):
    backend = backend_or_skip(backend_name)
    settings = TimerSettings(min_samples=5, max_samples=5, budget_s=0.0, warmup_s=0.01,
                             target_sample_s=1e-3, restore=restore)
    rep = measure(backend, _refuses_changed_input(declare=True), settings=settings)
    assert rep.status == "ok", rep.reason
    assert rep.max_rel_error == 0.0  # the result (x, changed in place) is 2x + 1 exactly
    assert rep.restored == ["x"] and len(rep.samples_s) == 5 and rep.number > 1
    assert any(w.startswith("fresh inputs: x restored") for w in rep.warnings)
    assert (rep.restore_overhead_s is not None) == (restore == "per_call")
    assert not any("mutates=" in w for w in rep.warnings)


@pytest.mark.parametrize("backend_name", MUTABLE)
def test_an_input_changed_silently_is_named_with_the_fix_and_restored(backend_name):
    backend = backend_or_skip(backend_name)
    rep = measure(backend, _refuses_changed_input(declare=False))
    assert rep.status == "ok", rep.reason  # restored from the second call on: no call raised
    assert rep.restored == ["x"]
    (note,) = [w for w in rep.warnings if "mutates=" in w]
    assert "changes its input 'x' in place" in note and "mutates=('x',)" in note


def test_the_first_result_is_checked_before_later_calls_change_it():
    """A gemm returning C, updated in place, was judged after the warm-up had updated it
    again (relative error 2.64); it is now judged as the first call left it."""
    backend = backend_or_skip("numpy")

    @workload(name="gemm_returns_c", sizes={"small": 32},
              inputs=lambda n, rng: tuple(rng.standard_normal((n, n)) for _ in range(3)),
              mutates=("C",), reference=lambda A, B, C: 1.5 * (A @ B) + 1.2 * C,
              check=Check.normwise(growth=lambda n: n))
    def gemm_returns_c(xp, A, B, C):
        C *= 1.2
        C += 1.5 * (A @ B)
        return C

    rep = measure(backend, gemm_returns_c, settings=TimerSettings(min_samples=3, budget_s=0.0, warmup_s=0.01))
    assert rep.status == "ok", rep.reason
    assert rep.max_rel_error < 1e-12
    assert not any("shares memory" in w for w in rep.warnings)  # C is declared: no news


@pytest.mark.parametrize("backend_name", MUTABLE)
def test_a_result_that_is_a_view_of_an_input_is_copied_and_said(backend_name):
    backend = backend_or_skip(backend_name)

    @workload(name="transpose_view", sizes={"small": 16},
              inputs=lambda n, rng: rng.standard_normal((n, 4)), reference=lambda x: x.T)
    def transpose_view(xp, x):
        return x.T

    rep = measure(backend, transpose_view)
    assert rep.status == "ok", rep.reason
    (note,) = [w for w in rep.warnings if "shares memory" in w]
    assert "input 'x'" in note and "copied before it was checked" in note


@pytest.mark.parametrize("backend_name", MUTABLE)
def test_the_first_result_is_a_host_copy_where_it_aliases_an_input(backend_name):
    backend = backend_or_skip(backend_name)

    @workload(name="returns_its_input", sizes={"small": 4})
    def returns_its_input(xp, x):
        return x

    x = backend.asarray(np.arange(4.0))
    seen = look(backend, returns_its_input, (x,), (np.arange(4.0),), returns_its_input.fn(None, x))
    x[0] = 100.0  # what a later call (or restoring a changed input) would do
    assert seen.result.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert seen.changed == () and any("shares memory with input 'x'" in n for n in seen.notes)


def test_a_view_that_a_later_call_would_change_is_judged_as_the_first_call_made_it():
    backend = backend_or_skip("numpy")

    @workload(name="scales_and_views", sizes={"small": 16}, inputs=lambda n, rng: np.ones(n),
              reference=lambda x: 3 * x[::2])
    def scales_and_views(xp, x):
        x *= 3  # undeclared: from the second call on it is restored, but the view is of x
        return x[::2]

    rep = measure(backend, scales_and_views)
    assert rep.status == "ok", rep.reason and rep.max_rel_error == 0.0
    assert any("changes its input 'x'" in w for w in rep.warnings)


def test_jax_arrays_cannot_change_so_nothing_is_restored():
    backend = backend_or_skip("jax")

    @workload(name="functional", sizes={"small": 8}, inputs=lambda n, rng: np.ones(n), mutates=("x",),
              reference=lambda x: 2 * x)
    def functional(xp, x):
        return 2 * x

    rep = measure(backend, functional)
    assert rep.status == "ok", rep.reason
    assert rep.restored == [] and not rep.warnings


@pytest.mark.parametrize("backend_name", ["numpy", "torch", "jax"])
def test_in_place_results_come_back_in_mutates_order(backend_name):
    """With mutates=("B", "A") the result is (B, A), as docs/workloads.md says, so a
    functional JAX override returning (B, A) is right; it was judged in parameter order (A, B)."""
    backend = backend_or_skip(backend_name)

    @workload(name="swaps_roles", sizes={"small": 16}, mutates=("B", "A"),
              inputs=lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n)))
    def swaps_roles(xp, A, B):
        B += 2 * A
        A *= 3

    @swaps_roles.override("jax")
    def _swaps_roles_jax(xp, A, B):
        return B + 2 * A, 3 * A

    assert swaps_roles.result_of(None, ["a", "b"]) == ("b", "a")
    rep = measure(backend, swaps_roles)
    assert rep.status == "ok", rep.reason
    assert rep.max_rel_error == 0.0


@pytest.mark.parametrize("backend_name", ["numpy", "torch"])
def test_returning_none_without_mutates_is_told_with_the_fix_never_wrong(backend_name):
    """``x += 1`` without mutates= made every library wrong with "shape (64,)
    differs from the reference's ()"; the cell now fails with what happened and the fix."""
    backend = backend_or_skip(backend_name)

    @workload(name="inc", sizes={"small": 64})
    def inc(xp, x):
        x += 1

    rep = measure(backend, inc)
    assert rep.status == "failed"
    assert "inc returned None and changed its input 'x' in place" in rep.reason
    assert "declare @workload(mutates=('x',))" in rep.reason and "\n" not in rep.reason
    assert "shape" not in rep.reason


def test_returning_none_and_changing_nothing_is_told_too():
    backend = backend_or_skip("jax")

    @workload(name="inc_jax", sizes={"small": 8})
    def inc_jax(xp, x):
        x += 1  # a JAX array never changes: this rebinds the local name

    rep = measure(backend, inc_jax)
    assert rep.status == "failed"
    assert "inc_jax returned None and changed none of its inputs" in rep.reason
    assert "JAX arrays never change in place" in rep.reason


def test_mutates_must_name_inputs():
    with pytest.raises(TypeError, match="'y'"):
        workload(name="bad_mutates", mutates=("y",))(lambda xp, x: x)


# -- settings --------------------------------------------------------------------------------------

def _stepper():
    @workload(name="stepper", sizes={"small": 32}, params=lambda n: {"mode": "double" if n < 100 else "half"},
              inputs=lambda n, rng: rng.standard_normal(n),
              reference=lambda x, *, steps, mode: x * (2.0 if mode == "double" else 0.5) ** steps,
              work=lambda n, itemsize, steps: (steps * n, 2 * n * itemsize))
    def stepper(xp, x, *, steps=3, mode):
        # range(steps) and a branch on a string: the settings must be Python values, never arrays
        # or traced arguments, on every library and under jax.jit and torch.compile.
        for _ in range(steps):
            x = x * 2.0 if mode == "double" else x * 0.5
        return x

    return stepper


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["latency", "compiled"])
@pytest.mark.parametrize("backend_name", ["numpy", "torch", "jax"])
def test_settings_reach_every_library_as_python_values(backend_name, mode):
    backend = backend_or_skip(backend_name)
    wl = _stepper()
    assert wl.params_for(32) == {"steps": 3, "mode": "double"}
    rep = measure(backend, wl, mode=mode, params={"steps": 4, "mode": "half"})
    if mode == "compiled" and backend_name == "numpy" and importlib.util.find_spec("numba") is None:
        assert rep.status == "skipped" and "numba" in rep.reason  # NumPy's compiler is Numba
        return
    assert rep.status == "ok", rep.reason
    assert rep.max_rel_error < 1e-15
    assert rep.flops == 4 * 32  # work(n, itemsize, steps) got the cell's setting


def test_settings_are_part_of_the_cell_and_the_record():
    wl = _stepper()
    (cell,) = build_plan(validate(RunOptions(workloads=["stepper"], backends=["numpy"], devices=["cpu"]), ["stepper"]),
                         {"stepper": wl})
    assert cell.params == {"steps": 3, "mode": "double"}
    assert cell.key == "stepper|small|numpy|cpu|float64|latency|steps=3,mode=double"
    rec = Record(**cell.to_dict())
    back = Record.from_dict(rec.to_dict())
    assert back.params == cell.params and back.key == cell.key and back.cell.key == cell.key
    assert rec.to_row()["params"] == "steps=3,mode=double"
    # A workload without settings keeps the key it always had; a record without params still loads.
    plain = Cell("matmul", "small", 100, "numpy", "cpu", "float64", "latency")
    assert plain.key == "matmul|small|numpy|cpu|float64|latency"
    old = Record(**plain.to_dict()).to_dict()
    del old["params"]
    assert Record.from_dict(old).params == {} and Cell.from_dict(plain.to_dict()).params == {}


def test_settings_that_are_not_python_scalars_are_refused_at_definition():
    with pytest.raises(TypeError, match="arrays go in inputs"):
        workload(name="array_setting", params={"w": np.ones(3)})(lambda xp, x, *, w: x)
    with pytest.raises(TypeError, match="takes no keyword 'tsteps'"):
        workload(name="unknown_setting", params={"tsteps": 3})(lambda xp, x: x)
    wl = workload(name="numpy_int", params={"k": np.int64(3)})(lambda xp, x, *, k: x)
    assert wl.params_for(10) == {"k": 3} and type(wl.params_for(10)["k"]) is int


def test_overrides_must_take_the_settings_and_a_failing_params_is_one_line():
    wl = workload(name="with_setting", params={"k": 2})(lambda xp, x, *, k: x * k)
    with pytest.raises(TypeError, match="takes no keyword 'k'"):
        wl.override("torch")(lambda torch, x: x)
    broken = workload(name="broken_params", sizes={"small": 4}, params=lambda n: {"k": 1 / 0})(
        lambda xp, x, *, k=1: x)
    with pytest.raises(arraybench.UsageError, match="params= failed at n = 4: ZeroDivisionError"):
        build_plan(validate(RunOptions(workloads=["broken_params"], backends=["numpy"], devices=["cpu"]),
                            ["broken_params"]), {"broken_params": broken})


def test_param_sets_a_setting_for_the_run_in_the_workloads_own_type():
    wl = _stepper()

    def cells(**params):
        opts = validate(RunOptions(workloads=["stepper"], backends=["numpy"], devices=["cpu"], params=params),
                        ["stepper"])
        return build_plan(opts, {"stepper": wl})

    # Text from the command line becomes the default's type: range(steps) gets the int 5.
    (cell,) = cells(steps="5", mode="half")
    assert cell.params == {"steps": 5, "mode": "half"} and type(cell.params["steps"]) is int
    assert cell.key.endswith("|steps=5,mode=half")
    with pytest.raises(arraybench.UsageError, match=r"--params steps=2\.5: setting steps is a whole number"):
        cells(steps="2.5")
    with pytest.raises(arraybench.UsageError, match="--params stepz: no selected workload has a setting of that "
                                                    "name; did you mean 'steps'\\? their settings: stepper: mode, steps"):
        cells(stepz="5")
    with pytest.raises(arraybench.UsageError, match="must be a Python bool, int, float, str or None"):
        cells(steps=[1, 2])


@pytest.mark.parametrize(("value", "default", "expected"), [
    ("50", 20, 50), (50.0, 20, 50), ("0.25", 1.0, 0.25), (2, 1.0, 2.0), ("off", True, False),
    ("Yes", False, True), ("ortho", "backward", "ortho"), ("x", None, "x"), (True, False, True),
])
def test_a_setting_given_as_text_or_another_number_takes_the_defaults_type(value, default, expected):
    from arraybench.workloads.params import coerce

    out = coerce("s", value, default)
    assert out == expected and type(out) is type(expected)


@pytest.mark.parametrize(("value", "default"), [
    ("abc", 20), (2.5, 20), (True, 20), ("nan", 1.0), ("maybe", True), (3, "ortho"),
])
def test_a_setting_of_the_wrong_type_is_refused_with_what_was_expected(value, default):
    from arraybench.workloads.params import coerce

    with pytest.raises(ValueError, match=f"setting s is .*its default is {default!r}"):
        coerce("s", value, default)


def test_param_on_the_command_line_reaches_the_workload_and_a_resume_keeps_it(tmp_path):
    from ..conftest import ROOT

    out = tmp_path / "run"
    common = ("--workload-file", str(ROOT / "examples" / "jacobi_2d.py"), "--backends", "numpy",
              "--devices", "cpu", "--sizes", "small", "--processes", "1", "--max-time", "0.05", "--no-store",
              "--no-plots", "-q")  # one short process: the setting and the resume are what is looked at
    done = run_here("run", *common, "--param", "tsteps=3", "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (record,) = arraybench.load_results(out).records
    assert record.status == "ok" and record.params == {"tsteps": 3}
    bad = run_here("run", *common, "--param", "tsteps=many", "-o", str(tmp_path / "bad"), cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "--params tsteps=many: setting tsteps is a whole number (its default is 20)" in bad.stderr
    again = run_here("run", "--resume", str(out), "--param", "tsteps=4", cwd=ROOT)
    assert again.returncode == 2 and "params" in again.stderr, again.stderr


def test_a_zero_d_input_stays_zero_d():
    @workload(name="scaled", sizes={"small": 8},
              inputs=lambda n, rng: (rng.standard_normal(n), np.float64(2.5), np.array(7)))
    def scaled(xp, x, s, k):
        return x * s + k

    x, s, k = make_inputs(scaled, 8, "float32").arrays
    assert x.shape == (8,) and s.shape == () and k.shape == ()
    assert s.dtype == np.float32 and k.dtype == np.int64 and float(s) == 2.5


# -- per-input dtypes ------------------------------------------------------------------------------

def test_a_fixed_input_keeps_its_dtype_and_the_rest_follow_the_run():
    @workload(name="mixed", sizes={"small": 8},
              inputs=lambda n, rng: (rng.standard_normal(n), arraybench.fixed(rng.standard_normal(n), "float32"),
                                     arraybench.fixed(rng.standard_normal(n) + 1j),
                                     rng.standard_normal(n) + 1j))
    def mixed(xp, x, w, z, c):
        return x

    built = make_inputs(mixed, 8, "float32")
    assert [str(a.dtype) for a in built.arrays] == ["float32", "float32", "complex128", "complex64"]
    assert built.fixed == (False, True, True, False)
    assert make_inputs(mixed, 8, "float64").arrays[1].dtype == np.float32


@pytest.mark.parametrize("backend_name", ["numpy", "torch", "jax"])
def test_a_result_that_follows_a_fixed_input_is_said_not_wrong(backend_name):
    backend = backend_or_skip(backend_name)

    @workload(name="weighted", sizes={"small": 16},
              inputs=lambda n, rng: (rng.standard_normal(n), arraybench.fixed(rng.uniform(1, 2, n), "float64")))
    def weighted(xp, x, w):
        return x * w  # float32 x float64 -> float64 on every library

    rep = measure(backend, weighted, dtype="float32")
    assert rep.status == "ok", rep.reason
    (note,) = [w for w in rep.warnings if w.startswith("result is float64")]
    assert "fixed for input 'w'" in note


def test_a_result_widened_by_the_workloads_own_code_is_said_not_wrong():
    backend = backend_or_skip("numpy")

    @workload(name="widens", sizes={"small": 16}, namespace="native")
    def widens(xp, x):
        return x + xp.zeros(x.shape[0])  # np.zeros is float64 whatever the run's dtype

    rep = measure(backend, widens, dtype="float32")
    assert rep.status == "ok", rep.reason
    assert any("the workload's own code computes in float64" in w for w in rep.warnings)


def test_a_narrower_result_nothing_in_the_workload_explains_is_still_wrong():
    backend = backend_or_skip("numpy")

    @workload(name="narrows", sizes={"small": 16}, namespace="native")
    def narrows(xp, x):
        return x.astype(xp.float32)

    rep = measure(backend, narrows, dtype="float64")
    assert rep.status == "wrong" and "result is float32, expected float64" in rep.reason
