"""Verdicts on code people write that the checks once misjudged, from a workload file of the
tests' own, imported as a user's file is and judged in this process by the worker's own code:
NumPy reached through ``.numpy()``, results with no single answer (ranks of ties, a library's
own random numbers), a bug in a gradient override, and a reference that is NumPy's plain float64."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from arraybench.model.cell import Cell
from arraybench.model.replicate import TimerSettings
from arraybench.worker import accuracy
from arraybench.worker.prepare import ReferenceCache, prepare
from arraybench.workloads.check import Check
from arraybench.workloads import REGISTRY
from arraybench.workloads.userfile import import_workload_file

from ..conftest import backend_or_skip

QUICK = TimerSettings(min_samples=1, max_samples=1, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)

FILE = '''
import numpy as np
import arraybench


@arraybench.workload(sizes={"s": 64}, inputs=lambda n, rng: rng.standard_normal((n, n)))
def normalized(xp, A):
    return A / xp.linalg.matrix_norm(A)


@normalized.override("torch", namespace="native")
def _normalized_torch(torch, A):
    return A / float(np.linalg.norm(A.numpy()))  # NUMPY-TORCH


@normalized.override("jax", namespace="native")
def _normalized_jax(jnp, A):
    return A / float(np.linalg.norm(np.asarray(A)))  # NUMPY-JAX


@arraybench.workload(sizes={"s": 2000}, inputs=lambda n, rng: rng.integers(0, 20, n).astype(float))
def tie_ranks(xp, s):
    return xp.argsort(xp.argsort(s, stable=False), stable=False)


@arraybench.workload(sizes={"s": 2000}, inputs=lambda n, rng: rng.integers(0, 20, n).astype(float),
                     reference=lambda s: np.argsort(np.argsort(s, kind="stable"))[::-1].copy())
def tie_ranks_shuffled(xp, s):
    return xp.argsort(xp.argsort(s, stable=True), stable=True)


@arraybench.workload(sizes={"s": 10000}, inputs=lambda n, rng: rng.standard_normal(n))
def dropout(xp, x):
    keep = np.random.default_rng(0).uniform(size=x.shape[0]) > 0.5
    return x * xp.asarray(keep) / 0.5


@dropout.override("torch", namespace="native")
def _dropout_torch(torch, x):
    torch.manual_seed(0)  # DRAW
    return x * (torch.rand(x.shape[0], dtype=x.dtype) > 0.5) / 0.5


@arraybench.workload(sizes={"s": 1000}, inputs=lambda n, rng: rng.standard_normal(n),
                     reference=lambda x: x)
def slightly_off(xp, x):
    return x * (1 + 1e-9)


@arraybench.workload(sizes={"s": 32}, grad=True,
                     inputs=lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n)))
def p_mlp_grad(xp, w, x):
    return xp.sum(xp.tanh(w * x) ** 2)


@p_mlp_grad.gradient("numpy", namespace="native")
def _p_mlp_grad_numpy(np_, w, x):  # OVERRIDE
    t = np_.tanh(w * x)
    return 2.0 * t * (1 - t ** 2)  # the planted bug: the factor x is missing


@arraybench.workload(sizes={"s": 1000},
                     inputs=lambda n, rng: np.concatenate([rng.uniform(-5.0, 100.0, n - n // 5),
                                                           rng.uniform(-66.0, -48.0, n // 5)]),
                     reference=lambda x: np.log1p(np.exp(x)))
def softplus_loss(xp, x):
    return xp.log(1.0 + xp.exp(x))


@arraybench.workload(sizes={"s": 1000},
                     inputs=lambda n, rng: np.concatenate([rng.uniform(-5.0, 100.0, n - n // 5),
                                                           rng.uniform(-66.0, -48.0, n // 5)]))
def softplus_loss_log1p(xp, x):
    return xp.log1p(xp.exp(x))


@arraybench.workload(sizes={"s": 1000}, inputs=lambda n, rng: rng.uniform(-40.0, -20.0, n),
                     reference=lambda x: np.log1p(np.exp(x)))
def softplus_small(xp, x):
    return xp.log(1.0 + xp.exp(x))


@arraybench.workload(sizes={"s": 200_000 * 32}, inputs=lambda n, rng: rng.standard_normal((n // 32, 32)))
def column_std(xp, x):
    return xp.std(x, axis=0, correction=1)
'''


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("verdicts") / "verdict_shapes_bench.py"
    path.write_text(FILE)
    before = dict(REGISTRY)
    names = import_workload_file(path)
    found = {n: REGISTRY[n] for n in names}
    REGISTRY.clear()
    REGISTRY.update(before)
    return path, found


def line_of(path: Path, marker: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if marker in text)


def judged(bench, name: str, backend_name: str):
    path, found = bench
    wl = found[name]
    backend = backend_or_skip(backend_name)
    n = wl.sizes["s"]
    cell = Cell(wl.name, "s", n, backend.name, "cpu", "float64", "latency", params=wl.params_for(n))
    return prepare(backend, wl, cell, QUICK, ReferenceCache()).replicate


@pytest.mark.parametrize("backend, marker, start", [
    ("torch", "NUMPY-TORCH", "np.linalg.norm computed on a NumPy array in PyTorch's cell"),
    ("jax", "NUMPY-JAX", "np.asarray took JAX's array to the host as a NumPy array")])
def test_numpy_reached_through_dot_numpy_or_asarray_is_not_ok(bench, backend, marker, start):
    rep = judged(bench, "normalized", backend)
    assert rep.status == "failed", rep.reason
    assert rep.reason.startswith(start), rep.reason
    assert f"verdict_shapes_bench.py:{line_of(bench[0], marker)}:" in rep.reason
    assert judged(bench, "normalized", "numpy").status == "ok"


def test_ranks_from_an_unstable_sort_of_ties_are_right_and_say_so(bench):
    for backend in ("numpy", "torch", "jax"):
        rep = judged(bench, "tie_ranks", backend)
        assert rep.status == "ok", (backend, rep.reason)
    # Ranks that sort the input another way are still wrong, and get no tolerance.
    rep = judged(bench, "tie_ranks_shuffled", "numpy")
    assert rep.status == "wrong"
    assert "check=Check" not in rep.reason


def test_a_permutation_of_the_references_values_is_named_without_a_tolerance(bench):
    ref = np.linspace(1.0, 2.0, 100)
    out = ref[::-1].copy()  # the same values, another order: ties broken otherwise, say
    verdict = accuracy.judge(out, ref, Check.elementwise(), "float64", 100)
    assert not verdict.ok
    assert "the reference's values in another order" in verdict.reason
    assert "rtol" not in verdict.reason and "\n" not in verdict.reason


def test_a_librarys_own_random_numbers_are_said_with_what_to_do(bench):
    path, _ = bench
    rep = judged(bench, "dropout", "torch")
    assert rep.status == "wrong"
    assert "no single answer: the workload draws random numbers itself" in rep.reason
    assert f"verdict_shapes_bench.py:{line_of(path, '# DRAW')}:" in rep.reason
    assert "draw them in inputs=" in rep.reason and "check=Check" not in rep.reason
    assert judged(bench, "dropout", "numpy").status == "ok"  # the reference's own stream


def test_no_tolerance_is_suggested_that_would_accept_anything(bench):
    ref = np.random.default_rng(1).standard_normal(100)
    verdict = accuracy.judge(ref * 7e7, ref, Check.elementwise(), "float64", 100)
    assert "check=Check" not in verdict.reason and "does not match the reference" in verdict.reason
    rep = judged(bench, "slightly_off", "numpy")  # a small error still gets its suggestion
    assert rep.status == "wrong" and "check=Check.elementwise(rtol=" in rep.reason


def test_a_bug_in_a_gradient_override_is_blamed_on_the_overrides_line(bench):
    path, _ = bench
    rep = judged(bench, "p_mlp_grad", "numpy")
    assert rep.status == "wrong", rep.reason
    assert rep.gradient == "analytic"
    assert f"[returned by {path}:{line_of(path, '# OVERRIDE')}:" in rep.reason, rep.reason


def test_log_one_plus_e_is_caught_beside_elements_near_100(bench):
    """A per-element loss: a fifth of the elements 1e-21...1e-29, the rest up to 100. Measured
    against max|ref|, 0 for 1e-21 is far below any tolerance; the reference pins those elements
    down to their own size, and they are judged so."""
    for backend in ("numpy", "torch"):
        assert judged(bench, "softplus_small", backend).status == "wrong"  # all elements small
        rep = judged(bench, "softplus_loss", backend)
        assert rep.status == "wrong", (backend, rep.reason)
        said = r"200 of 200 elements below 2\^-26 of max\|ref\| are off by up to 1 "
        assert re.match(said, rep.reason), rep.reason
    for backend in ("numpy", "torch", "jax"):
        rep = judged(bench, "softplus_loss_log1p", backend)
        assert rep.status == "ok", (backend, rep.reason)


def test_errors_against_numpys_plain_float64_reference_say_so(bench):
    """200,000 x 32 inputs: above the long-double limit, NumPy's float64 is the reference."""
    for backend in ("numpy", "jax"):
        rep = judged(bench, "column_std", backend)
        assert rep.status == "ok", rep.reason
        notes = " ".join(rep.warnings)
        assert "against NumPy's plain float64 reference" in notes, (backend, rep.warnings)
        moved = float(re.search(r"which itself moves by ([\d.e+-]+)", notes).group(1))
        assert rep.max_rel_error <= 4 * moved

