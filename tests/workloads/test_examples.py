"""The examples in examples/ on every installed CPU library, in float64 and float32, checked
against their NumPy float64 references (in this process, as tests/test_workloads.py does), and
once through the real command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from arraybench import load_results
from ..measuring import measure_cell, shared_references
from arraybench.model.cell import Cell
from arraybench.model.replicate import TimerSettings
from arraybench.workloads.userfile import import_workload_file
from arraybench.workloads import REGISTRY

from ..conftest import backend_or_skip, FAST, ROOT, run_here

QUICK = TimerSettings(min_samples=1, max_samples=1, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)
EXAMPLES = ROOT / "examples"
FILES = {
    "softmax_cross_entropy.py": ["softmax_cross_entropy"],
    "kmeans.py": ["kmeans_step"],
    "mlp.py": ["mlp_forward", "mlp_forward_backward"],
    "jacobi_2d.py": ["jacobi_2d"],
    "gemm_inplace.py": ["gemm_inplace"],
}
#: Written the way NumPy users write them: inputs updated in place, settings.
IN_PLACE = ["jacobi_2d", "gemm_inplace"]
WORKLOADS = [w for names in FILES.values() for w in names]


@pytest.fixture(scope="module", autouse=True)
def examples_loaded():
    before = dict(REGISTRY)
    for name, defined in FILES.items():
        assert import_workload_file(EXAMPLES / name) == defined
    yield
    REGISTRY.clear()
    REGISTRY.update(before)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("backend_name", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("workload", WORKLOADS)
def test_example_matches_its_reference(workload, backend_name, dtype):
    backend = backend_or_skip(backend_name)
    wl = REGISTRY[workload]
    n = wl.sizes["small"]
    shard = measure_cell(backend, wl, Cell(workload, "small", n, backend_name, "cpu", dtype, "latency"),
                         QUICK, shared_references())
    assert shard.status == "ok", shard.reason
    assert shard.max_rel_error <= shard.tolerance
    assert shard.samples_s and shard.flops > 0 and shard.bytes > 0
    if wl.grad:
        expected = "finite differences" if backend_name == "numpy" else "autodiff"
        if backend_name == "jax":
            expected = "jax.grad"
        assert expected in shard.method


# float64 only: each dtype is another torch.compile of the same code (about 7 s on two cores),
# and float32's tolerance is the eager test's above. Inductor compiles C++ for seconds: not in
# the quick lane.
@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float64"])
@pytest.mark.parametrize("backend_name", ["torch", "jax"])
@pytest.mark.parametrize("workload", IN_PLACE)
def test_in_place_examples_compile_and_match_their_reference(workload, backend_name, dtype):
    backend = backend_or_skip(backend_name)
    wl = REGISTRY[workload]
    n = wl.sizes["small"]
    # One Jacobi sweep, not twenty: torch.compile unrolls the loop, and each step is more code to
    # compile (20 cost ~30 s, 2 about 9.5 CPU s, 1 about 7) to show nothing that one does not: the
    # setting still reaches the compiled code, and both arrays are updated in place.
    params = {**wl.params_for(n), **({"tsteps": 1} if workload == "jacobi_2d" else {})}
    cell = Cell(workload, "small", n, backend_name, "cpu", dtype, "compiled", params=params)
    shard = measure_cell(backend, wl, cell, QUICK, shared_references())
    assert shard.status == "ok", shard.reason
    assert shard.max_rel_error <= shard.tolerance
    assert shard.method == ("torch.compile" if backend_name == "torch" else "jax.jit")
    # PyTorch updates the inputs in place, restored before every call; JAX arrays cannot change.
    assert shard.restored == (list(wl.mutates) if backend_name == "torch" else [])


def test_in_place_examples_declare_what_they_change_and_take_settings():
    for workload in IN_PLACE:
        wl = REGISTRY[workload]
        n = wl.sizes["small"]
        shard = measure_cell(backend_or_skip("numpy"), wl,
                             Cell(workload, "small", n, "numpy", "cpu", "float64", "latency",
                                  params=wl.params_for(n)), QUICK, shared_references())
        assert shard.restored == list(wl.mutates)
        assert not any("mutates=" in w or "shares memory" in w for w in shard.warnings), shard.warnings
    assert REGISTRY["jacobi_2d"].params_for(250) == {"tsteps": 20}
    assert REGISTRY["gemm_inplace"].params_for(256) == {"alpha": 1.5, "beta": 1.2}


def test_every_example_has_sizes_a_reference_and_a_work_model():
    for workload in WORKLOADS:
        wl = REGISTRY[workload]
        assert set(wl.sizes) == {"small", "large"} and wl.sizes["small"] < wl.sizes["large"]
        assert wl.reference is not None, workload
        work = wl.work_for(wl.sizes["large"], 8)
        assert work is not None and work.flops > 0 and work.bytes > 0
        assert wl.namespace == "array_api"
        assert wl.source == str(EXAMPLES / next(f for f, names in FILES.items() if workload in names))


@pytest.mark.slow
def test_the_examples_run_from_the_command_line(tmp_path: Path):
    out = tmp_path / "out"
    args = [a for f in FILES for a in ("--workload-file", str(EXAMPLES / f))]
    result = run_here("run", *args, "--backends", "numpy", "--sizes", "small", "--no-plots",
                      "-o", str(out), *FAST, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    res = load_results(out / "results.json")
    assert sorted(r.workload for r in res.records) == sorted(WORKLOADS)
    for r in res.records:
        assert r.status == "ok", (r.key, r.reason)
        assert r.max_rel_error <= r.tolerance
    jacobi = next(r for r in res.records if r.workload == "jacobi_2d")
    assert jacobi.params == {"tsteps": 20} and jacobi.key.endswith("|tsteps=20")
