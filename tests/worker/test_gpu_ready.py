"""Ready for the first GPU: findings 2-9, tested on the CPU.

As in ``test_gpu.py``, the real code runs wherever the CPU reaches it; where only a GPU would, a
small fake stands in at the backend's seam, and its docstring says which behaviour it stands for.
"""

from __future__ import annotations

import math
import types

import numpy as np
import pytest

from arraybench.backends.gpu import MAX_HOLD_S, MIN_HOLD_S, CudaEvents, SpinKernel
from arraybench.worker.timer import Timer


# -- finding 2: the device pass times the kernels, not the host issuing them ---------------------

class FakeStream:
    """Stands for one CUDA stream and the host issuing work to it, on one simulated clock.

    ``now`` is the host's time; work queued on the stream starts when both the host has issued it
    and the work before it is done (``cudaLaunchKernel`` returns at once; the GPU runs the queue in
    order). An event's timestamp is when the stream reaches it (``cudaEventRecord``), so a start
    event recorded on an idle stream fires at once, before the host has issued the call after it.
    """

    def __init__(self, cycles_per_second: float = 1.5e9) -> None:
        self.now = 0.0
        self.free_at = 0.0
        self.hz = cycles_per_second

    def clock(self) -> float:
        return self.now

    def host(self, seconds: float) -> None:
        self.now += seconds

    def enqueue(self, seconds: float) -> None:
        self.free_at = max(self.now, self.free_at) + seconds

    def spin_cycles(self, cycles: int) -> None:  # torch.cuda._sleep / CuPy's clock64 kernel
        self.enqueue(cycles / self.hz)

    def sync(self, _result=None) -> None:
        self.now = max(self.now, self.free_at)

    def event(self) -> "FakeEvent":
        return FakeEvent(self)


class FakeEvent:
    def __init__(self, stream: FakeStream) -> None:
        self.stream = stream
        self.t: float | None = None

    def record(self) -> None:
        self.t = max(self.stream.now, self.stream.free_at)

    def synchronize(self) -> None:
        self.stream.sync()


def _elapsed_ms(a: FakeEvent, b: FakeEvent) -> float:
    return (b.t - a.t) * 1e3


def _fast_call(stream: FakeStream, kernels: int = 3, issue_s: float = 10e-6, kernel_s: float = 2e-6):
    """A call the host needs ``kernels * issue_s`` to issue, whose kernels run ``kernels * kernel_s``:
    a small elementwise workload in eager torch (10 µs of dispatch per op, a few µs of kernel)."""
    def call():
        for _ in range(kernels):
            stream.host(issue_s)
            stream.enqueue(kernel_s)
    return call


def _device_time_per_call(events: CudaEvents, stream: FakeStream, calls: int = 200) -> float:
    op = _fast_call(stream)
    timer = Timer(op, sync=stream.sync, device_timer=events, clock=stream.clock)
    timer.timeit(20, "device")  # the hold settles on twice the issuing
    return timer.timeit(calls, "device")[1] / calls


def test_without_a_blocking_kernel_the_events_time_the_host_issuing():
    """The finding: 30 µs of issuing, 6 µs of kernels; the events said ~26 µs."""
    stream = FakeStream()
    events = CudaEvents(stream.event, _elapsed_ms)  # no spin: the old behaviour
    assert _device_time_per_call(events, stream) > 20e-6


def test_with_the_blocking_kernel_the_events_time_the_kernels():
    stream = FakeStream()
    spin = SpinKernel(stream.spin_cycles, stream.event, _elapsed_ms)
    events = CudaEvents(stream.event, _elapsed_ms, spin=spin, clock=stream.clock)
    assert _device_time_per_call(events, stream) == pytest.approx(6e-6)
    assert spin.cycles_per_second() == pytest.approx(1.5e9)  # measured with events, once
    assert events.hold_s == pytest.approx(max(MIN_HOLD_S, 2 * 30e-6))  # twice the issuing
    assert events.uncovered == 0


def test_a_slow_issue_raises_the_hold_at_once_and_fast_ones_lower_it():
    stream = FakeStream()
    events = CudaEvents(stream.event, _elapsed_ms, spin=SpinKernel(stream.spin_cycles, stream.event,
                                                                   _elapsed_ms), clock=stream.clock)
    slow = _fast_call(stream, issue_s=1e-3)  # 3 ms of issuing: more than the first 1 ms hold
    timer = Timer(slow, sync=stream.sync, device_timer=events, clock=stream.clock)
    timer.timeit(1, "device")
    assert events.uncovered == 1 and events.hold_s == pytest.approx(2 * 3e-3)
    assert timer.timeit(1, "device")[1] == pytest.approx(6e-6)  # covered now
    fast = Timer(_fast_call(stream), sync=stream.sync, device_timer=events, clock=stream.clock)
    fast.timeit(40, "device")
    assert events.hold_s == pytest.approx(60e-6)
    huge = Timer(_fast_call(stream, issue_s=0.1), sync=stream.sync, device_timer=events, clock=stream.clock)
    huge.timeit(2, "device")
    assert events.hold_s == MAX_HOLD_S  # a call this slow to issue keeps the rest in its events


def test_throughput_and_the_wall_clock_pass_queue_no_blocking_kernel():
    """The hold is the device pass's alone: a wall-clock sample carries no spin kernel."""
    stream = FakeStream()
    spins = []
    events = CudaEvents(stream.event, _elapsed_ms, spin=spins.append, clock=stream.clock)
    timer = Timer(_fast_call(stream), sync=stream.sync, device_timer=events, clock=stream.clock)
    timer.timeit(10, "latency")
    timer.timeit(10, "throughput")
    assert spins == []
    timer.timeit(10, "device")
    assert len(spins) == 10


# -- finding 3: with --allow-tf32 the matmul check still catches wrong results -------------------

def test_a_tf32_matmul_bound_scales_with_tf32s_unit_roundoff_and_catches_a_10_percent_error():
    from arraybench.worker import accuracy
    from arraybench.workloads import REGISTRY

    check = REGISTRY["matmul"].check
    for n in (2_000, 8_192):
        bound = check.tolerance("float32", n, "tf32")
        assert bound == pytest.approx(2 * 2**-11 * math.sqrt(n))  # 0.044 and 0.088, not 0.70 and 1.41
        assert bound < 0.1
    # Never below float32's own bound, nor below 8 units at small n (truncating TF32: ~2.5 u).
    assert check.tolerance("float32", 4, "tf32") == pytest.approx(8 * 2**-11)
    assert check.tolerance("float32", 100, "tf32") > check.tolerance("float32", 100)
    # A correct TF32 result (inputs rounded as tensor cores read them) passes with a wide margin.
    from arraybench.worker.selfcheck import round_mantissa

    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((300, 300)).astype(np.float32) for _ in range(2))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    for nearest in (True, False):
        out = round_mantissa(a, 10, nearest) @ round_mantissa(b, 10, nearest)
        assert accuracy.judge(out, ref, check, "float32", 300, tolerance=check.tolerance(
            "float32", 300, "tf32")).ok
        assert accuracy.judge(out * np.float32(1.1), ref, check, "float32", 300,
                              tolerance=check.tolerance("float32", 300, "tf32")).ok is False


def test_the_doctor_tells_tf32_from_bfloat16_and_float32():
    from arraybench.worker.selfcheck import round_mantissa, which_precision

    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal((256, 256)).astype(np.float32) for _ in range(2))
    assert which_precision(a @ b, a, b)[0] == "float32"
    for bits, name in ((10, "tf32"), (7, "bf16")):
        for nearest in (True, False):
            out = round_mantissa(a, bits, nearest) @ round_mantissa(b, bits, nearest)
            assert which_precision(out, a, b)[0] == name, (bits, nearest)
    # bfloat16 arithmetic no emulation reproduces (another rounding, another order) is still
    # bfloat16 by the size of its error: the old bound, 16 eps √n, called it TF32.
    bf16 = round_mantissa(a, 7) @ round_mantissa(b, 7)
    noisy = bf16 * (1 + np.float32(2**-9) * rng.choice([-1, 1], bf16.shape).astype(np.float32))
    found, how = which_precision(noisy, a, b)
    assert found == "bf16" and "size" in how
    assert which_precision(a @ b * np.float32(1.1), a, b)[0] == "worse"


# -- finding 4: in-place workloads in throughput mode stay batched on an asynchronous device ------

@pytest.mark.parametrize("mode, sync, batched", [
    ("throughput", True, True),     # a GPU: one wait per batch, as without fresh inputs
    ("latency", True, False),       # latency restores before every slow call, as before
    ("throughput", False, False),   # a synchronous CPU library: unchanged
])
def test_fresh_inputs_keep_the_batch_in_throughput_mode_on_an_asynchronous_device(mode, sync, batched):
    from arraybench.worker.timer import FreshInputs
    from arraybench.model.replicate import TimerSettings

    x = np.zeros(8)
    waits = []

    def inplace(a):  # slow enough (≥ 100 µs) that ``auto`` restores before every latency call
        a += 1.0
        time_sleep(2e-4)
        return a

    fresh = FreshInputs((x,), [0], [x.copy()], clone=np.copy, copy_into=np.copyto,
                        capacity=16, restore="auto")
    timer = Timer(inplace, (x,), sync=(lambda r: waits.append(r)) if sync else None, fresh=fresh)
    run = timer.start(TimerSettings(mode=mode, min_samples=2, max_samples=2, warmup_s=0.002,
                                    target_sample_s=0.004))
    assert fresh.per_call is not batched
    assert fresh.capacity == (16 if batched else 1)
    if batched:
        waits.clear()
        wall, _ = timer.timeit(run.number, mode)
        assert len(waits) == math.ceil(run.number / 16)  # one wait per span of up to 16 calls
        assert all(np.array_equal(slot[0], np.ones(8)) for slot in fresh._slots[:run.number])


def time_sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)


# -- finding 5: why a CUDA build cannot start is said, in the library's words -------------------

def test_a_jax_gpu_worker_names_its_platform_so_a_broken_plugin_fails_loudly():
    from arraybench.host.threads import jax_gpu_platform, worker_env

    env = worker_env({}, threads=None, backend="jax", device="gpu", allow_tf32=False)
    assert env["JAX_PLATFORMS"] in ("cuda,cpu", "rocm,cpu")
    assert jax_gpu_platform(["xla_cuda12"]) == "cuda" and jax_gpu_platform([]) == "cuda"
    assert jax_gpu_platform(["xla_rocm7"]) == "rocm"
    mine = worker_env({"JAX_PLATFORMS": "cuda"}, threads=None, backend="jax", device="gpu", allow_tf32=False)
    assert mine["JAX_PLATFORMS"] == "cuda"  # the user's own choice stands


@pytest.mark.slow
def test_with_its_platform_named_jax_says_why_its_gpu_plugin_cannot_start(tmp_path):
    """A plugin that cannot load (PJRT_NAMES_AND_LIBRARY_PATHS registers one by name): the worker's
    one line keeps the loader's reason. Not shown here: an installed plugin package whose backend
    fails at start is skipped quietly unless JAX_PLATFORMS names it (xla_bridge.backends,
    ``fail_quietly``), which the test above makes sure a GPU worker does; that needs a plugin
    package. (The platform is "rocm": xla_bridge skips "cuda" silently without /dev/nvidia*.)"""
    import os
    import subprocess
    import sys

    pytest.importorskip("jax")
    env = dict(os.environ, JAX_PLATFORMS="rocm,cpu",
               PJRT_NAMES_AND_LIBRARY_PATHS=f"rocm:{tmp_path / 'libbroken_pjrt.so'}")
    code = ("from arraybench.backends.base import Unavailable\n"
            "from arraybench.backends.jax import JaxBackend\n"
            "try:\n    JaxBackend('gpu')\nexcept Unavailable as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "has no GPU backend here" in out.stdout, out.stdout + out.stderr
    assert "libbroken_pjrt.so" in out.stdout  # the loader's own words


def test_torch_says_why_cuda_cannot_start_in_its_own_words(monkeypatch):
    """``torch.cuda.is_available()`` is only False; ``torch.cuda.init()`` raises the reason (a driver
    too old, none found; on this CPU build "Torch not compiled with CUDA enabled")."""
    torch_backend = pytest.importorskip("arraybench.backends.torch")
    from arraybench.backends.base import Unavailable

    assert torch_backend.cuda_init_error() == "Torch not compiled with CUDA enabled"
    monkeypatch.setattr(torch_backend.torch.version, "cuda", "12.8")  # as a CUDA build would say
    with pytest.raises(Unavailable, match=r"no CUDA device usable by PyTorch \(Torch not compiled"):
        torch_backend.TorchBackend("gpu")


# -- finding 6: --allow-tf32 leaves CPU torch in full float32 ------------------------------------

def test_allow_tf32_does_not_change_cpu_torch():
    """torch 2.13's ``set_float32_matmul_precision("high")`` also sets oneDNN's CPU matmuls to TF32
    (``torch.backends.mkldnn.matmul.fp32_precision``); a CPU worker keeps "highest"/"ieee"."""
    torch_backend = pytest.importorskip("arraybench.backends.torch")
    torch = torch_backend.torch
    backend = torch_backend.TorchBackend("cpu", allow_tf32=True)
    assert torch.get_float32_matmul_precision() == "highest"
    assert torch.backends.mkldnn.matmul.fp32_precision == "ieee"
    assert backend.reduced_precision("float32") is None
    info = backend.info()
    assert info["mkldnn_fp32_precision"] == "ieee" and info["allow_tf32"] is False


# -- finding 7: array-api-compat's torch namespace on a GPU ---------------------------------------

def test_torch_array_api_namespace_puts_fftfreq_dlpack_and_the_default_device_on_the_gpu():
    """array_api_compat/torch: ``fft.fftfreq``/``rfftfreq`` are torch.fft's own (device=None: the
    CPU), ``from_dlpack`` keeps a host array's DLPack on the CPU, ``_info.default_device()`` returns
    ``torch.device("cpu")``. The meta device stands for CUDA (a non-CPU device that needs no GPU)."""
    torch_backend = pytest.importorskip("arraybench.backends.torch")
    import array_api_compat

    torch = torch_backend.torch
    backend = torch_backend.TorchBackend("cpu")
    backend.device, backend.torch_device = "gpu", torch.device("meta")
    xp = backend.namespace("array_api")
    assert xp.fft.fftfreq(8).device.type == "meta" and xp.fft.rfftfreq(8, d=0.5).device.type == "meta"
    assert xp.fft.fftfreq(8, device="cpu").device.type == "cpu"  # an explicit device= still wins
    assert xp.fft.fft is array_api_compat.torch.fft.fft
    assert xp.__array_namespace_info__().default_device() == torch.device("meta")
    assert xp.__array_namespace_info__().default_dtypes()["real floating"] == torch.float32
    # DLPack cannot describe the meta device, so from_dlpack is checked by what it passes on.
    assert xp.from_dlpack.func is array_api_compat.torch.from_dlpack
    assert xp.from_dlpack.keywords == {"device": torch.device("meta")}
    assert xp.from_dlpack(np.arange(3.0), device="cpu").device.type == "cpu"
    plain = torch_backend.TorchBackend("cpu").namespace("array_api")
    assert plain.__array_namespace_info__().default_device() == torch.device("cpu")  # the CPU: unchanged


# -- finding 8: CuPy compiled mode: only CuPy's own refusals are "not applicable" ---------------

def test_cupy_fuse_refusals_are_not_applicable_and_a_workload_bug_is_a_failure():
    """The refusal is raised by CuPy's real fusion proxy (cupy/_core/_fusion_interface.py,
    ``_VariableProxy.__bool__``), called as ``cupy.fuse`` tracing ``if x:`` would call it; no GPU
    is needed to raise it. The bug is the workload's own NameError."""
    # The backend module raises Unavailable, not ImportError, where CuPy is missing.
    cupy_backend = pytest.importorskip("arraybench.backends.cupy", exc_type=Exception)
    from cupy._core._fusion_interface import _VariableProxy

    from arraybench.model.cell import Cell
    from arraybench.worker.prepare import _classify

    backend = cupy_backend.CupyBackend.__new__(cupy_backend.CupyBackend)
    backend.device, backend.allow_tf32 = "gpu", False
    compiled = Cell("elementwise", "100", 100, "cupy", "gpu", "float64", "compiled", False)

    def branches(x):
        return x * 2 if x else x

    def typo(x):
        return x * undefined_scale  # noqa: F821 - the bug

    outcomes = {}
    for fn in (branches, typo):
        try:
            fn(object.__new__(_VariableProxy))
        except Exception as exc:  # noqa: BLE001
            outcomes[fn.__name__] = _classify(backend, compiled, "compiling", exc)
    assert outcomes["branches"][0] == "skipped" and "Cannot convert to Python scalar" in outcomes["branches"][1]
    assert outcomes["typo"][0] == "failed" and "NameError" in outcomes["typo"][1]
    assert cupy_backend.is_fuse_refusal(TypeError("object of type '_ArrayProxy' has no len()"))
    assert not cupy_backend.is_fuse_refusal(ZeroDivisionError("float division by zero"))


# -- finding 9: nits -----------------------------------------------------------------------------

def test_a_jax_device_without_local_hardware_id_has_no_monitor_and_the_assumed_l2():
    """jaxlib's ``local_hardware_id`` is an optional (jax/_src/array.py's ``__dlpack_device__``
    checks it for None); the old code passed None to ``int()`` (flush) or guessed GPU 0 (NVML)."""
    from arraybench.backends import gpu as cuda_driver
    from arraybench.backends.base import Backend

    from ..conftest import backend_or_skip

    backend = backend_or_skip("jax")
    backend.jax_device = types.SimpleNamespace(local_hardware_id=None, platform="gpu")
    assert backend.hardware_ordinal() is None
    backend.open_gpu_health()
    assert backend.health is None and "local_hardware_id" in backend.health_note
    assert backend.l2_bytes() == Backend.l2_bytes(backend)
    assert cuda_driver.l2_cache_bytes(None) is None


def test_throttle_bits_come_from_the_nvml_bindings_where_they_define_them():
    """nvidia-ml-py 13.615's pynvml.py: ``nvmlClocksThrottleReasonBoardLimit = 0x200``,
    ``nvmlClocksThrottleReasonReliability = 0x400`` (the ``ClocksEventReason`` names stop at
    0x100); the fake module carries those constants with their values there."""
    from arraybench.backends.gpu import GpuMonitor, throttle_reasons

    from .test_gpu import FakeNvml

    nvml = FakeNvml()
    nvml.nvmlClocksEventReasonSwPowerCap = 0x4
    nvml.nvmlClocksThrottleReasonBoardLimit = 0x200
    nvml.nvmlClocksThrottleReasonReliability = 0x400
    assert throttle_reasons(nvml) == throttle_reasons()  # the same bits as ours
    nvml.nvmlClocksThrottleReasonReliability = 0x800  # a later release moves a bit: follow it
    monitor = GpuMonitor(nvml, "handle")
    nvml.reasons = 0x800 | 0x200 | 0x1  # GpuIdle is no slowdown
    assert monitor.throttling() == ["board limit", "reliability"]


def test_a_record_says_when_the_hold_did_not_cover_the_issuing():
    """A workload whose calls take the host longer to issue than the longest hold (10 ms): the
    record's device time includes host time, and a warning says so. NumPy stands for the GPU
    library; the fake stream's clock makes every issue 20 ms long."""
    from arraybench.backends.numpy import NumpyBackend
    from arraybench.model.cell import Cell
    from arraybench.worker.prepare import ReferenceCache, finish, prepare
    from arraybench.model.replicate import TimerSettings
    from arraybench.workloads import REGISTRY

    stream = FakeStream()

    def slow_clock():
        stream.host(20e-3)
        return stream.now

    class HeldNumpy(NumpyBackend):
        def __init__(self):
            super().__init__("cpu")
            self.device = "gpu"
            self.sync = lambda _r: None

        def device_timer(self):
            return CudaEvents(stream.event, _elapsed_ms,
                              spin=SpinKernel(stream.spin_cycles, stream.event, _elapsed_ms), clock=slow_clock)

    c = Cell("elementwise", "1000", 1000, "numpy", "gpu", "float64", "latency", False)
    p = prepare(HeldNumpy(), REGISTRY["elementwise"], c,
                TimerSettings(min_samples=2, max_samples=2, warmup_s=0, target_sample_s=1e-4), ReferenceCache())
    while not p.run.done:
        p.run.sample()
    rep = finish(HeldNumpy(), p)
    assert rep.device_samples_s and any("includes host time" in w for w in rep.warnings)
