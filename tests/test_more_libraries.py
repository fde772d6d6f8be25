"""MLX, Numba as NumPy's compiled mode, and Apple GPUs.

MLX (its CPU build) and Numba run for real where installed (the test extra installs them); the
Apple GPU paths (PyTorch's mps, jax-metal, MLX's Metal) cannot run off a Mac, so they are tested
with fakes at the backend seam: the library's own device query and its sync and event calls.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

import arraybench
from arraybench import backends
from arraybench.workloads import REGISTRY
from arraybench.workloads.inputs import bind

HAS_NUMBA = importlib.util.find_spec("numba") is not None
HAS_MLX = importlib.util.find_spec("mlx") is not None
needs_numba = pytest.mark.skipif(not HAS_NUMBA, reason="Numba is not installed (pip install 'arraybench[numba]')")
needs_mlx = pytest.mark.skipif(not HAS_MLX, reason="MLX is not installed (pip install 'arraybench[mlx]')")


@pytest.fixture(scope="module")
def run():
    """One real run: NumPy (eager and Numba) and MLX (eager and mx.compile) in worker processes,
    in float32, the dtype every one of them computes fully (MLX's float64 sin is float32-accurate)."""
    if not (HAS_NUMBA and HAS_MLX):
        pytest.skip("needs both Numba and MLX installed (pip install 'arraybench[numba,mlx]')")
    return arraybench.run(["elementwise", "fft", "gradient", "sort"], backends=["numpy", "mlx"],
                          devices=["cpu"], modes=["latency", "compiled"], sizes=["small"],
                          dtype="float32", processes=1, max_time=0.02, min_samples=3, store=False,
                          plots=False, progress=False)


def _record(results, workload: str, backend: str, mode: str):
    [rec] = [r for r in results.records
             if (r.workload, r.backend, r.mode) == (workload, backend, mode)]
    return rec


@pytest.mark.slow
def test_numpy_compiled_mode_is_numba_with_its_compile_time_apart(run):
    for workload in ("elementwise", "sort"):
        rec = _record(run, workload, "numpy", "compiled")
        assert rec.status == "ok", rec.reason
        assert rec.method == "numba.njit"
        # The compile is in the first call, not in the samples (as for jax.jit).
        assert rec.compile_s and rec.compile_s > 10 * rec.median_s


@pytest.mark.slow
def test_numba_cannot_compile_numpy_fft_and_says_so_in_its_own_words(run):
    rec = _record(run, "fft", "numpy", "compiled")
    assert rec.status == "skipped"
    assert rec.reason.startswith("not applicable: numba.njit cannot compile this workload (Numba: ")
    assert "fft" in rec.reason and "module numpy.fft" in rec.reason and "site-packages" not in rec.reason


@pytest.mark.slow
def test_numpys_compiled_gradient_is_forward_differences_compiled_by_numba(run):
    rec = _record(run, "gradient", "numpy", "compiled")
    assert rec.status == "ok", rec.reason
    assert rec.method.startswith("numba.njit of finite differences")


@pytest.mark.slow
def test_mlx_runs_every_mode_and_is_checked(run):
    for workload in ("elementwise", "fft", "sort", "gradient"):
        for mode, method in (("latency", "eager"), ("compiled", "mx.compile")):
            rec = _record(run, workload, "mlx", mode)
            assert rec.status == "ok", (workload, mode, rec.reason)
            assert rec.max_rel_error is not None and rec.max_rel_error <= rec.tolerance
            if workload == "gradient":
                assert "mx.grad" in rec.method
            else:
                assert rec.method == method
    assert "MLX" in run.table() and "MLX CPU (compiled)" in run.table()


@needs_mlx
def test_every_mlx_call_computes_its_outputs_inside_the_timed_call():
    """MLX is lazy: ``a + b`` allocates nothing until evaluated. The bound call must have
    allocated its result by the time it returns (MLX's own memory counter is the witness)."""
    import mlx.core as mx

    backend = backends.load("mlx")("cpu")
    n = 1_000_000
    host = np.ones(n, dtype=np.float32)
    arrays = (backend.asarray(host), backend.asarray(host))
    bound = bind(REGISTRY["elementwise"], backend, "throughput", arrays, "float32")
    lazy = REGISTRY["elementwise"].fn(mx, *arrays)  # the workload itself, not evaluated
    mx.reset_peak_memory()
    del lazy
    assert mx.get_peak_memory() < n * 4  # nothing computed yet
    bound.op(*bound.args, **bound.kwargs)
    assert mx.get_peak_memory() >= 3 * n * 4  # all three outputs computed within the call


@needs_mlx
def test_mlx_keeps_float64_on_the_cpu_and_skips_a_float64_fft_with_the_reason():
    from arraybench.backends.base import Unavailable

    backend = backends.load("mlx")("cpu")
    x = backend.asarray(np.arange(4, dtype=np.float64))  # mx.array alone would make float32
    assert backend.dtype_name(x) == "float64"
    assert backend.unsupported_dtype("float64") is None
    fft = REGISTRY["fft"]
    with pytest.raises(Unavailable, match="MLX has no complex128"):
        fft.function_for("mlx")(backend.namespace(), x)


@needs_mlx
def test_mlx_gpu_is_refused_with_mlx_reason_and_skips_float64_on_metal(monkeypatch):
    from arraybench.backends import mlx as mlx_backend
    from arraybench.backends.base import Unavailable

    if mlx_backend.mx.metal.is_available():
        pytest.skip("a real Metal GPU: the refusal cannot be seen here")
    with pytest.raises(Unavailable, match="metal.is_available"):
        mlx_backend.MlxBackend("gpu")
    # Metal as MLX reports it on a Mac (the seam: its device query and default device).
    monkeypatch.setattr(mlx_backend.mx.metal, "is_available", lambda: True)
    monkeypatch.setattr(mlx_backend.mx, "set_default_device", lambda device: None)
    gpu = mlx_backend.MlxBackend("gpu")
    assert "MLX has no float64 on the GPU" in gpu.unsupported_dtype("float64")
    assert "--dtype float32" in gpu.unsupported_dtype("float64")
    assert gpu.unsupported_dtype("float32") is None


class _FakeMpsEvent:
    """torch.mps.Event's interface: record, synchronize, elapsed_time in ms."""

    clock = 0.0

    def __init__(self, enable_timing: bool = False) -> None:
        assert enable_timing
        self.at: float | None = None

    def record(self) -> None:
        _FakeMpsEvent.clock += 2.5
        self.at = _FakeMpsEvent.clock

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: "_FakeMpsEvent") -> float:
        return end.at - self.at


def test_pytorch_uses_the_mps_device_where_metal_is_and_cuda_is_not(monkeypatch):
    import torch

    from arraybench.backends import torch as torch_backend

    synced: list[bool] = []
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.mps, "synchronize", lambda: synced.append(True))
    monkeypatch.setattr(torch.mps, "Event", _FakeMpsEvent)
    backend = torch_backend.TorchBackend("gpu")
    assert backend.torch_device.type == "mps" and backend.device_timer_note == "MPS events"
    backend.sync(None)
    assert synced == [True]
    timer = backend.device_timer()
    timer.begin()
    timer.end()
    assert timer.elapsed() == pytest.approx(2.5e-3)
    assert "no float64" in backend.unsupported_dtype("float64")
    assert backend.unsupported_dtype("float32") is None
    assert backend.reduced_precision("float32") is None


def test_jax_finds_apple_gpus_through_jax_metal(monkeypatch):
    import jax

    from arraybench.backends import jax as jax_backend
    from arraybench.host.threads import jax_gpu_platform

    class MetalDevice:
        platform = "METAL"
        device_kind = "Apple M2"

    real = jax.devices

    def devices(platform=None):
        if platform == "gpu":
            raise RuntimeError("Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are present")
        return [MetalDevice()] if platform == "METAL" else real(platform)

    monkeypatch.setattr(jax, "devices", devices)
    precision = jax.config.jax_default_matmul_precision
    try:
        backend = jax_backend.JaxBackend("gpu")
    finally:
        jax.config.update("jax_default_matmul_precision", precision)
    assert backend.is_metal and backend.health is None
    assert "jax-metal has no float64" in backend.unsupported_dtype("float64")
    assert backend.reduced_precision("float32") is None
    assert jax_gpu_platform(["metal_plugin"]) == "METAL"
    assert jax_gpu_platform(["xla_cuda12"]) == "cuda"


def test_on_a_mac_the_gpu_preflight_leaves_metal_to_the_worker(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    for name in ("mlx", "torch"):
        spec = backends.SPECS[name]
        if spec.missing_reason() is None:
            assert spec.preflight("gpu") is None
    if backends.SPECS["cupy"].missing_reason() is None:
        assert "no Apple GPU support" in backends.SPECS["cupy"].preflight("gpu")


def test_without_numba_numpys_compiled_cells_are_skipped_with_the_install_line(monkeypatch):
    from arraybench.backends.base import Unavailable
    from arraybench.backends.numpy import NumpyBackend

    # As on a machine without Numba: importing NumPy's compiler module fails (and an earlier
    # test's import, kept as the package's attribute, is not found by `from . import` either).
    import arraybench.backends

    monkeypatch.setitem(sys.modules, "arraybench.backends.numba_jit", None)
    monkeypatch.delattr(arraybench.backends, "numba_jit", raising=False)
    with pytest.raises(Unavailable, match=r"pip install 'arraybench\[numba\]'"):
        bind(REGISTRY["sort"], NumpyBackend("cpu"), "compiled", (np.zeros(3),))


@needs_numba
def test_numba_does_not_compile_workloads_about_the_library_itself():
    from arraybench.backends.base import Unavailable
    from arraybench.backends.numpy import NumpyBackend

    with pytest.raises(Unavailable, match="namespace='backend'"):
        bind(REGISTRY["from_list"], NumpyBackend("cpu"), "compiled", ([1.0, 2.0],))


# -- MLX's float64 sin/cos/exp/erf on the CPU: float32-accurate (ml-explore/mlx#3047) ---------------

def _judged_on_mlx(wl, n, dtype="float64", mode="latency"):
    """One cell prepared and judged in this process by the worker's own code, on the real MLX."""
    from arraybench.model.cell import Cell
    from arraybench.worker.prepare import ReferenceCache, prepare
    from arraybench.model.replicate import TimerSettings

    quick = TimerSettings(min_samples=1, max_samples=1, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)
    cell = Cell(wl.name, str(n), n, "mlx", "cpu", dtype, mode, params=wl.params_for(n))
    return prepare(backends.load("mlx")("cpu"), wl, cell, quick, ReferenceCache()).replicate


@needs_mlx
def test_the_probe_finds_mlx_float64_sin_float32_accurate_exactly_when_it_is():
    import mlx.core as mx

    from arraybench.backends import mlx as mlx_float64

    x = np.array([0.1, 0.7, 1.3, 2.9])
    error = np.max(np.abs(np.array(mx.sin(mx.array(x, dtype=mx.float64))) - np.sin(x)) / np.abs(np.sin(x)))
    assert ("sin" in mlx_float64.float32_accurate()) == (error > 1e-12)


@needs_mlx
@pytest.mark.parametrize("mode", ["latency", "compiled"])
def test_mlx_float64_elementwise_is_skipped_with_the_upstream_bug_as_its_reason(mode):
    from arraybench.backends import mlx as mlx_float64

    if "sin" not in mlx_float64.float32_accurate():
        pytest.skip("this MLX computes float64 sin in float64: the cell is judged, and ok")
    rep = _judged_on_mlx(REGISTRY["elementwise"], 1_000, mode=mode)
    assert rep.status == "skipped", rep.reason
    assert "computes float64 sin with float32 accuracy on the CPU (ml-explore/mlx#3047)" in rep.reason
    assert "max relative error" in rep.reason and "--dtype float32 runs it" in rep.reason
    # The error measured stays on record, far beyond float64's bound and near float32's.
    assert rep.tolerance < 1e-14 and 1e-9 < rep.max_rel_error < 1e-5
    assert not rep.timed


@needs_mlx
def test_mlx_float32_elementwise_is_ok():
    rep = _judged_on_mlx(REGISTRY["elementwise"], 1_000, dtype="float32")
    assert rep.status == "ok", rep.reason
    assert rep.max_rel_error <= rep.tolerance


@needs_mlx
@pytest.mark.usefixtures("registry_restored")
def test_a_planted_mlx_bug_stays_wrong_with_or_without_the_float32_accurate_functions():
    from arraybench import workload

    @workload(sizes={"s": 1_000}, inputs=lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n)))
    def product(xp, a, b):
        return a * b

    @product.override("mlx")
    def _off_by_a_billionth(xp, a, b):  # no sin/cos/exp: the known limitation cannot explain it
        return a * b * (1 + 1e-9)

    @workload(sizes={"s": 1_000}, inputs=lambda n, rng: rng.standard_normal(n), namespace="native")
    def sine(xp, a):
        return xp.sin(a)

    @sine.override("mlx")
    def _sine_off_by_a_billionth(xp, a):  # calls sin, but is wrong with sin in float64 too
        return xp.sin(a) * (1 + 1e-9)

    for wl in (product, sine):
        for mode in ("latency", "compiled"):
            rep = _judged_on_mlx(wl, 1_000, mode=mode)
            assert rep.status == "wrong", (wl.name, mode, rep.reason)
            assert "mlx#3047" not in rep.reason
    assert _judged_on_mlx(sine, 1_000, dtype="float32").status == "ok"


@needs_mlx
def test_a_fixed_mlx_is_judged_as_any_library(monkeypatch):
    """Where the probe finds every function float64-accurate (an MLX with the bug fixed; here
    its answer is put in its place), a wrong verdict is a wrong verdict."""
    from arraybench.backends import mlx as mlx_float64

    if "sin" not in mlx_float64.float32_accurate():
        pytest.skip("this MLX is fixed already: the elementwise cell is ok")
    monkeypatch.setattr(mlx_float64, "float32_accurate", lambda: ())
    rep = _judged_on_mlx(REGISTRY["elementwise"], 1_000)
    assert rep.status == "wrong" and rep.reason.startswith("max relative error")



@needs_mlx
@pytest.mark.usefixtures("registry_restored")
def test_mlx_float64_fft_is_skipped_for_its_missing_complex128_and_other_narrow_results_stay_wrong():
    """MLX has no complex128: a correct float64 FFT convolution comes back float32 on it, which is
    the library's limit, not the code's (skipped, saying so); a float32 step with no FFT in it
    stays wrong, and the FFT runs, and is judged, in float32."""
    import mlx.core as mx

    from arraybench import workload

    if hasattr(mx, "complex128"):
        pytest.skip("this MLX has complex128: its float64 FFT is judged as any library's")

    @workload(sizes={"s": 4_096}, inputs=lambda n, rng: (rng.standard_normal(n), rng.standard_normal(65)))
    def fft_convolution(xp, a, b):
        n = a.shape[0] + b.shape[0] - 1
        return xp.fft.irfft(xp.fft.rfft(a, n=n) * xp.fft.rfft(b, n=n), n=n)

    @workload(sizes={"s": 4_096}, inputs=lambda n, rng: rng.standard_normal(n))
    def float32_step(xp, a):
        return xp.astype(a, xp.float32) * 2.0

    rep = _judged_on_mlx(fft_convolution, 4_096)
    assert rep.status == "skipped", rep.reason
    assert "has no complex128: its fft.rfft of a float64 array computes in complex64" in rep.reason
    assert "result is float32, expected float64" in rep.reason and "--dtype float32 runs it" in rep.reason
    narrow = _judged_on_mlx(float32_step, 4_096)
    assert narrow.status == "wrong" and narrow.reason.startswith("result is float32, expected float64")
    assert _judged_on_mlx(fft_convolution, 4_096, dtype="float32").status == "ok"

def test_numerics_marks_the_skipped_mlx_error_over_tolerance_output_by_output():
    """A cell skipped for MLX's float32-accurate sin keeps its error, and ``arraybench numerics``
    shows it over tolerance on sin(a) alone, as it shows a wrong one."""
    from arraybench.model.record import Summary
    from arraybench.render.files import numerics_markdown

    rec = Summary("elementwise", "small", 1000, "mlx", "cpu", "float64", "latency", "skipped",
                 reason="MLX 0.32.4 computes float64 sin with float32 accuracy on the CPU (ml-explore/mlx#3047)",
                 max_rel_error=4.5e-7, tolerance=1.8e-15)
    rec.output_names, rec.output_errors = ["a + b", "a * b", "sin(a)"], [0.0, 0.0, 4.5e-7]
    rows = {line.split("|")[4].strip(): line.split("|")[6].strip()
            for line in numerics_markdown([rec]).splitlines()[2:5]}
    assert rows == {"a + b": "0.0e+00", "a * b": "0.0e+00", "sin(a)": "4.5e-07 ✗"}
