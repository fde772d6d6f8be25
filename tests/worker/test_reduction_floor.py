"""A reduction's tolerance allows another summation order: up to √L ulps for L terms per output,
which an exact or pairwise reference cannot show, and far below what any bug is off by."""

from __future__ import annotations

import numpy as np
import pytest

from arraybench import Check, workload
from arraybench.model.cell import Cell
from arraybench.model.replicate import TimerSettings
from arraybench.worker.prepare import ReferenceCache, prepare
from arraybench.workloads.check import Noise

from ..conftest import backend_or_skip

QUICK = TimerSettings(min_samples=1, max_samples=1, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)
N = 1_000_000

pytestmark = pytest.mark.usefixtures("registry_restored")  # conftest.py


def judged(backend_name, wl):
    backend = backend_or_skip(backend_name)
    cell = Cell(wl.name, str(N), N, backend.name, "cpu", "float64", "latency", params=wl.params_for(N))
    return prepare(backend, wl, cell, QUICK, ReferenceCache()).replicate


def test_the_floor_is_the_root_of_the_terms_per_output():
    quiet = Noise(0.0, 0.0, elements=N)
    assert Check.derived().settle(quiet, outputs=1).ulps == pytest.approx(1000.0)  # √10⁶
    assert Check.derived().settle(quiet, outputs=1000).ulps == pytest.approx(2 * np.log2(N))  # √1000 < 40
    assert Check.derived().settle(quiet).ulps == pytest.approx(2 * np.log2(N))  # outputs unknown


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_variance_of_a_million_values_is_ok_on_every_library(backend):
    """PyTorch's float64 var at 10⁶ is ~80 ulp off the exact answer (NumPy's pairwise sum: 0.5):
    the 40-ulp floor of 2 log2 N called it wrong."""
    @workload(sizes={"s": N}, inputs=lambda n, rng: rng.standard_normal(n))
    def million_var(xp, x):
        return xp.var(x)

    rep = judged(backend, million_var)
    assert rep.status == "ok", rep.reason


def test_a_float32_step_in_that_variance_stays_wrong():
    @workload(sizes={"s": N}, inputs=lambda n, rng: rng.standard_normal(n), reference=lambda x: np.var(x))
    def million_var_f32(xp, x):
        return xp.var(xp.astype(xp.astype(x, xp.float32), x.dtype))

    rep = judged("numpy", million_var_f32)
    assert rep.status == "wrong" and rep.max_rel_error > 100 * rep.tolerance, rep.reason
