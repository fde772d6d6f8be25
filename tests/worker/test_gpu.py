"""GPU paths, tested on the CPU.

No GPU is lent to this project. Each test here runs the real code path with the real libraries
where the CPU reaches it; where only a GPU would, a small fake stands in for the library object,
and its docstring says which real behaviour (and which source line) it stands for.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from arraybench.worker import accuracy
from arraybench.backends.base import tf32_in_effect
from arraybench.backends.numpy import NumpyBackend
from arraybench.worker.prepare import ReferenceCache, prepare
from arraybench.model.replicate import Replicate, TimerSettings
from arraybench.model.cell import Cell
from arraybench.workloads import REGISTRY

from ..conftest import backend_or_skip

QUICK = TimerSettings(min_samples=2, max_samples=3, budget_s=0.01, warmup_s=0, target_sample_s=1e-4)


def cell(workload: str, size: int, dtype: str = "float64", backend: str = "numpy",
         device: str = "cpu", mode: str = "latency", transfer: bool = False) -> Cell:
    return Cell(workload, str(size), size, backend, device, dtype, mode, transfer)


# -- finding 1: JAX's to_numpy must copy on every call ------------------------------------------

def test_jax_to_numpy_on_a_gpu_reads_a_never_read_array_every_call(monkeypatch):
    """On a GPU, ``ArrayImpl._value`` keeps the host copy once made (jax/_src/array.py:
    ``if did_copy: self._npy_value = npy_value``; jaxlib's ``PyHostValue::CopyToHostAsync`` returns
    early once its value is set), so a second transfer of the same array is a lookup. The CPU
    never copies (zero-copy), so the test records which arrays reach ``jax.device_get``: on the GPU
    path each must be a new array over the same device buffer, never read before."""
    from arraybench.backends import jax as jax_backend

    backend = backend_or_skip("jax")
    x = backend.asarray(np.arange(1000.0))
    seen = []
    real_get = jax_backend.jax.device_get

    def device_get(a):
        seen.append((a, a._npy_value))
        return real_get(a)

    monkeypatch.setattr(jax_backend.jax, "device_get", device_get)
    monkeypatch.setattr(backend, "device", "gpu")  # the GPU branch, run on the CPU's arrays
    first, second = backend.to_numpy(x), backend.to_numpy(x)
    (a, cached_a), (b, cached_b) = seen
    assert a is not x and b is not x and a is not b
    assert cached_a is None and cached_b is None
    assert a.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()  # zero-copy: no device copy timed
    np.testing.assert_array_equal(first, np.arange(1000.0))
    np.testing.assert_array_equal(second, first)


def test_jax_to_numpy_on_the_cpu_stays_the_plain_conversion(monkeypatch):
    from arraybench.backends import jax as jax_backend

    backend = backend_or_skip("jax")
    x = backend.asarray(np.arange(10.0))
    seen = []
    monkeypatch.setattr(jax_backend.jax, "device_get", lambda a: seen.append(a) or np.asarray(a))
    backend.to_numpy(x)
    assert seen == [x]


# -- finding 2: --allow-tf32 must not make every float32 matmul wrong ---------------------------

def round_to_tf32(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to TF32's 10-bit mantissa, to nearest even (what tensor cores read)."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x0FFF) + ((bits >> np.uint32(13)) & np.uint32(1))) & np.uint32(0xFFFFE000)
    return rounded.view(np.float32)


class Tf32Numpy(NumpyBackend):
    """Stands for a GPU backend running float32 matmuls in TF32 (``--allow-tf32`` on Ampere+).

    Inputs are rounded to TF32 as tensor cores read them; products of two 11-bit mantissas are
    exact in float32 and the sums accumulate in float32, as cuBLAS's TF32 GEMM does.
    ``reports`` is what ``reduced_precision`` says, as the real backends read it from the library.
    """

    def __init__(self, reports: str | None) -> None:
        super().__init__("cpu")
        self.reports = reports

    def asarray(self, host):
        return round_to_tf32(host) if host.dtype == np.float32 else super().asarray(host)

    def reduced_precision(self, dtype):
        return self.reports if dtype == "float32" else None


def test_tf32_emulation_has_the_error_the_issue_measured():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((300, 300)), rng.standard_normal((300, 300))
    out = round_to_tf32(a.astype(np.float32)) @ round_to_tf32(b.astype(np.float32))
    error = accuracy.Check.normwise(lambda n: n ** 0.5).error(out, a.astype(np.float32).astype(float)
                                                             @ b.astype(np.float32).astype(float))
    assert 5e-5 < error < 2e-3  # ~3e-4: TF32, a thousand times float32's


@pytest.mark.parametrize("reports, status", [(None, "wrong"), ("tf32", "ok")])
def test_a_tf32_matmul_is_checked_against_tf32_and_the_record_says_so(reports, status):
    """Without the reduced precision known, TF32's error fails the float32 bound: the bug."""
    p = prepare(Tf32Numpy(reports), REGISTRY["matmul"], cell("matmul", 200, "float32"), QUICK,
                ReferenceCache())
    assert p.replicate.status == status, p.replicate
    if reports:
        assert p.replicate.reduced_precision == "tf32"
        assert any("TF32" in w for w in p.replicate.warnings)
        assert p.replicate.tolerance == pytest.approx(2 * 2**-11 * 200 ** 0.5)  # 2 u √n
    else:
        assert p.replicate.reduced_precision == ""


def test_reduced_precision_leaves_float64_and_non_matmul_checks_alone():
    check = accuracy.Check.normwise(lambda n: n, ulps=8)
    assert check.tolerance("float32", 100, "tf32") == check.tolerance("float32", 100)
    matmul = REGISTRY["matmul"].check
    assert matmul.matmul and REGISTRY["ceiling_matmul"].check.matmul
    p = prepare(Tf32Numpy("tf32"), REGISTRY["matmul"], cell("matmul", 50, "float64"), QUICK, ReferenceCache())
    assert p.replicate.status == "ok" and p.replicate.reduced_precision == ""


def test_aggregate_carries_the_reduced_precision_into_the_record():
    from arraybench.analysis.aggregate import aggregate

    c = cell("matmul", 200, "float32")
    shard = Replicate(status="ok", samples_s=[1e-3, 1.1e-3], number=1, reduced_precision="tf32")
    assert aggregate(c, [shard], 1, 0.02).reduced_precision == "tf32"


@pytest.mark.parametrize("allowed, dtype, cc, override, expected", [
    (True, "float32", (8, 0), None, True),
    (True, "float32", (7, 0), None, False),  # V100: no TF32 units
    (True, "float64", (9, 0), None, False),
    (False, "float32", (9, 0), None, False),
    (True, "float32", (9, 0), "0", False),  # NVIDIA_TF32_OVERRIDE=0 turns it off in cuBLAS
    (True, "complex64", (8, 6), "1", True),
])
def test_tf32_is_in_effect_only_where_allowed_possible_and_not_overridden(
        monkeypatch, allowed, dtype, cc, override, expected):
    if override is None:
        monkeypatch.delenv("NVIDIA_TF32_OVERRIDE", raising=False)
    else:
        monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", override)
    assert tf32_in_effect(allowed, dtype, cc) is expected


def test_jax_reads_its_own_matmul_precision_setting(monkeypatch):
    """``jax.lax.Precision``: DEFAULT and HIGH use TF32 on a GPU that has it, HIGHEST float32
    (jax/_src/lax/lax.py, class Precision); the fake device stands for an A100's."""
    from arraybench.backends.jax import JaxBackend

    backend_or_skip("jax")
    monkeypatch.delenv("NVIDIA_TF32_OVERRIDE", raising=False)
    assert JaxBackend("cpu").reduced_precision("float32") is None  # "no impact on CPU backends"
    for allow, expected in ((False, None), (True, "tf32")):
        backend = JaxBackend("cpu", allow_tf32=allow)
        monkeypatch.setattr(backend, "device", "gpu")
        monkeypatch.setattr(backend, "jax_device", types.SimpleNamespace(compute_capability="8.0"))
        assert backend.reduced_precision("float32") == expected
        assert backend.reduced_precision("float64") is None
    JaxBackend("cpu")  # leave the process's precision at "highest" for other tests


def test_torch_reads_its_own_tf32_flag(monkeypatch):
    """``torch.backends.cuda.matmul.allow_tf32`` as the backend set it; the fake properties stand
    for ``torch.cuda.get_device_properties`` of an H100 (compute capability 9.0)."""
    import torch

    from arraybench.backends.torch import TorchBackend

    backend_or_skip("torch")
    monkeypatch.delenv("NVIDIA_TF32_OVERRIDE", raising=False)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda _device: types.SimpleNamespace(major=9, minor=0))
    try:
        for allow, expected in ((False, None), (True, "tf32")):
            backend = TorchBackend("cpu", allow_tf32=allow)
            assert backend.reduced_precision("float32") is None  # the CPU: never
            # What a GPU backend's __init__ sets (a CPU one keeps full float32).
            torch.backends.cuda.matmul.allow_tf32 = allow
            monkeypatch.setattr(backend, "device", "gpu")
            assert backend.reduced_precision("float32") == expected
    finally:
        TorchBackend("cpu")  # full precision again for the rest of the session


# -- finding 6: torch's Array API namespace creates on the workload's device ---------------------

def test_torch_array_api_creation_follows_the_device():
    """array_api_compat/torch/_aliases.py: ``zeros(shape, dtype=None, device=None)`` passes
    ``device=None`` to torch, which means the CPU. The meta device stands for CUDA: a real
    non-CPU torch device that exists without a GPU."""
    import array_api_compat
    import torch

    from arraybench.backends.torch import TorchBackend

    backend_or_skip("torch")
    backend = TorchBackend("cpu")
    assert backend.namespace("array_api") is array_api_compat.torch  # the CPU: unchanged
    backend.device, backend.torch_device = "gpu", torch.device("meta")
    xp = backend.namespace("array_api")
    assert xp is backend.namespace("array_api")  # built once
    for made in (xp.zeros(3), xp.ones((2, 2)), xp.empty(4), xp.full(3, 1.0), xp.arange(5),
                 xp.linspace(0, 1, 5), xp.eye(3), xp.asarray([1.0, 2.0])):
        assert made.device.type == "meta"
    assert xp.zeros(3, device="cpu").device.type == "cpu"  # an explicit device= still wins
    assert xp.sin is array_api_compat.torch.sin and xp.linalg is array_api_compat.torch.linalg
    assert array_api_compat.is_torch_namespace(xp)


# -- finding 3: device time in the terminal table (the HTML: test_report_html) -------------------

def test_the_terminal_table_shows_device_time_only_where_there_is_some():
    from rich.console import Console

    from arraybench.render.tables import results_table

    from ..synthetic import record, spread

    def render(records):
        console = Console(width=200, record=True, color_system=None)
        console.print(results_table(records))
        return console.export_text()

    cpu = [record("matmul", "numpy", samples=spread(1e-3))]
    assert "┃ device ┃" not in render(cpu)
    gpu = cpu + [record("matmul", "torch", "gpu", samples=spread(2e-4), device_median_s=1.5e-4)]
    text = render(gpu)
    assert "┃ device ┃" in text and "150 µs" in text


# -- finding 4: --include-transfer and the host-placed interop workloads --------------------------

@pytest.mark.parametrize("name", ["from_list", "from_numpy", "copy_from_numpy"])
def test_transfer_variants_of_host_placed_workloads_are_skipped_with_the_reason(name):
    """Their inputs stay on the host: the transfer wrapper fed them to ``from_numpy`` again
    (``torch.from_numpy(list)`` raises; ``jax.device_put(list)`` makes one scalar per element)."""
    backend = backend_or_skip("torch")
    p = prepare(backend, REGISTRY[name], cell(name, 100, backend="torch", transfer=True), QUICK,
                ReferenceCache())
    assert p.replicate.status == "skipped", p.replicate
    assert "inputs stay on the host" in p.replicate.reason
    assert p.run is None


def test_transfer_variants_of_device_workloads_still_run():
    backend = backend_or_skip("torch")
    p = prepare(backend, REGISTRY["elementwise"], cell("elementwise", 100, backend="torch", transfer=True),
                QUICK, ReferenceCache())
    assert p.replicate.status == "ok", p.replicate
    assert p.replicate.method.endswith("+transfer")


# -- finding 5: copy_from_numpy moves n bytes, as from_numpy does ---------------------------------

def test_copy_from_numpy_counts_the_bytes_that_cross_the_bus_once():
    n, itemsize = 1_000_000, 8
    copied = REGISTRY["copy_from_numpy"].work_for(n, itemsize)
    assert copied.bytes == REGISTRY["from_numpy"].work_for(n, itemsize).bytes == n * itemsize


# -- finding 7: CuPy compiled mode: out of memory and CUDA errors are failures -------------------

def _cupy_backend():
    """A CupyBackend without a GPU: only its exception handling is used, which needs none."""
    try:
        from arraybench.backends.cupy import CupyBackend
    except Exception as exc:  # noqa: BLE001 - Unavailable or a broken install
        pytest.skip(f"CuPy cannot be imported: {exc}")
    backend = CupyBackend.__new__(CupyBackend)
    backend.device, backend.allow_tf32 = "gpu", False
    return backend


def _cublas_error():
    """Stands for cupy_backends.cuda.libs.cublas.CUBLASError, whose module needs libcublas to load
    (cublas.pyx: ``class CUBLASError(RuntimeError)``, message the status name)."""
    cls = type("CUBLASError", (RuntimeError,), {"__module__": "cupy_backends.cuda.libs.cublas"})
    return cls("CUBLAS_STATUS_EXECUTION_FAILED")


def test_cupy_compiled_mode_tells_a_refusal_from_a_device_failure():
    backend = _cupy_backend()  # first: it skips with the reason where CuPy is not installed
    from cupy.cuda.memory import OutOfMemoryError
    from cupy_backends.cuda.api.runtime import CUDARuntimeError

    from arraybench.worker.prepare import _classify

    compiled = cell("elementwise", 100, backend="cupy", device="gpu", mode="compiled")
    refused = TypeError("Concrete ndarray is not supported in fusion.")  # _fusion_trace.pyx
    assert _classify(backend, compiled, "compiling", refused)[0] == "skipped"
    oom = _classify(backend, compiled, "compiling", OutOfMemoryError(1 << 30, 1 << 20))
    assert oom[0] == "failed" and "out of memory" in oom[1]
    for exc in (CUDARuntimeError(700), _cublas_error()):  # 700: cudaErrorIllegalAddress
        status, reason = _classify(backend, compiled, "timing", exc)
        assert status == "failed", reason
        assert type(exc).__name__ in reason


# -- finding 8: the JAX cache flush is sized from the GPU's L2 ------------------------------------

class _FakeLibcuda:
    """Stands for libcuda.so.1: ``cuInit``, ``cuDeviceGet``, ``cuDeviceGetAttribute`` (attribute 38,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE) and ``cuDeviceGetPCIBusId``, each returning CUDA_SUCCESS (0)
    and writing through the pointer it is given, as the C functions do."""

    def __init__(self, l2: int, bus_id: str = "0000:3B:00.0", fail: int = 0) -> None:
        self.l2, self.bus_id, self.fail = l2, bus_id, fail

    def cuInit(self, flags):
        return self.fail

    def cuDeviceGet(self, device, ordinal):
        device._obj.value = ordinal
        return 0

    def cuDeviceGetAttribute(self, value, attribute, device):
        value._obj.value = {38: self.l2, 75: 9, 76: 0}[attribute]
        return 0

    def cuDeviceGetPCIBusId(self, buf, length, device):
        buf.value = self.bus_id.encode()
        return 0


def test_the_cuda_driver_answers_for_l2_size_and_pci_bus_id():
    from arraybench.backends import gpu as cuda_driver

    driver = cuda_driver.Driver(_FakeLibcuda(50 * 2**20))
    assert cuda_driver.l2_cache_bytes(0, driver) == 50 * 2**20
    assert cuda_driver.pci_bus_id(0, driver) == "0000:3B:00.0"
    assert driver.attribute(0, 75) == 9  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    with pytest.raises(cuda_driver.DriverError):
        cuda_driver.Driver(_FakeLibcuda(0, fail=100))  # CUDA_ERROR_NO_DEVICE


def test_without_a_driver_the_cuda_facts_are_none():
    from arraybench.backends import gpu as cuda_driver

    if any(_loads(name) for name in cuda_driver._LIBRARIES):
        pytest.skip("this machine has an NVIDIA driver")
    assert cuda_driver.l2_cache_bytes(0) is None and cuda_driver.pci_bus_id(0) is None


def _loads(name: str) -> bool:
    import ctypes

    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


@pytest.mark.parametrize("l2, expected", [(40 * 2**20, 80 * 2**20), (None, 256 * 2**20)])
def test_the_jax_gpu_flush_buffer_is_twice_the_l2(monkeypatch, l2, expected):
    """Real JAX arrays on the CPU device; the driver's answer (or its absence) is faked."""
    from arraybench.backends import jax as jax_backend

    backend = backend_or_skip("jax")
    monkeypatch.setattr(jax_backend, "l2_cache_bytes", lambda ordinal: l2)
    made = []
    real_put = jax_backend.jax.device_put
    monkeypatch.setattr(jax_backend.jax, "device_put", lambda a, d: made.append(a.nbytes) or real_put(a, d))
    monkeypatch.setattr(backend, "device", "gpu")
    flush = backend.flush_cache()
    flush()
    assert made == [expected]


# -- finding 8: what decides GPU precision and memory is recorded --------------------------------

@pytest.mark.parametrize("environ, allocator, preallocate, fraction", [
    ({}, "default", True, 0.75),
    ({"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, "default", False, 0.75),
    ({"XLA_PYTHON_CLIENT_MEM_FRACTION": ".5"}, "default", True, 0.5),
    ({"XLA_CLIENT_MEM_FRACTION": "0.9"}, "default", True, 0.9),
    ({"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}, "platform", False, 0.75),
])
def test_jax_memory_settings_read_the_variables_xla_reads(environ, allocator, preallocate, fraction):
    """jaxlib/xla_client.py, generate_pjrt_gpu_plugin_options: the same variables and spellings."""
    pytest.importorskip("jax")
    from arraybench.backends.jax import memory_settings

    expected = {"allocator": allocator, "preallocate": preallocate, "fraction": fraction}
    assert memory_settings(environ) == expected


def test_worker_info_and_environment_record_the_gpu_variables(monkeypatch):
    from arraybench.host import machine

    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    assert machine.collect()["gpu_env"] == {"NVIDIA_TF32_OVERRIDE": "0",
                                                "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    jax_info = backend_or_skip("jax").info()
    assert jax_info["gpu_env"]["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert jax_info["gpu_env"]["NVIDIA_TF32_OVERRIDE"] == "0"
    assert backend_or_skip("torch").info()["gpu_env"] == {"NVIDIA_TF32_OVERRIDE": "0"}


# -- finding 9: GPU health in the record -----------------------------------------------------------

class FakeNvml:
    """Stands for the ``pynvml`` module of nvidia-ml-py on one GPU: the functions and constants
    gpu_health uses, with pynvml's units (MHz, °C, milliwatts, a clocks-event-reason bit mask).
    ``reasons`` is what nvmlDeviceGetCurrentClocksEventReasons answers next."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self, start_error: str | None = None) -> None:
        self.start_error = start_error
        self.reasons = 0x0
        self.asked_for = None

    def nvmlInit(self):
        if self.start_error:
            raise RuntimeError(self.start_error)

    def nvmlDeviceGetHandleByPciBusId(self, bus_id: bytes):
        self.asked_for = bus_id
        return "handle"

    def nvmlDeviceGetClockInfo(self, handle, kind):
        return {1: 1410, 2: 1593}[kind]

    def nvmlDeviceGetMaxClockInfo(self, handle, kind):
        return 1980

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return 61

    def nvmlDeviceGetPowerUsage(self, handle):
        return 312_456

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        raise RuntimeError("Not Supported")  # NVMLError_NotSupported on some boards

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        return self.reasons


def test_a_snapshot_reads_clocks_temperature_power_and_throttle_reasons():
    from arraybench.backends import gpu as gpu_health

    nvml = FakeNvml()
    monitor, reason = gpu_health.open_monitor("0000:3B:00.0", nvml)
    assert reason == "" and nvml.asked_for == b"0000:3B:00.0"
    nvml.reasons = 0x1 | 0x4 | 0x40  # idle (not a slowdown), SW power cap, HW thermal slowdown
    snap = monitor.snapshot()
    assert snap == {"sm_clock_mhz": 1410, "max_sm_clock_mhz": 1980, "mem_clock_mhz": 1593,
                    "temperature_c": 61, "power_w": 312.5, "power_limit_w": None,
                    "throttle": ["SW power cap", "HW thermal slowdown"]}
    nvml.reasons = 0x1 | 0x2 | 0x10  # idle, application clocks, sync boost: not throttling
    assert monitor.throttling() == []


def test_without_nvml_or_its_library_the_reason_is_kept():
    from arraybench.backends import gpu as gpu_health

    assert gpu_health.open_monitor(None)[1].startswith("the CUDA driver gave no PCI bus id")
    monitor, reason = gpu_health.open_monitor("0000:3B:00.0", FakeNvml("NVML Shared Library Not Found"))
    assert monitor is None and reason == "NVML cannot start (NVML Shared Library Not Found)"
    # The real module here: not installed, or installed with no driver to talk to.
    monitor, reason = gpu_health.open_monitor("0000:3B:00.0")
    if monitor is None:
        assert reason.startswith(("nvidia-ml-py is not installed", "NVML cannot start"))


class WatchedNumpy(NumpyBackend):
    """Stands for a GPU backend whose GPU NVML watches (``Backend.open_health`` succeeded)."""

    def __init__(self, nvml) -> None:
        from arraybench.backends import gpu as gpu_health

        super().__init__("cpu")
        self.device = "gpu"
        self.health, self.health_note = gpu_health.open_monitor("0000:3B:00.0", nvml)


def test_each_cell_records_gpu_health_before_and_after_and_counts_throttled_samples():
    from arraybench.analysis.aggregate import aggregate
    from arraybench.worker.prepare import finish

    nvml = FakeNvml()
    backend = WatchedNumpy(nvml)
    c = cell("elementwise", 1000, device="gpu")
    p = prepare(backend, REGISTRY["elementwise"], c, TimerSettings(min_samples=4, max_samples=4, warmup_s=0),
                ReferenceCache())
    assert p.replicate.gpu_health["before"]["throttle"] == []
    p.run.sample()
    nvml.reasons = 0x4  # the power cap kicks in for the rest of the cell
    while not p.run.done:
        p.run.sample()
    shard = finish(backend, p)
    health = shard.gpu_health
    assert health["after"]["throttle"] == ["SW power cap"]
    assert (health["samples"], health["throttled_samples"], health["reasons"]) == (4, 3, ["SW power cap"])
    rec = aggregate(c, [shard, shard], 2, 0.5)
    assert rec.gpu_health["throttled_samples"] == 6 and rec.gpu_health["samples"] == 8
    assert "6 of 8 samples taken while the GPU was throttled (SW power cap)" in " ".join(rec.warnings)
    assert rec.to_row()["gpu_health"].startswith("{")


def test_a_gpu_without_a_monitor_says_why_in_the_record():
    from arraybench.analysis.aggregate import aggregate
    from ..measuring import measure_cell

    backend = NumpyBackend("cpu")
    backend.device, backend.health_note = "gpu", "nvidia-ml-py is not installed"
    c = cell("elementwise", 1000, device="gpu")
    shard = measure_cell(backend, REGISTRY["elementwise"], c, QUICK, ReferenceCache())
    assert shard.gpu_health == {"unavailable": "nvidia-ml-py is not installed"}
    assert aggregate(c, [shard], 1, 0.5).gpu_health == {"unavailable": "nvidia-ml-py is not installed"}


def test_cupy_times_a_callable_object_with_its_own_tool():
    """``cupyx.profiler.benchmark`` names its result ``fn.__name__`` unless given ``name=``; the
    doctor's ``Matmul`` is an object without one, and the harness check failed so on the first GPU
    run (an H200, 2026-11-26: ``AttributeError: 'Matmul' object has no attribute '__name__'``)."""
    from arraybench.worker.selfcheck import Matmul

    backend = backend_or_skip("cupy", "gpu")
    op = Matmul(backend, 64, "float32")
    assert not hasattr(op, "__name__")
    batches, tool = backend.library_timing(op, 0.01)
    assert batches and all(t > 0 for t in batches) and tool.startswith("cupyx.profiler.benchmark")
