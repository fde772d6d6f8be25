"""CuPy: NumPy's API on an NVIDIA GPU. It installs anywhere but needs a driver and a device at
run time: both are checked when the backend opens, their absence a one-line reason."""

from __future__ import annotations

import os
import re
import traceback
from typing import Any, Callable

import numpy as np

from .base import Backend, Unavailable, gpu_env, tf32_in_effect
from .gpu import CudaEvents, SpinKernel, first_line

try:
    import cupy
except Exception as exc:  # a broken CUDA install can fail at import, not only later
    raise Unavailable(f"CuPy cannot be imported ({type(exc).__name__}: {exc})") from None


def _cuda_reason(exc: BaseException) -> str:
    return f"no usable NVIDIA GPU for CuPy ({first_line(exc)})"


#: The blocking kernel queued before each timed call of the device pass (``CudaEvents.hold``).
_SPIN_SOURCE = r"""
extern "C" __global__ void arraybench_spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""


#: CuPy's fusion types, as its refusals name them ("object of type '_ArrayProxy' has no len()").
_FUSION_TYPES = re.compile(r"\b_(?:Fusion\w+|ArrayProxy|ScalarProxy|VariableProxy)\b")


def is_fuse_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is CuPy saying it cannot fuse a function, not a bug in the function: raised
    by CuPy's own code as it traces (the innermost frame is in the cupy package), or naming fusion
    or one of its types. An error of CUDA or a CUDA library (matched by module, as the bindings load
    lazily) is the device's, but cupy.fuse's ``CompileException`` is the fuser's limit."""
    if any((cls.__module__ or "").startswith(("cupy_backends.cuda.", "cupy.cuda."))
           and cls.__name__ != "CompileException" for cls in type(exc).__mro__):
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    if frames and {"cupy", "cupyx"} & set(os.path.normpath(frames[-1].filename).split(os.sep)):
        return True
    text = str(exc)
    return "fusion" in text.lower() or "cupy.fuse" in text or bool(_FUSION_TYPES.search(text))


class CupyBackend(Backend):
    name = "cupy"
    label = "CuPy"
    native = cupy
    compile_method = "cupy.fuse"
    #: cupy.fuse makes element-wise Python one kernel; others raise at the first call.
    compile = staticmethod(cupy.fuse)
    #: The pool's ``OutOfMemoryError``; ``cudaErrorMemoryAllocation`` outside it, or a CUDA library's
    #: ``..._STATUS_ALLOC_FAILED``.
    out_of_memory_types = (cupy.cuda.memory.OutOfMemoryError,)
    out_of_memory_text = ("cudaerrormemoryallocation", "alloc_failed", "out of memory")
    device_timer_note = "CUDA events"

    def __init__(self, device: str, *, allow_tf32: bool = False) -> None:
        if device != "gpu":
            raise Unavailable("CuPy runs only on NVIDIA GPUs")
        super().__init__(device, allow_tf32=allow_tf32)
        self._spin: SpinKernel | None = None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:
            raise Unavailable(_cuda_reason(exc)) from None
        if count < 1:
            raise Unavailable("no NVIDIA GPU visible to CuPy")
        try:
            self.cuda_device = cupy.cuda.Device(0)
            self.cuda_device.use()
            cupy.zeros(1).sum().get()  # fail here, not mid-benchmark, if kernels cannot run
        except Exception as exc:
            raise Unavailable(_cuda_reason(exc)) from None
        self.sync = lambda _result: cupy.cuda.get_current_stream().synchronize()
        self.open_health(self.cuda_device.id, self.cuda_device.pci_bus_id)

    def asarray(self, host: np.ndarray) -> Any:
        x = cupy.asarray(np.ascontiguousarray(host))
        cupy.cuda.get_current_stream().synchronize()
        return x

    # The library's own calls, as a user makes them: ``cupy.array(data, dtype)`` builds from a list.
    from_numpy = staticmethod(cupy.asarray)
    copy_from_numpy = from_list = staticmethod(cupy.array)
    to_numpy = staticmethod(cupy.asnumpy)

    def reduced_precision(self, dtype: str) -> str | None:
        if dtype not in ("float32", "complex64"):
            return None
        try:
            # The compute type CuPy's matmuls will use: CUPY_TF32, read once, on a GPU of compute
            # capability 8.0 or more (cupy/_core/_routines_linalg.pyx, get_compute_type).
            from cupy._core import _routines_linalg as linalg

            allowed = linalg.get_compute_type(np.dtype(dtype)) == linalg.COMPUTE_TYPE_TF32
        except (ImportError, AttributeError):
            allowed = int(os.environ.get("CUPY_TF32", "0") or 0) > 0
        cc = str(self.cuda_device.compute_capability)
        return "tf32" if tf32_in_effect(allowed, dtype, (int(cc[:-1] or 0), int(cc[-1:] or 0))) else None

    def clone(self, x: Any) -> Any:
        return x.copy() if isinstance(x, cupy.ndarray) else super().clone(x)

    def copy_into(self, dst: Any, src: Any) -> None:
        if isinstance(dst, cupy.ndarray):
            cupy.copyto(dst, src)
        else:
            super().copy_into(dst, src)

    def memory_range(self, x: Any) -> tuple[int, int] | None:
        if not isinstance(x, cupy.ndarray):
            return super().memory_range(x)
        mem = x.data.mem  # the allocation: views of one array share it
        return (mem.ptr, mem.ptr + mem.size) if mem is not None else None

    def device_timer(self):
        if self._spin is None:
            kernel = cupy.RawKernel(_SPIN_SOURCE, "arraybench_spin")  # compiled at its first launch

            def spin_cycles(cycles: int) -> None:
                kernel((1,), (1,), (np.int64(cycles),))  # on the current stream, as the timed calls

            self._spin = SpinKernel(spin_cycles, cupy.cuda.Event, cupy.cuda.get_elapsed_time)
        return CudaEvents(cupy.cuda.Event, cupy.cuda.get_elapsed_time, spin=self._spin)

    def library_timing(self, fn: Callable[[], Any], min_time_s: float = 0.05) -> tuple[list[float], str]:
        """``cupyx.profiler.benchmark``'s ``gpu_times`` (its ``cpu_times`` stop before the wait)."""
        from cupyx.profiler import benchmark

        # ``name``: cupyx reads ``fn.__name__`` otherwise, which a callable object lacks.
        result = benchmark(fn, n_repeat=100_000, n_warmup=10, max_duration=min_time_s,
                           name=getattr(fn, "__name__", type(fn).__name__))
        return [float(t) for t in result.gpu_times[0]], "cupyx.profiler.benchmark (gpu_times)"

    def l2_bytes(self) -> int:
        props = cupy.cuda.runtime.getDeviceProperties(self.cuda_device.id)
        return int(props.get("l2CacheSize", 0)) or super().l2_bytes()

    def compile_refusal(self, exc: BaseException) -> str | None:
        return "" if is_fuse_refusal(exc) else None

    def free(self) -> None:
        cupy.get_default_memory_pool().free_all_blocks()

    def device_peak(self, call: Callable[[], Any]) -> tuple[int | None, str] | None:
        # The pool keeps every block until freed: emptied first, it holds one call's peak after.
        pool = cupy.get_default_memory_pool()
        pool.free_all_blocks()
        before = pool.used_bytes()
        result = call()
        held = pool.total_bytes()
        del result
        return max(held - before, 0), ("CuPy's memory pool: total_bytes after one call, emptied "
                                       "before, less used_bytes before")

    def memory_available(self) -> tuple[int, int] | None:
        free, total = cupy.cuda.runtime.memGetInfo()
        return int(free), int(total)

    def info(self) -> dict[str, Any]:
        props = cupy.cuda.runtime.getDeviceProperties(self.cuda_device.id)
        name = props.get("name", b"")
        return {
            "library": "cupy",
            "version": cupy.__version__,
            "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
            "device_name": name.decode() if isinstance(name, bytes) else str(name),
            "device_memory_gib": round(int(props.get("totalGlobalMem", 0)) / 1024**3, 1),
            "allow_tf32": self.allow_tf32,
            "reduced_precision_float32": self.reduced_precision("float32"),
            "gpu_monitor": "NVML" if self.health else self.health_note,
            "timer": self.device_timer_note,
            "gpu_env": gpu_env("CUPY_TF32", "CUPY_GPU_MEMORY_LIMIT", "CUPY_ACCELERATORS"),
        }
