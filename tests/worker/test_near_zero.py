"""Elements near zero: an explicit element-wise check judges those below 1e-3 max|ref| against that
floor; a derived check lowers it to √eps, so an inaccurate formula there is caught."""

from __future__ import annotations

import numpy as np
import pytest

from arraybench import Check, workload
from arraybench.model.cell import Cell
from arraybench.model.replicate import TimerSettings
from arraybench.worker.prepare import ReferenceCache, prepare
from arraybench.workloads.check import DERIVED_NEAR_ZERO, ELEMENTWISE_NEAR_ZERO

from ..conftest import backend_or_skip

QUICK = TimerSettings(min_samples=1, max_samples=1, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)
N = 10_000

pytestmark = pytest.mark.usefixtures("registry_restored")  # conftest.py


def judged(backend_name, wl, dtype):
    backend = backend_or_skip(backend_name)
    cell = Cell(wl.name, str(N), N, backend.name, "cpu", dtype, "latency", params=wl.params_for(N))
    return prepare(backend, wl, cell, QUICK, ReferenceCache()).replicate


def _small_and_large(n, rng):
    return np.exp(rng.uniform(-40.0, 3.0, n))  # e from 4e-18 to 20


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_log_of_one_plus_e_for_log1p_is_wrong_by_far(dtype):
    """log(1 + e) rounds e < 1e-16 away entirely: 1.0 off there, which the 1e-3 floor hid
    (3.6e-14 against a tolerance of 3.3e-14 in float64)."""
    @workload(sizes={"s": N}, inputs=_small_and_large, reference=lambda e: np.log1p(e))
    def softplus_of_log(xp, e):
        return xp.log(1.0 + e)

    rep = judged("numpy", softplus_of_log, dtype)
    assert rep.status == "wrong", rep.reason
    assert rep.max_rel_error > 1e3 * rep.tolerance


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_log1p_itself_is_ok(backend, dtype):
    @workload(sizes={"s": N}, inputs=_small_and_large)
    def softplus_of_log1p(xp, e):
        return xp.log1p(e)

    rep = judged(backend, softplus_of_log1p, dtype)
    assert rep.status == "ok", rep.reason


def test_the_explicit_elementwise_check_keeps_its_documented_floor():
    ref = np.array([1.0, 1e-6])
    out = np.array([1.0, 1e-6 + 1e-12])  # 1e-6 relative to the element, 1e-9 of max|ref|
    assert Check.elementwise().error(out, ref) == pytest.approx(1e-12 / ELEMENTWISE_NEAR_ZERO)
    assert Check("elementwise", near_zero=DERIVED_NEAR_ZERO).error(out, ref) == pytest.approx(1e-6)
