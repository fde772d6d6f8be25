"""MLX (Apple's array library) on the CPU or the GPU (Metal, or CUDA where built with it), and its
float64 functions that compute with float32 accuracy on the CPU.

MLX is lazy: nothing computes until ``mx.eval`` asks for a result, so every call this backend times
ends with ``mx.eval`` on everything it returned (``evaluated``), inside the timed call.

MLX's CPU ``sin``, ``cos``, ``exp``, ``erf``, ``erfinv`` (and ops built on ``exp``) use float32
approximations for float64 (ml-explore/mlx#3047), and it has no complex128, so its FFTs of float64
compute in complex64. A float64 workload calling one is judged ``wrong``, truly; the backend turns
that into a skip only where a rerun shows the bug explains it all (``MlxBackend.explain_wrong``).
Which functions are float32-accurate is asked of this MLX, not read from its version.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable, Iterable

import mlx.core as mx
import numpy as np

from .base import METAL_MISSING, Backend, Unavailable, WrongResult, module_copy
from .cpu import cpu_threads_info

#: NumPy's dtype names to MLX's dtypes (MLX has no complex128).
_DTYPES = {name: getattr(mx, name) for name in (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64") if hasattr(mx, name)}
_DTYPES["bool"] = mx.bool_

#: The Array API names ``mlx.core`` spells otherwise (it follows NumPy's older names).
_ARRAY_API_ALIASES = {
    "concat": "concatenate", "permute_dims": "transpose", "pow": "power", "acos": "arccos",
    "asin": "arcsin", "atan": "arctan", "acosh": "arccosh", "asinh": "arcsinh",
    "atanh": "arctanh", "atan2": "arctan2",
}


def mlx_dtype(name: str) -> Any:
    """MLX's dtype for a NumPy dtype name; ``Unavailable`` for one MLX does not have."""
    try:
        return _DTYPES[np.dtype(name).name]
    except (KeyError, TypeError):
        raise Unavailable(f"MLX has no {name} dtype") from None


@functools.cache
def array_api_namespace() -> types.ModuleType:
    """``mlx.core`` with the Array API's names where MLX spells them the NumPy way (MLX has no
    Array API namespace; a workload gives MLX its own spelling with ``@wl.override("mlx")``)."""
    ns = module_copy(mx, "arraybench.mlx_array_api")
    for standard, own in _ARRAY_API_ALIASES.items():
        if not hasattr(mx, standard) and hasattr(mx, own):
            setattr(ns, standard, getattr(mx, own))
    if not hasattr(mx, "astype"):
        ns.astype = lambda x, dtype, /, *, copy=True, device=None: x.astype(dtype)
    return ns


def _eval(out: Any) -> None:
    # mx.eval takes arrays and trees of them; other leaves (a Python float) are left out.
    if isinstance(out, (tuple, list)):
        out = [o for o in out if isinstance(o, (mx.array, tuple, list, dict))]
    if isinstance(out, (mx.array, dict)) or isinstance(out, list) and out:
        mx.eval(out)


class MlxBackend(Backend):
    name = "mlx"
    label = "MLX"
    grad_method = "autodiff (mx.grad)"
    gradient = "autodiff"
    compile_method = "mx.compile"
    grad = staticmethod(mx.grad)
    compile = staticmethod(mx.compile)
    device_timer_note = "wall clock + mx.eval (MLX has no device-event API)"
    #: "[metal::malloc] Attempting to allocate N bytes ..."; "[malloc_or_wait] Unable to allocate".
    out_of_memory_text = ("malloc] attempting to allocate", "unable to allocate")
    timing_loop = "an mx.eval loop"

    def __init__(self, device: str, *, allow_tf32: bool = False) -> None:
        super().__init__(device, allow_tf32=allow_tf32)
        if device == "cpu":
            self.mx_device = mx.cpu
        else:
            cuda = getattr(mx, "cuda", None)  # the GPU of an mlx[cuda] build
            if not mx.metal.is_available() and not (cuda and getattr(cuda, "is_available", lambda: False)()):
                raise Unavailable(f"MLX {mx.__version__} has no GPU backend here (mlx.core.metal.is_available() "
                                  "is False: Metal needs Apple silicon; on Linux the GPU build is mlx[cuda])")
            self.mx_device = mx.gpu
            self.health_note = "MLX's GPU is not watched through NVML"
            # Nor has MLX float64 kernels on its CUDA backend ("float64 is not supported on the GPU").
            self.metal_lacks = "MLX has no {dtype} on the GPU"
        # So that a workload's mx.* calls run where its inputs are.
        mx.set_default_device(self.mx_device)
        self.sync = _eval

    def namespace(self, kind: str = "native") -> Any:
        return array_api_namespace() if kind == "array_api" else mx

    def evaluated(self, op: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            out = op(*args, **kwargs)
            _eval(out)
            return out

        return call

    def explain_wrong(self, wrong: WrongResult) -> str | None:
        """A float64 result on the CPU wrong only because this MLX lacks float64 for what the
        workload called: its FFTs (no complex128), or functions it computes with float32 accuracy,
        where the workload is right with them computed in float64 and its judged result is a plain
        eager call's."""
        if self.device != "cpu" or wrong.dtype != "float64":
            return None
        ffts = fft_without_complex128(wrong.rerun, wrong.namespace)
        if ffts:
            names = "/".join(f"fft.{name}" for name in ffts)
            return (f"MLX {mx.__version__} has no complex128: its {names} of a float64 array "
                    f"computes in complex64, so the result cannot be float64 ({wrong.error}); "
                    "--dtype float32 runs it")
        approximated = float32_accurate()
        if not approximated:
            return None  # a fixed MLX: its verdicts stand as they are
        called: list[str] = []
        corrected = wrong.rerun(in_float64(wrong.namespace, approximated, called))
        if not called or not wrong.right(corrected) or not wrong.same(wrong.rerun(wrong.namespace)):
            return None
        names = "/".join(dict.fromkeys(called))
        return (f"MLX {mx.__version__} computes float64 {names} with float32 accuracy on the CPU "
                f"({ISSUE}): {wrong.error}; with {names} computed in float64 the "
                "result is within it; --dtype float32 runs it")

    def asarray(self, host: np.ndarray) -> Any:
        return self.evaluated(self.from_numpy)(np.ascontiguousarray(host))

    def from_numpy(self, host: np.ndarray) -> Any:
        # mx.array(a float64 NumPy array) alone makes float32: the dtype is always given.
        return mx.array(host, dtype=mlx_dtype(host.dtype.name))

    copy_from_numpy = from_numpy

    def from_list(self, data: list, dtype: str) -> Any:
        return mx.array(data, dtype=mlx_dtype(dtype))

    def to_numpy(self, x: Any) -> np.ndarray:
        # np.array evaluates an MLX array, and copies out of its buffer.
        return np.array(x) if isinstance(x, mx.array) else np.asarray(x)

    def clone(self, x: Any) -> Any:
        return self.evaluated(mx.array)(x) if isinstance(x, mx.array) else super().clone(x)

    def copy_into(self, dst: Any, src: Any) -> None:
        if isinstance(dst, mx.array):
            dst[...] = src
            mx.eval(dst)
        else:
            super().copy_into(dst, src)

    def free(self) -> None:
        if hasattr(mx, "clear_cache"):  # MLX >= 0.26; before, mx.metal.clear_cache on Metal only
            mx.clear_cache()

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
            "gpu_dtypes_missing": list(METAL_MISSING),
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


# -- float64 on the CPU ---------------------------------------------------------------------------

#: The upstream issue a skip's reason names.
ISSUE = "ml-explore/mlx#3047"

#: Relative error above which a float64 function is not float64-accurate (float64 rounds at ~1e-16,
#: float32 approximations at ~1e-8: on MLX 0.32.4, sin 8e-7, erf 3e-4 at worst).
_NOT_FLOAT64 = 1e-12


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, (list, tuple)) else axis


def _host_versions() -> dict[str, Callable[..., np.ndarray]]:
    """The functions MLX 0.32.4 computes float64 with float32 accuracy on the CPU, in the reason's
    order, each with its float64-accurate host version, with MLX's signature (less ``stream``)."""
    from scipy import special  # only on a wrong verdict, not at every MLX worker's start

    return {
        "sin": np.sin, "cos": np.cos, "exp": np.exp, "erf": special.erf, "erfinv": special.erfinv,
        "sigmoid": special.expit, "logaddexp": np.logaddexp,
        "softmax": lambda a, axis=None, *, precise=False: special.softmax(a, axis=_axis(axis)),
        "logsumexp": lambda a, axis=None, keepdims=False: special.logsumexp(
            a, axis=_axis(axis), keepdims=keepdims),
    }


@functools.cache
def float32_accurate() -> tuple[str, ...]:
    """Those of ``_host_versions`` that this MLX computes with float32 accuracy for float64 on the
    CPU, each compared once with its host version on 39 points in (-0.95, 0.95)."""
    x = np.linspace(-0.95, 0.95, 39)
    found = []
    for name, exact in _host_versions().items():
        own = getattr(mx, name, None)
        if own is None:
            continue
        args = (x, x[::-1].copy()) if name == "logaddexp" else (x,)
        got = np.array(own(*(mx.array(a, dtype=mx.float64) for a in args), stream=mx.cpu))
        want = exact(*args)
        if np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-300)) > _NOT_FLOAT64:
            found.append(name)
    return tuple(found)


def _on_float64(module: Any, suffix: str, names: Iterable[str], called: list[str],
                instead: Callable[[str], Callable[..., Any]] | None = None) -> types.ModuleType:
    """A copy of ``module`` whose functions ``names`` append their name to ``called`` where they get
    a float64 array, and then call ``instead(name)`` in their place (where given)."""
    ns = module_copy(module, getattr(module, "__name__", "mlx.core") + suffix)

    def watched(name: str, own: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if not any(isinstance(a, mx.array) and a.dtype == mx.float64 for a in args):
                return own(*args, **kwargs)
            called.append(name)
            return (instead(name) if instead else own)(*args, **kwargs)

        return call

    for name in names:
        if callable(getattr(module, name, None)):
            setattr(ns, name, watched(name, getattr(module, name)))
    return ns


def in_float64(namespace: Any, names: tuple[str, ...], called: list[str]) -> types.ModuleType:
    """``namespace`` with each of ``names`` computed in float64 on the host where it gets a
    float64 array (appended to ``called`` each time): for an eager, untimed call only."""
    host = _host_versions()

    def on_host(name: str) -> Callable[..., Any]:
        def call(*args: Any, stream: Any = None, **kwargs: Any) -> Any:
            values = [np.array(a) if isinstance(a, mx.array) else a for a in args]
            return mx.array(np.asarray(host[name](*values, **kwargs), dtype=np.float64), dtype=mx.float64)

        return call

    return _on_float64(namespace, "_float64", names, called, on_host)


def fft_without_complex128(rerun: Callable[[Any], Any], namespace: Any) -> tuple[str, ...]:
    """The FFTs of float64 arrays a workload (called again) made, where that explains its float32 or
    complex64 result as MLX's missing complex128; else empty."""
    if hasattr(mx, "complex128") or not hasattr(namespace, "fft"):
        return ()
    called: list[str] = []  # the fft functions that got a float64 array (each computes in complex64)
    ns = module_copy(namespace, getattr(namespace, "__name__", "mlx.core") + "_fft_seen")
    ns.fft = _on_float64(namespace.fft, "", [name for name in vars(namespace.fft) if not name.startswith("_")
                                              and "freq" not in name and "shift" not in name], called)
    out = rerun(ns)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    narrow = any(np.asarray(o).dtype in (np.float32, np.complex64) for o in outs)
    return tuple(dict.fromkeys(called)) if called and narrow else ()
