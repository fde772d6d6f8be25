"""Users' workload files: written once, loaded from anywhere, run by the real command line.

Errors in a user's file (a syntax error, a missing name, no workload, a library that raises, a
result of the wrong shape) are reported per workload and per library with the user's own line, and
the rest of the run goes on.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from arraybench import load_results
from arraybench import Check, Work, workload
from arraybench.model import record as records
from arraybench.worker.prepare import ReferenceCache
from ..measuring import measure_cell
from arraybench.workloads.userfile import is_user_file
from arraybench.model.cell import Cell
from arraybench.model.replicate import TimerSettings
from arraybench.workloads.userfile import WorkloadFileError, import_workload_file, load_files
from arraybench.workloads import REGISTRY
from arraybench.workloads.inputs import make_inputs
from arraybench.workloads.inputs import bind

from ..conftest import FAST, backend_or_skip, run_here

QUICK = TimerSettings(min_samples=1, max_samples=1, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)


pytestmark = pytest.mark.usefixtures("registry_restored")  # conftest.py


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def line_of(path: Path, marker: str) -> int:
    """The 1-based number of the line holding ``marker``: where an error must point."""
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if marker in line:
            return i
    raise AssertionError(f"{marker!r} not in {path}")


def at(path: Path, marker: str) -> str:
    return f"{path}:{line_of(path, marker)}:"


# -- a user file, run for real ------------------------------------------------------------------

GOOD = '''
import numpy as np

import arraybench


@arraybench.workload(sizes={"tiny": 50, "bigger": 500},
                     work=lambda n, itemsize: (4 * n, 2 * n * itemsize))
def softplus(xp, x):
    """log(1 + exp(x)) element-wise"""
    return xp.log1p(xp.exp(x))


@arraybench.workload(sizes={"tiny": 40}, grad=True)
def tanh_loss(xp, w, x):
    """a loss whose gradient has no reference= (central differences)"""
    return xp.sum(xp.tanh(w * x) ** 2)
'''


@pytest.mark.slow
def test_a_user_file_from_a_temporary_folder_runs_on_every_library(tmp_path: Path):
    bench = write(tmp_path / "my_bench.py", GOOD)
    out = tmp_path / "out"
    result = run_here("run", "--workload-file", str(bench), "--backends", "numpy,torch,jax",
                      "--devices", "cpu", "-o", str(out), *FAST, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    res = load_results(out / "results.json")
    assert res.errors == []
    # Only the file's workloads, at their own sizes (no --sizes given), not the built-in suite.
    assert {(r.workload, r.size_label) for r in res.records} == {
        ("softplus", "tiny"), ("softplus", "bigger"), ("tanh_loss", "tiny")}
    for r in res.records:
        if backend_missing(r.backend):
            assert r.status == "skipped" and r.reason
            continue
        assert r.status == "ok", (r.key, r.reason)
        assert r.max_rel_error <= r.tolerance and r.median_s > 0
    soft = {r.backend: r for r in res.records if r.workload == "softplus" and r.size_label == "bigger"}
    assert soft["numpy"].flops == 4 * 500 and soft["numpy"].bytes == 2 * 500 * 8
    grads = {r.backend: r for r in res.records if r.workload == "tanh_loss"}
    assert "finite differences" in grads["numpy"].method
    for name, method in (("torch", "autodiff"), ("jax", "jax.grad")):
        if not backend_missing(name):
            assert method in grads[name].method
            assert any("central differences" in w for w in grads[name].warnings)


def backend_missing(name: str) -> bool:
    from arraybench import backends

    return backends.SPECS[name].preflight("cpu") is not None


def test_list_shows_a_files_workloads_with_their_definition(tmp_path: Path):
    bench = write(tmp_path / "my_bench.py", GOOD)
    result = run_here("list", "--workload-file", str(bench), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "softplus" in result.stdout and "tanh_loss" in result.stdout
    assert "matmul" in result.stdout


# -- errors in a user's file --------------------------------------------------------------------

MIXED = '''
import arraybench


@arraybench.workload(sizes={"small": 64})
def fine(xp, x):
    return xp.exp(x)


@arraybench.workload(sizes={"small": 64})
def mutates(xp, x):
    y = x * 1.0
    y[0] = 0.0  # MUTATES: JAX arrays are immutable
    return y


@arraybench.workload(sizes={"small": 64})
def bad_reshape(xp, x):
    return xp.reshape(x, (3, -1))  # RESHAPE: raises inside each library


@arraybench.workload(sizes={"small": 64})
def shape(xp, x):
    return xp.exp(x)


@shape.override("torch")
def _shape_torch(xp, x):  # SHAPE: one element short on torch only
    return xp.exp(x[:-1])


@arraybench.workload(sizes={"small": 64}, inputs=lambda n, rng: 1 / 0)  # INPUTS
def bad_inputs(xp, x):
    return x
'''


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory):
    """One real run over broken files, a mixed file and a built-in workload."""
    folder = tmp_path_factory.mktemp("user")
    files = {
        "syntax": write(folder / "syntax_error.py", '''
            import arraybench

            @arraybench.workload
            def broken(xp, x):
                return xp.sum(x +)  # SYNTAX
            '''),
        "missing": write(folder / "missing_function.py", '''
            import arraybench

            @arraybench.workload(inputs=make_inputs)  # MISSING
            def uses_missing(xp, x):
                return x
            '''),
        "empty": write(folder / "no_workload.py", '''
            def not_a_workload(xp, x):
                return x
            '''),
        "mixed": write(folder / "mixed.py", MIXED),
    }
    out = folder / "out"
    args = [a for f in files.values() for a in ("--workload-file", str(f))]
    result = run_here("run", *args, "--workloads", "fine,mutates,bad_reshape,shape,bad_inputs,sort",
                      "--sizes", "small", "--backends", "numpy,torch,jax", "--devices", "cpu",
                      "--no-plots", "-o", str(out), *FAST, cwd=folder)
    res = load_results(out / "results.json") if (out / "results.json").exists() else None
    return files, result, res


def _record(res, workload: str, backend: str):
    (rec,) = [r for r in res.records if r.workload == workload and r.backend == backend]
    return rec


def test_files_that_do_not_load_are_reported_with_their_line_and_the_rest_runs(broken_run):
    files, result, res = broken_run
    assert res is not None, result.stderr[-3000:]
    assert result.returncode == 1  # errors were reported
    assert "Traceback" not in result.stderr
    errors = {Path(e["source"]).name: e["error"] for e in res.errors}
    assert set(errors) == {"syntax_error.py", "missing_function.py", "no_workload.py"}
    assert "SyntaxError" in errors["syntax_error.py"]
    assert at(files["syntax"], "# SYNTAX") in errors["syntax_error.py"]
    assert "NameError" in errors["missing_function.py"] and "make_inputs" in errors["missing_function.py"]
    assert at(files["missing"], "# MISSING") in errors["missing_function.py"]
    assert str(files["empty"]) in errors["no_workload.py"] and "defines no workload" in errors["no_workload.py"]
    for message in errors.values():
        assert message in result.stderr.replace("; its workloads are not run", "")
    # The built-in workload and the loadable file's good workload ran.
    for backend in ("numpy", "torch", "jax"):
        if not backend_missing(backend):
            assert _record(res, "sort", backend).status == "ok"
            assert _record(res, "fine", backend).status == "ok"


def test_a_library_that_raises_fails_only_its_own_cell_with_the_users_line(broken_run):
    files, _, res = broken_run
    if backend_missing("jax"):
        pytest.skip("JAX is not installed")
    rec = _record(res, "mutates", "jax")
    assert rec.status == "failed"
    assert at(files["mixed"], "# MUTATES") in rec.reason
    assert _record(res, "mutates", "numpy").status == "ok"


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_an_error_raised_inside_the_library_points_at_the_users_call(broken_run, backend):
    files, _, res = broken_run
    if backend_missing(backend):
        pytest.skip(f"{backend} is not installed")
    rec = _record(res, "bad_reshape", backend)
    assert rec.status == "failed"
    # The exception is raised deep inside numpy/torch/jax; the line shown is the user's.
    assert at(files["mixed"], "# RESHAPE") in rec.reason
    assert "site-packages" not in rec.reason


def test_a_result_of_the_wrong_shape_is_wrong_and_names_the_function(broken_run):
    files, _, res = broken_run
    if backend_missing("torch"):
        pytest.skip("PyTorch is not installed")
    rec = _record(res, "shape", "torch")
    assert rec.status == "wrong"
    assert "(63,)" in rec.reason and "(64,)" in rec.reason
    assert at(files["mixed"], "# SHAPE") in rec.reason
    assert _record(res, "shape", "numpy").status == "ok"


def test_an_error_while_building_inputs_names_the_users_line(broken_run):
    files, _, res = broken_run
    rec = _record(res, "bad_inputs", "numpy")
    assert rec.status == "failed"
    assert "ZeroDivisionError" in rec.reason and "building inputs" in rec.reason
    assert at(files["mixed"], "# INPUTS") in rec.reason


def test_a_broken_file_costs_only_its_own_workloads(tmp_path: Path):
    good = write(tmp_path / "good.py", GOOD)
    bad = write(tmp_path / "bad.py", "import arraybench\n\nraise ImportError('no such helper')  # HERE\n")
    out = tmp_path / "out"
    result = run_here("run", "--workload-file", str(bad), "--workload-file", str(good), "--backends",
                      "numpy", "--sizes", "tiny", "-o", str(out), "--no-plots", *FAST, cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    assert at(bad, "# HERE") in result.stderr and "Traceback" not in result.stderr
    res = load_results(out / "results.json")
    assert [e["source"] for e in res.errors] == [str(bad)]
    assert {r.workload: r.status for r in res.records} == {"softplus": "ok", "tanh_loss": "ok"}


def test_when_every_file_is_broken_nothing_runs_and_the_error_is_one_line(tmp_path: Path):
    bench = write(tmp_path / "bad.py", "import arraybench\nx = undefined_name  # HERE\n")
    result = run_here("run", "--workload-file", str(bench), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("arraybench: workload file") or "NameError" in lines[-1]
    assert at(bench, "# HERE") in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "results.json").exists()


def test_asking_for_a_workload_of_a_broken_file_says_why_it_is_unknown(tmp_path: Path):
    bench = write(tmp_path / "bad.py", "import arraybench\nraise RuntimeError('boom')  # HERE\n")
    result = run_here("run", "--workload-file", str(bench), "--workloads", "mine",
                      "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert "unknown workload 'mine'" in last and at(bench, "# HERE") in last


def test_an_error_in_a_users_folder_named_arraybench_still_shows_their_line(tmp_path: Path):
    # Users keep benchmarks in a checkout called "arraybench"; their frames are still theirs.
    folder = tmp_path / "arraybench"
    folder.mkdir()
    bench = write(folder / "bench.py", '''
        import arraybench

        @arraybench.workload(sizes={"small": 8})
        def breaks(xp, x):
            return xp.reshape(x, (3, -1))  # HERE
        ''')
    import_workload_file(bench)
    backend = backend_or_skip("numpy")
    shard = measure_cell(backend, REGISTRY["breaks"], Cell("breaks", "small", 8, "numpy", "cpu", "float64",
                                                           "latency"), QUICK, ReferenceCache())
    assert shard.status == "failed"
    assert at(bench, "# HERE") in shard.reason


def test_library_frames_are_not_the_users():
    import numpy

    assert not is_user_file(numpy.__file__)
    assert not is_user_file(json.__file__)  # the standard library
    assert not is_user_file(records.__file__)  # arraybench itself
    assert not is_user_file("<frozen importlib._bootstrap>")
    assert is_user_file("/home/someone/arraybench/bench.py")


# -- loading ------------------------------------------------------------------------------------

def test_a_file_that_fails_leaves_the_registry_as_it_was(tmp_path: Path):
    bench = write(tmp_path / "half.py", '''
        import arraybench

        @arraybench.workload
        def first(xp, x):
            return x

        raise ValueError("after the first workload")  # HERE
        ''')
    before = set(REGISTRY)
    with pytest.raises(WorkloadFileError) as info:
        import_workload_file(bench)
    assert set(REGISTRY) == before
    assert at(bench, "# HERE") in str(info.value) and "ValueError" in str(info.value)


def test_a_name_already_taken_is_refused(tmp_path: Path):
    builtin = write(tmp_path / "clash.py", '''
        import arraybench

        @arraybench.workload
        def matmul(xp, a):
            return a
        ''')
    with pytest.raises(WorkloadFileError, match="built-in workload"):
        import_workload_file(builtin)
    one = write(tmp_path / "one.py", "import arraybench\n\n@arraybench.workload\ndef mine(xp, a):\n    return a\n")
    two = write(tmp_path / "two.py", "import arraybench\n\n@arraybench.workload\ndef mine(xp, a):\n    return a\n")
    loaded = load_files([str(one), str(two)])
    assert loaded.workloads == {str(one): ["mine"]}
    assert "already defined in" in loaded.errors[str(two)] and str(one) in loaded.errors[str(two)]
    assert REGISTRY["mine"].source == str(one)


def test_a_script_that_exits_at_import_is_reported(tmp_path: Path):
    bench = write(tmp_path / "script.py", "import sys\nsys.exit(3)\n")
    with pytest.raises(WorkloadFileError, match="__main__"):
        import_workload_file(bench)


def test_a_helper_module_next_to_the_file_imports(tmp_path: Path):
    write(tmp_path / "my_helpers_for_arraybench.py", "def double(x):\n    return 2.0 * x\n")
    bench = write(tmp_path / "uses_helper.py", '''
        import arraybench
        from my_helpers_for_arraybench import double

        @arraybench.workload
        def doubled(xp, x):
            return double(x)
        ''')
    assert import_workload_file(bench) == ["doubled"]


# -- the decorator --------------------------------------------------------------------------------

def test_a_bare_decorator_takes_the_defaults():
    @workload
    def softplus(xp, x, y):
        """docstring line"""
        return xp.log1p(xp.exp(x)) + y

    assert softplus.sizes == {"small": 1_000, "large": 1_000_000}
    x, y = make_inputs(softplus, 1_000, "float32").arrays
    assert x.shape == y.shape == (1_000,) and x.dtype == np.float32
    assert not np.array_equal(x, y)
    assert softplus.description == "docstring line"
    assert REGISTRY["softplus"] is softplus


def test_sizes_may_be_a_list_or_one_number():
    @workload(sizes=[100, 10_000])
    def listed(xp, x):
        return x

    @workload(sizes=256)
    def single(xp, x):
        return x

    assert listed.sizes == {"100": 100, "10000": 10_000}
    assert single.sizes == {"256": 256}
    with pytest.raises(ValueError, match="--sizes"):
        workload(name="k", sizes={"1k": 1_000})(lambda xp, x: x)
    with pytest.raises(ValueError, match="positive"):
        workload(name="zero", sizes={"small": 0})(lambda xp, x: x)
    with pytest.raises(ValueError, match="name"):
        workload(sizes=10)(lambda xp, x: x)


def test_inputs_may_be_a_dict_by_name_a_list_or_take_only_n():
    @workload(sizes={"small": 4}, inputs=lambda n, rng: {"y": np.ones(n), "x": np.arange(n)})
    def by_name(xp, x, y):
        return x + y

    x, y = make_inputs(by_name, 4, "float64").arrays
    np.testing.assert_array_equal(x, np.arange(4))  # ordered by parameter, ints kept as ints
    assert x.dtype == np.int64 and y.dtype == np.float64

    @workload(sizes={"small": 3}, inputs=lambda n: [np.full(n, 2.0), np.full(n, 3.0)])
    def listed(xp, a, b):
        return a * b

    a, b = make_inputs(listed, 3, "float32").arrays
    assert a.dtype == np.float32 and float(b[0]) == 3.0


def test_inputs_that_do_not_match_the_function_name_its_line():
    @workload(sizes={"small": 4}, inputs=lambda n, rng: (np.ones(n),) * 3)
    def two_args(xp, a, b):  # DEF
        return a + b

    with pytest.raises(TypeError) as info:
        make_inputs(two_args, 4, "float64").arrays
    message = str(info.value)
    assert "3 array(s)" in message and "takes 2" in message
    here = Path(__file__)
    assert at(here, "def two_args(xp, a, b):  # DEF") in message

    @workload(sizes={"small": 4}, inputs=lambda n, rng: {"a": np.ones(n), "z": np.ones(n)})
    def named(xp, a, b):
        return a + b

    with pytest.raises(TypeError, match="unknown: \\['z'\\]"):
        make_inputs(named, 4, "float64").arrays


def test_a_function_without_array_parameters_is_refused_at_definition():
    def no_arrays(xp):
        return 1.0

    with pytest.raises(TypeError, match="xp first"):
        workload(no_arrays)
    with pytest.raises(ValueError, match="name"):
        workload(name="has|bar")(lambda xp, x: x)
    with pytest.raises(TypeError, match="inputs must be a function"):
        workload(name="static", inputs=(np.ones(3),))(lambda xp, x: x)
    with pytest.raises(TypeError, match="Check"):
        workload(name="tolerant", check=1e-6)(lambda xp, x: x)


def test_override_with_the_native_namespace_and_a_work_tuple():
    @workload(sizes={"small": 8}, work=lambda n, itemsize: (n, 2 * n * itemsize))
    def plus_one(xp, x):
        return x + 1.0

    @plus_one.override("torch", namespace="native")
    def _plus_one_torch(torch, x):
        return torch.add(x, 1.0)

    assert plus_one.work_for(8, 4) == Work(flops=8, bytes=64)
    assert plus_one.namespace_for("torch") == "native" and plus_one.namespace_for("jax") == "array_api"
    with pytest.raises(ValueError, match="pytorch"):
        plus_one.override("pytorch")
    torch_backend = backend_or_skip("torch")
    shard = measure_cell(torch_backend, plus_one, Cell("plus_one", "small", 8, "torch", "cpu", "float64",
                                                       "latency"), QUICK, ReferenceCache())
    assert shard.status == "ok", shard.reason


# -- gradients ----------------------------------------------------------------------------------

def _loss(xp, w, x):
    return xp.sum(xp.tanh(w * x) ** 2) + 0.1 * xp.sum(xp.exp(w))


def _analytic(w, x):
    t = np.tanh(w * x)
    return 2.0 * t * (1.0 - t**2) * x + 0.1 * np.exp(w)


def test_the_central_difference_reference_bounds_its_own_error():
    from arraybench.numeric.finite_diff import central_difference_grad_with_error
    import array_api_compat

    xp = array_api_compat.array_namespace(np.empty(0))
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal(500), rng.standard_normal(500)
    g, err = central_difference_grad_with_error(lambda *a: _loss(xp, *a))(w.copy(), x)
    true = _analytic(w, x)
    assert np.all(np.abs(g - true) <= err)  # the estimate is a bound, component by component
    assert np.max(err) / np.max(np.abs(true)) < 1e-6  # and not a vacuous one


@pytest.mark.parametrize("backend_name", ["torch", "jax"])
def test_a_grad_workload_without_reference_is_judged_soundly_in_float64(backend_name):
    backend = backend_or_skip(backend_name)
    wl = workload(name="loss_default_ref", sizes={"small": 1_000}, grad=True)(_loss)
    cell = Cell(wl.name, "small", 1_000, backend_name, "cpu", "float64", "latency")
    shard = measure_cell(backend, wl, cell, QUICK, ReferenceCache())
    # Autodiff is exact to rounding; a finite-difference reference is ~1e-9 off. The verdict must
    # not blame the library for the reference's error.
    assert shard.status == "ok", shard.reason
    assert "autodiff" in shard.method or "jax.grad" in shard.method
    assert shard.tolerance > wl.check.tolerance("float64", 1_000)
    assert any("central differences" in w for w in shard.warnings)
    # ... and a gradient that is off by more than the reference's error is still caught.
    off = workload(name="loss_off", sizes={"small": 1_000}, grad=True)(_loss)

    @off.override(backend_name)
    def _scaled(xp, w, x):
        return _loss(xp, w, x) * (1.0 + 1e-6)

    shard = measure_cell(backend, off, Cell(off.name, "small", 1_000, backend_name, "cpu", "float64",
                                            "latency"), QUICK, ReferenceCache())
    assert shard.status == "wrong"


def test_grad_through_the_array_api_namespace_uses_autograd_with_a_fresh_leaf():
    backend = backend_or_skip("torch")
    wl = workload(name="api_grad", sizes={"small": 50}, grad=True,
                  reference=_analytic, check=Check.normwise(lambda n: n))(_loss)
    assert wl.namespace == "array_api"
    w, x = (backend.asarray(a) for a in make_inputs(wl, 50, "float64").arrays)
    bound = bind(wl, backend, "latency", (w, x))
    assert "autograd" in bound.method
    first = backend.to_numpy(bound.op(*bound.args)).copy()
    again = backend.to_numpy(bound.op(*bound.args))
    np.testing.assert_array_equal(first, again)  # nothing accumulates across calls
    assert w.grad is None
    np.testing.assert_allclose(first, _analytic(*make_inputs(wl, 50, "float64").arrays), rtol=1e-12)


def test_a_non_scalar_loss_is_named_as_such():
    backend = backend_or_skip("numpy")
    wl = workload(name="vector_loss", sizes={"small": 8}, grad=True)(lambda xp, w: w * 2.0)
    shard = measure_cell(backend, wl, Cell(wl.name, "small", 8, "numpy", "cpu", "float64", "latency"),
                         QUICK, ReferenceCache())
    assert shard.status == "failed"
    assert "scalar loss" in shard.reason and "(8,)" in shard.reason
