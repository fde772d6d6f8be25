"""Inputs a workload fixed narrower than the run (float32 in a float64 run) are judged by that
precision's rounding over the operation's own length, measured by NumPy on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

import arraybench
from arraybench import workload
from arraybench.model.cell import Cell
from arraybench.model.replicate import TimerSettings
from arraybench.worker.prepare import ReferenceCache, prepare

from ..conftest import backend_or_skip

QUICK = TimerSettings(min_samples=1, max_samples=1, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)
EPS32 = float(np.finfo(np.float32).eps)

pytestmark = pytest.mark.usefixtures("registry_restored")  # conftest.py


def judged(backend_name, wl, n):
    backend = backend_or_skip(backend_name)
    cell = Cell(wl.name, str(n), n, backend.name, "cpu", "float64", "latency", params=wl.params_for(n))
    return prepare(backend, wl, cell, QUICK, ReferenceCache()).replicate


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_numpy_passes_its_own_float32_scan_of_a_fixed_float32_input(backend):
    """A sequential float32 cumsum of 300,000 positive values errs by ~80 float32 ulp, far above the
    2 log2(N) floor (36 ulp) that called NumPy itself wrong: NumPy's own float32 run sets the bound."""
    n = 300_000

    @workload(sizes={"s": n}, inputs=lambda n, rng: arraybench.fixed(rng.uniform(0.0, 1.0, n), "float32"))
    def fixed_scan(xp, x):
        return xp.cumulative_sum(x)

    rep = judged(backend, fixed_scan, n)
    assert rep.status == "ok", rep.reason
    if backend == "numpy":
        assert rep.max_rel_error > 2 * np.log2(n) * EPS32  # the old floor, which NumPy exceeds
    assert rep.tolerance < 1e-3  # a float32 bound, not a blank cheque
    assert any("by NumPy on the inputs as given" in w for w in rep.warnings) or rep.tolerance > 36 * EPS32


def test_a_wrong_result_beside_a_fixed_float32_input_stays_wrong():
    """The wider float32 bound hides no bug: an off-by-one scan is still far outside it."""
    n = 300_000

    @workload(sizes={"s": n}, inputs=lambda n, rng: arraybench.fixed(rng.uniform(0.0, 1.0, n), "float32"),
              reference=lambda x: np.cumsum(x))
    def shifted_scan(xp, x):
        return xp.concat([xp.zeros(1, dtype=x.dtype), xp.cumulative_sum(x)[:-1]])

    rep = judged("numpy", shifted_scan, n)
    assert rep.status == "wrong", rep.reason


def test_a_float32_cast_written_into_the_function_is_wrong_against_a_float64_reference():
    """The cast is in the code every library runs (NumPy's own run of it is float32 too), but the
    workload's reference= gives float64 on these inputs: the float32 result is the code's cast,
    not the fixed ``w`` followed."""
    n = 10_000

    def inputs(n, rng):
        return arraybench.fixed(rng.uniform(0.5, 1.5, n), "float32"), rng.standard_normal(n)

    @workload(sizes={"s": n}, inputs=inputs, reference=lambda w, x: np.cumsum(w * x))
    def mixed_cast(xp, w, x):
        return xp.cumulative_sum(w * xp.astype(x, xp.float32))

    @workload(sizes={"s": n}, inputs=inputs, reference=lambda w, x: np.cumsum(w * x))
    def mixed_right(xp, w, x):
        return xp.cumulative_sum(w * x)

    for backend in ("numpy", "torch"):
        rep = judged(backend, mixed_cast, n)
        assert rep.status == "wrong" and "result is float32, expected float64" in rep.reason
        assert judged(backend, mixed_right, n).status == "ok"


def test_a_long_float32_sum_of_fixed_inputs_is_held_to_the_textbook_summation_bound():
    """(L - 1) u for L terms: a library whose float32 sum of 10^6 squares is 4.4e-4 off (MLX's)
    is within it; a wrong axis is not."""
    from arraybench.worker.accuracy import judge
    from arraybench.workloads.check import Check, Noise

    ref = np.array(1.0)
    quiet = Noise(0.0, 0.0, elements=1_000_000)
    lossy = np.array(1.0 + 4.4e-4, dtype=np.float32)
    verdict = judge(lossy, ref, Check.derived(), "float64", 1_000_000, fixed={"x": "float32"}, noise=quiet)
    assert verdict.ok and verdict.tolerance == pytest.approx(999_999 * EPS32 / 2)
    assert not judge(np.array(1.2, dtype=np.float32), ref, Check.derived(), "float64", 1_000_000,
                     fixed={"x": "float32"}, noise=quiet).ok
    # The same result in the run's own float64 gets no such allowance.
    assert not judge(np.array(1.0 + 4.4e-4), ref, Check.derived(), "float64", 1_000_000, noise=quiet).ok
