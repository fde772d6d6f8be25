"""Gradients on equal terms: a workload gives libraries without autodiff its own
gradient (``@wl.gradient``); finite differences only where none is given; findings that set
autodiff against finite differences say so."""

from __future__ import annotations

import pytest

from arraybench import workload
from arraybench.model.cell import Cell
from arraybench.worker.prepare import ReferenceCache
from arraybench.model.replicate import TimerSettings

from ..conftest import backend_or_skip
from ..measuring import measure_cell

QUICK = TimerSettings(min_samples=3, max_samples=3, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)

pytestmark = pytest.mark.usefixtures("registry_restored")  # conftest.py


def _loss(right: bool = True, given: bool = True):
    """L(w) = sum((w * x)^2); NumPy gets dL/dw = 2 w x^2 (or a planted bug: w x^2)."""

    @workload(name="sq_loss", sizes={"small": 32}, grad=True,
              inputs=lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n)))
    def sq_loss(xp, w, x):
        return xp.sum((w * x) ** 2)

    if given:
        @sq_loss.gradient("numpy", "cupy", namespace="native")
        def _sq_loss_grad(np_, w, x):
            return (2.0 if right else 1.0) * w * x * x

    return sq_loss


def measure(backend_name, wl):
    backend = backend_or_skip(backend_name)
    cell = Cell(wl.name, "small", 32, backend.name, backend.device, "float64", "latency")
    return measure_cell(backend, wl, cell, QUICK, ReferenceCache())


def test_a_numpy_gradient_given_by_the_workload_is_timed_and_checked_as_analytic():
    rep = measure("numpy", _loss())
    assert rep.status == "ok", rep.reason
    assert rep.method == "analytic gradient" and rep.gradient == "analytic"
    assert rep.max_rel_error < 1e-8  # against central differences of the loss, the reference


def test_a_wrong_numpy_gradient_is_still_caught():
    rep = measure("numpy", _loss(right=False))
    assert rep.status == "wrong", rep.reason


def test_without_a_gradient_numpy_falls_back_to_finite_differences():
    rep = measure("numpy", _loss(given=False))
    assert rep.status == "ok", rep.reason
    assert rep.gradient == "finite_differences" and rep.method.startswith("finite differences")


def test_autodiff_libraries_keep_autodiff_unless_named():
    rep = measure("torch", _loss())
    assert rep.status == "ok", rep.reason
    assert rep.gradient == "autodiff" and rep.method.startswith("autodiff")


def test_an_override_that_returns_the_gradient_points_to_gradient():
    wl = _loss(given=False)

    @wl.override("numpy", namespace="native")
    def _grad_by_mistake(np_, w, x):
        return 2.0 * w * x * x

    rep = measure("numpy", wl)
    assert rep.status == "failed"
    assert "a gradient needs a scalar loss" in rep.reason and '.gradient("numpy")' in rep.reason


def test_gradient_is_for_grad_workloads_and_known_libraries():
    plain = workload(name="plain", sizes={"small": 4})(lambda xp, x: x)
    with pytest.raises(TypeError, match="gradient\\(\\) gives the gradient of a grad=True workload"):
        plain.gradient("numpy")
    with pytest.raises(ValueError, match="gradient\\(\\) needs backend names"):
        _loss(given=False).gradient("numpyy")


def test_a_finding_that_sets_autodiff_against_finite_differences_says_so():
    from arraybench.render.findings import winners
    from ..synthetic import record, spread

    torch_ = record("gradient", "torch", samples=spread(10e-6), gradient="autodiff")
    numpy_fd = record("gradient", "numpy", samples=spread(220e-6), gradient="finite_differences")
    (sentence,) = winners([torch_, numpy_fd])
    assert "PyTorch CPU (autodiff) is fastest" in sentence
    assert "22× faster than NumPy CPU (finite differences): autodiff against finite differences" in sentence
    assert '@gradient.gradient("numpy")' in sentence
    # With NumPy's own gradient there are no finite differences, but the two sides still ran
    # different code: the sentence says what each computed.
    numpy_own = record("gradient", "numpy", samples=spread(220e-6), gradient="analytic")
    (sentence,) = winners([torch_, numpy_own])
    assert "finite differences" not in sentence
    assert "PyTorch CPU (autodiff) is fastest" in sentence
    assert "faster than NumPy CPU (analytic gradient): the workload's own hand-written gradient" in sentence
    # Two libraries both by autodiff: nothing to say.
    jax_ = record("gradient", "jax", samples=spread(20e-6), gradient="autodiff")
    (sentence,) = winners([torch_, jax_])
    assert "autodiff" not in sentence and "hand-written" not in sentence


@workload(name="scaled_loss", sizes={"small": 16}, grad=True,
          inputs=lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n)))
def scaled_loss(xp, w, x, *, scale=1.0):
    return scale * xp.sum((w * x) ** 2)


@scaled_loss.gradient("numpy")
def _scaled_loss_grad(xp, w, x, *, scale=1.0):
    return 2.0 * scale * w * x * x


def test_a_gradient_defined_in_a_script_reaches_the_workers_with_its_settings(tmp_path):
    """Shipped by value to a real worker process, with a setting aimed at this workload."""
    import arraybench

    results = arraybench.run([scaled_loss], backends=["numpy"], devices=["cpu"],
                             params={"scaled_loss.scale": 3}, processes=1, max_time=0.05, min_samples=3)
    (record,) = results.records
    assert record.status == "ok", record.reason
    assert record.method == "analytic gradient" and record.params == {"scale": 3.0}


def test_a_crossover_between_autodiff_and_finite_differences_says_so():
    from arraybench.render.findings import findings
    from ..synthetic import record, spread

    records = []
    for n, numpy_s in ((10, 5e-6), (100, 50e-6), (1000, 5e-3)):
        records.append(record("gradient", "torch", samples=spread(40e-6), size_label=str(n), size=n,
                              gradient="autodiff"))
        records.append(record("gradient", "numpy", samples=spread(numpy_s), size_label=str(n), size=n,
                              gradient="finite_differences"))
    (sentence,) = [f for f in findings(records) if "beats" in f]
    assert "PyTorch CPU beats NumPy CPU (finite diff.) on gradient from n ≈" in sentence
    assert sentence.endswith('That is autodiff against finite differences, which take one pass of the loss '
                             'per parameter; give the libraries without autodiff a gradient of their own '
                             '(@gradient.gradient("numpy")) to compare them on equal terms.')
