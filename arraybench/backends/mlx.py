"""MLX (Apple's array library) on the CPU or the GPU (Metal on Apple silicon; CUDA where MLX
was built with it), eager, under ``mx.compile``, with gradients by ``mx.grad``.

MLX is lazy: an operation records a graph and computes nothing until ``mx.eval`` (or a read)
asks for its result. A timed call that only built the graph would time nothing, and a batch
synced once at its end would compute only its last call. So every call this backend times ends
with ``mx.eval`` on everything it returned (``evaluated``), inside the timed call.
"""

from __future__ import annotations

import types
from typing import Any, Callable

import mlx.core as mx
import numpy as np

from .base import Backend, Unavailable, WrongResult, batched_loop
from .cpu import cpu_flush, cpu_threads_info

#: NumPy's dtype names to MLX's dtypes (MLX has no complex128).
_DTYPES = {name: getattr(mx, name) for name in (
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64") if hasattr(mx, name)}
_DTYPES["bool"] = mx.bool_

#: The dtypes the GPU cannot hold: Metal has no 64-bit floating point, and MLX has no float64
#: kernels on its GPU backends ("float64 is not supported on the GPU").
GPU_UNSUPPORTED = ("float64", "complex128")

#: The Array API names ``mlx.core`` spells otherwise (it follows NumPy's older names).
_ARRAY_API_ALIASES = {
    "concat": "concatenate", "permute_dims": "transpose", "pow": "power", "acos": "arccos",
    "asin": "arcsin", "atan": "arctan", "acosh": "arccosh", "asinh": "arcsinh",
    "atanh": "arctanh", "atan2": "arctan2", "bitwise_invert": "bitwise_invert",
}


def mlx_dtype(name: str) -> Any:
    """MLX's dtype for a NumPy dtype name; ``Unavailable`` for one MLX does not have."""
    try:
        return _DTYPES[np.dtype(name).name if name != "bool" else "bool"]
    except (KeyError, TypeError):
        raise Unavailable(f"MLX has no {name} dtype") from None


def array_api_namespace() -> types.ModuleType:
    """``mlx.core`` with the Array API's names where MLX spells them the NumPy way.

    MLX implements no Array API namespace of its own (``mx.array`` has no ``__array_namespace__``
    and array_api_compat does not wrap it); ``mlx.core`` is close to NumPy's, and a workload whose
    Array API code MLX lacks gives MLX its own spelling with ``@wl.override("mlx")``.
    """
    ns = types.ModuleType("arraybench.mlx_array_api", "mlx.core with Array API names")
    ns.__dict__.update({k: v for k, v in vars(mx).items() if not k.startswith("__")})
    for standard, own in _ARRAY_API_ALIASES.items():
        if not hasattr(mx, standard) and hasattr(mx, own):
            setattr(ns, standard, getattr(mx, own))
    if not hasattr(mx, "astype"):
        ns.astype = lambda x, dtype, /, *, copy=True, device=None: x.astype(dtype)
    return ns


def evaluated(op: Callable[..., Any]) -> Callable[..., Any]:
    """``op`` followed by ``mx.eval`` of everything it returned, in the same call."""
    def call(*args: Any, **kwargs: Any) -> Any:
        out = op(*args, **kwargs)
        _eval(out)
        return out

    return call


def _eval(out: Any) -> None:
    # mx.eval takes arrays and trees of them (tuples, lists, dicts); other leaves (a Python
    # float a workload returns) are left out rather than refused.
    if isinstance(out, mx.array):
        mx.eval(out)
    elif isinstance(out, (tuple, list)):
        arrays = [o for o in out if isinstance(o, (mx.array, tuple, list, dict))]
        if arrays:
            mx.eval(arrays)
    elif isinstance(out, dict):
        mx.eval(out)


def gpu_unavailable_reason() -> str | None:
    """Why MLX has no GPU here, in MLX's own terms, or None where it has one (Metal, or CUDA in
    an ``mlx[cuda]`` build)."""
    if mx.metal.is_available():
        return None
    cuda = getattr(mx, "cuda", None)
    if cuda is not None and getattr(cuda, "is_available", lambda: False)():
        return None
    return (f"MLX {mx.__version__} has no GPU backend here (mlx.core.metal.is_available() is False: "
            "Metal needs Apple silicon; on Linux the GPU build is mlx[cuda])")


class MlxBackend(Backend):
    name = "mlx"
    label = "MLX"
    grad_method = "autodiff (mx.grad)"
    gradient = "autodiff"
    compile_method = "mx.compile"
    device_timer_note = "wall clock + mx.eval (MLX has no device-event API)"

    def __init__(self, device: str, *, allow_tf32: bool = False) -> None:
        super().__init__(device, allow_tf32=allow_tf32)
        if device == "cpu":
            self.mx_device = mx.cpu
        elif device == "gpu":
            why = gpu_unavailable_reason()
            if why:
                raise Unavailable(why)
            self.mx_device = mx.gpu
            self.health_note = "MLX's GPU is not watched through NVML"
        else:
            raise Unavailable(f"MLX has no device {device!r}")
        # Every operation without its own stream= runs on the default device: set once, here,
        # so that a workload's mx.* calls run where its inputs are.
        mx.set_default_device(self.mx_device)
        self._array_api: types.ModuleType | None = None
        self.sync = _eval

    def unsupported_dtype(self, dtype: str) -> str | None:
        if self.device == "gpu" and dtype in GPU_UNSUPPORTED:
            return (f"MLX has no {dtype} on the GPU (Metal has no 64-bit floating point); "
                    "--dtype float32 runs it")
        return None

    def namespace(self, kind: str = "native") -> Any:
        if kind == "array_api":
            if self._array_api is None:
                self._array_api = array_api_namespace()
            return self._array_api
        return mx

    def evaluated(self, op: Callable[..., Any]) -> Callable[..., Any]:
        return evaluated(op)

    def explain_wrong(self, wrong: WrongResult) -> str | None:
        """A float64 result on the CPU that is wrong only because this MLX lacks float64 for what
        the workload called (``mlx_float64``): its FFTs, as it has no complex128, whose float32
        result cannot be float64's; or float64 functions it computes with float32 accuracy, where
        the workload is right with them computed in float64 and its judged result is a plain
        eager call's."""
        if self.device != "cpu" or wrong.dtype != "float64":
            return None
        from . import mlx_float64

        ffts = mlx_float64.fft_without_complex128(wrong.rerun, wrong.namespace)
        if ffts:
            names = "/".join(f"fft.{name}" for name in ffts)
            return (f"MLX {mx.__version__} has no complex128: its {names} of a float64 array "
                    f"computes in complex64, so the result cannot be float64 ({wrong.error}); "
                    "--dtype float32 runs it")
        approximated = mlx_float64.float32_accurate()
        if not approximated:
            return None  # a fixed MLX: its verdicts stand as they are
        called: list[str] = []
        corrected = wrong.rerun(mlx_float64.in_float64(wrong.namespace, approximated, called))
        if not called or not wrong.right(corrected) or not wrong.same(wrong.rerun(wrong.namespace)):
            return None
        names = "/".join(dict.fromkeys(called))
        return (f"MLX {mx.__version__} computes float64 {names} with float32 accuracy on the CPU "
                f"({mlx_float64.ISSUE}): {wrong.error}; with {names} computed in float64 the "
                "result is within it; --dtype float32 runs it")

    def asarray(self, host: np.ndarray) -> Any:
        x = mx.array(np.ascontiguousarray(host), dtype=mlx_dtype(host.dtype.name))
        mx.eval(x)
        return x

    def from_numpy(self, host: np.ndarray) -> Any:
        # mx.array(a float64 NumPy array) alone makes float32: the dtype is always given.
        return mx.array(host, dtype=mlx_dtype(host.dtype.name))

    def copy_from_numpy(self, host: np.ndarray) -> Any:
        return mx.array(host, dtype=mlx_dtype(host.dtype.name))

    def from_list(self, data: list, dtype: str) -> Any:
        return mx.array(data, dtype=mlx_dtype(dtype))

    def to_numpy(self, x: Any) -> np.ndarray:
        if isinstance(x, mx.array):
            return np.array(x)  # evaluates it, and copies out of MLX's buffer
        return np.asarray(x)

    def dtype_name(self, x: Any) -> str:
        name = str(x.dtype).rsplit(".", 1)[-1]
        return "bool" if name == "bool_" else name

    def clone(self, x: Any) -> Any:
        if isinstance(x, mx.array):
            copy = mx.array(x)
            mx.eval(copy)
            return copy
        return super().clone(x)

    def copy_into(self, dst: Any, src: Any) -> None:
        if isinstance(dst, mx.array):
            dst[...] = src
            mx.eval(dst)
        else:
            super().copy_into(dst, src)

    def memory_range(self, x: Any) -> tuple[int, int] | None:
        return super().memory_range(x) if isinstance(x, np.ndarray) else None

    def flush_cache(self) -> Callable[[], None] | None:
        if self.device == "cpu":
            return cpu_flush()
        # MLX has no API for the GPU's cache size; 256 MiB is larger than any Apple GPU's.
        buf = mx.zeros((64 * 1024**2,), dtype=mx.float32)
        mx.eval(buf)

        def flush() -> None:
            mx.eval(buf + 1.0)

        return flush

    def library_timing(self, fn: Callable[[], Any], min_time_s: float = 0.05) -> tuple[list[float], str]:
        """MLX has no benchmarking tool; its examples time ``mx.eval(f(x))`` in a loop."""
        return batched_loop(lambda: _eval(fn()), min_time_s), "an mx.eval loop"

    def grad(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return mx.grad(fn)

    def compile(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return mx.compile(fn)

    def free(self) -> None:
        if hasattr(mx, "clear_cache"):  # MLX >= 0.26; before, mx.metal.clear_cache on Metal only
            mx.clear_cache()

    def is_out_of_memory(self, exc: BaseException) -> bool:
        # The Metal allocator: "[metal::malloc] Attempting to allocate N bytes which is greater
        # than the maximum allowed buffer size"; the CPU's: "[malloc_or_wait] Unable to allocate".
        text = str(exc).lower()
        return isinstance(exc, MemoryError) or (
            isinstance(exc, RuntimeError) and ("allocate" in text and ("malloc" in text or "unable" in text)))

    def device_peak(self, call: Callable[[], Any]) -> tuple[int | None, str] | None:
        if not hasattr(mx, "reset_peak_memory"):  # MLX >= 0.24; before, under mx.metal
            return None
        before = int(mx.get_active_memory())
        mx.reset_peak_memory()
        result = call()
        peak = int(mx.get_peak_memory())
        del result
        return max(peak - before, 0), "MLX's allocator: get_peak_memory over one call less active memory before"

    def memory_available(self) -> tuple[int, int] | None:
        if self.device == "cpu":
            return super().memory_available()
        info = mx.metal.device_info() if mx.metal.is_available() else {}
        total = info.get("max_recommended_working_set_size") or info.get("memory_size")
        if not total:
            return None
        return int(total) - int(mx.get_active_memory()), int(total)

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "library": "mlx",
            "version": mx.__version__,
            "default_device": str(mx.default_device()),
            "metal_available": bool(mx.metal.is_available()),
            "timer": self.device_timer_note,
            "gpu_dtypes_missing": list(GPU_UNSUPPORTED),
        }
        try:
            device_info = mx.device_info() if hasattr(mx, "device_info") else mx.metal.device_info()
        except Exception:  # a device that cannot describe itself must not cost the record
            device_info = {}
        out["device_name"] = "cpu" if self.device == "cpu" else str(
            device_info.get("device_name") or device_info.get("architecture") or "MLX GPU")
        if self.device != "cpu":
            out["device_info"] = {k: v for k, v in device_info.items() if isinstance(v, (str, int, float))}
            out["gpu_monitor"] = self.health_note
        out.update(cpu_threads_info())
        return out
