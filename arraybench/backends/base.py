"""What every backend provides: one library on one device, behind a small interface. A backend
module imports its library at module level, and only a worker imports a backend module."""

from __future__ import annotations

import abc
import os
import time
import types
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal

import numpy as np

from .gpu import CudaEvents, GpuMonitor, open_monitor

#: How a gradient was computed (``Backend.gradient``, and a replicate's record of it).
Gradient = Literal["autodiff", "finite_differences", "analytic"]


def tf32_in_effect(allowed: bool, dtype: str, compute_capability: tuple[int, int] | None) -> bool:
    """Whether a library that allows TF32 really runs float32 matmuls in it on this GPU: from
    compute capability 8.0, for float32 and complex64, unless ``NVIDIA_TF32_OVERRIDE=0``."""
    return (allowed and dtype in ("float32", "complex64") and compute_capability is not None
            and os.environ.get("NVIDIA_TF32_OVERRIDE", "").strip() != "0" and compute_capability >= (8, 0))


def gpu_env(*extra: str) -> dict[str, str]:
    """The GPU variables every CUDA library reads (the whole list is ``host.threads.GPU``) and the
    library's own ``extra`` that are set here, for ``info()``."""
    gpu = ("NVIDIA_TF32_OVERRIDE", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")
    return {k: os.environ[k] for k in (*gpu, *extra) if k in os.environ}


def module_copy(module: Any, name: str | None = None) -> types.ModuleType:
    """A module (named ``name``, else as ``module``) holding ``module``'s names, to change some."""
    copy = types.ModuleType(name or module.__name__, module.__doc__)
    copy.__dict__.update({k: v for k, v in vars(module).items() if k not in ("__name__", "__doc__")})
    return copy


#: The dtypes an Apple GPU cannot hold: Metal has no 64-bit floating point.
METAL_MISSING = ("float64", "complex128")


class Unavailable(Exception):
    """The library or the device cannot be used here; the message is the one-line reason."""


@dataclass(frozen=True)
class WrongResult:
    """A first result the check called wrong, and eager, untimed means to look into it."""

    dtype: str
    #: The namespace the workload is called with.
    namespace: Any
    #: The error against the tolerance, as the check said it.
    error: str
    #: The workload called once more with the namespace given, on fresh inputs: its host result.
    rerun: Callable[[Any], Any]
    #: Whether the check accepts a host result against the float64 reference.
    right: Callable[[Any], bool]
    #: Whether the judged result equals a host result within the check's tolerance.
    same: Callable[[Any], bool]


class Backend(abc.ABC):
    """One array library bound to one device. Subclasses open the device in ``__init__`` (or raise
    ``Unavailable`` with the reason) and implement the abstract methods."""

    name: ClassVar[str]
    label: ClassVar[str]
    #: How gradients are computed where the workload gives none of its own, as results show it.
    grad_method: ClassVar[str] = "finite differences (forward, one pass per parameter)"
    gradient: ClassVar[Gradient] = "finite_differences"
    #: Why device timing is unavailable, when it is.
    device_timer_note: ClassVar[str] = "wall clock (computation is synchronous)"

    def __init__(self, device: str, *, allow_tf32: bool = False) -> None:
        self.device = device  # "cpu" or "gpu" (``DEVICES``); a library with one refuses the other
        self.allow_tf32 = allow_tf32
        #: The GPU's health (NVML) where it can be read; ``health_note`` says why not.
        self.health: GpuMonitor | None = None
        self.health_note = ""
        #: The CUDA device number (after CUDA_VISIBLE_DEVICES), on a GPU.
        self.cuda_ordinal: int | None = None

    def open_health(self, ordinal: int, pci_bus_id: str | None = None) -> None:
        """Watch CUDA device ``ordinal`` through NVML, found by its PCI bus id."""
        from .gpu import pci_bus_id as driver_pci_bus_id

        self.cuda_ordinal = ordinal
        self.health, self.health_note = open_monitor(pci_bus_id or driver_pci_bus_id(ordinal))

    # -- arrays ---------------------------------------------------------------------------------
    #: The library's own array module (``numpy``, ``torch``...).
    native: ClassVar[Any]

    def namespace(self, kind: str = "native") -> Any:
        """The array namespace: the library's own (``native``) or the Array API one (``array_api``)."""
        if kind != "array_api":
            return self.native
        import array_api_compat

        return array_api_compat.array_namespace(self.native.empty(0))

    @abc.abstractmethod
    def asarray(self, host: np.ndarray) -> Any:
        """A copy of a host NumPy array on this backend's device, with the same dtype."""

    # Each library's own calls, as the interop workloads time them: ``from_numpy(host)`` as a user
    # brings a NumPy array in (zero-copy where it can), ``copy_from_numpy(host)`` by its copying
    # constructor (``torch.tensor``...), ``from_list(data, dtype)`` from a Python list, on this device.
    from_numpy: Callable[[np.ndarray], Any]
    copy_from_numpy: Callable[[np.ndarray], Any]
    from_list: Callable[[list, str], Any]

    @abc.abstractmethod
    def to_numpy(self, x: Any) -> np.ndarray:
        """Bring an array back to the host as NumPy (waits for it)."""

    def dtype_name(self, x: Any) -> str:
        """The dtype of a result, spelled as NumPy spells it ("float64", "complex64"; "bool", not
        MLX's "bool_"), from "torch.float64" or "mlx.core.float64" too."""
        name = str(x.dtype).rsplit(".", 1)[-1]
        return "bool" if name == "bool_" else name

    #: On an Apple GPU, who lacks ``METAL_MISSING`` ("jax-metal has no {dtype}"); "" elsewhere.
    metal_lacks = ""

    def unsupported_dtype(self, dtype: str) -> str | None:
        """Why this device cannot compute in ``dtype`` (no float64 on Apple GPUs), or None."""
        if not self.metal_lacks or dtype not in METAL_MISSING:
            return None
        return (f"{self.metal_lacks.format(dtype=dtype)} (Metal has no 64-bit floating point); "
                "--dtype float32 runs it")

    def evaluated(self, op: Callable[..., Any]) -> Callable[..., Any]:
        """``op`` made to compute all it returns before it returns (a lazy library's evaluation)."""
        return op

    def explain_wrong(self, wrong: WrongResult) -> str | None:
        """Why a wrong result comes from a known limitation of the library, shown by a rerun
        where it is worked around: the reason the cell is ``skipped`` with; None keeps it ``wrong``."""
        return None

    # -- precision ------------------------------------------------------------------------------
    def reduced_precision(self, dtype: str) -> str | None:
        """The reduced precision matmuls in ``dtype`` run in (``"tf32"``), read from the library's
        own state, or None for full."""
        return None

    # -- in-place code --------------------------------------------------------------------------
    #: Whether a call can change its input arrays in place (JAX arrays are immutable).
    mutable_arrays: ClassVar[bool] = True

    def clone(self, x: Any) -> Any:
        """A new array with ``x``'s values, where ``x`` is."""
        return list(x) if isinstance(x, list) else np.array(x, copy=True)

    def copy_into(self, dst: Any, src: Any) -> None:
        """Overwrite ``dst``'s values with ``src``'s, in place."""
        if isinstance(dst, list):
            dst[:] = src
        else:
            np.copyto(dst, src)

    def memory_range(self, x: Any) -> tuple[int, int] | None:
        """The [start, end) addresses of the memory ``x`` lives in; None where unknown."""
        if not isinstance(x, np.ndarray):
            return None
        try:
            from numpy.lib.array_utils import byte_bounds  # NumPy >= 2.0
        except ImportError:  # pragma: no cover - NumPy 1.x
            byte_bounds = np.byte_bounds
        return byte_bounds(x)

    def shares_memory(self, a: Any, b: Any) -> bool:
        """Whether two arrays overlap in memory: a view of the other, or the same array."""
        if a is b:
            return True
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            try:
                return bool(np.shares_memory(a, b, max_work=100_000))
            except Exception:  # too hard to solve exactly: overlapping bounds say "maybe"
                return bool(np.may_share_memory(a, b))
        ra, rb = self.memory_range(a), self.memory_range(b)
        return ra is not None and rb is not None and ra[0] < rb[1] and rb[0] < ra[1]

    # -- timing ---------------------------------------------------------------------------------
    #: Wait for a result; None where every call returns only once its work is done.
    sync: Callable[[Any], None] | None = None

    def device_timer(self) -> CudaEvents | None:
        """A device-event timer, where the library has one."""
        return None

    #: How a library with no benchmarking tool is timed in its documentation: a loop of calls, each
    #: waited for (``sync``); "" where it has a tool.
    timing_loop: ClassVar[str] = ""

    def library_timing(self, fn: Callable[[], Any], min_time_s: float = 0.05) -> tuple[list[float], str]:
        """(seconds per call of ``fn`` in each batch of about 1 ms, the tool) by the library's own
        benchmarking tool, for the doctor's ``harness`` check; here the standard library's ``timeit``."""
        import timeit

        # A documentation's loop runs with the collector on; timeit turns it off.
        timer = timeit.Timer((lambda: self.sync(fn())) if self.timing_loop else fn,  # type: ignore[misc]
                             "gc.enable()" if self.timing_loop else "pass")
        return batches(lambda number: timer.timeit(number) / number, min_time_s), self.timing_loop or "timeit"

    def flush_cache(self) -> Callable[[], None]:
        """A function that evicts the device's caches, for cold-cache measurements: on a GPU, it
        reads and writes a buffer twice the L2's size, and waits."""
        if self.device == "cpu":
            from .cpu import cpu_flush

            return cpu_flush()
        buf = self.asarray(np.zeros(2 * self.l2_bytes() // 4, dtype=np.float32))
        touch, sync = self.evaluated(lambda: buf + 1.0), self.sync or (lambda _result: None)
        return lambda: sync(touch())

    def l2_bytes(self) -> int:
        """The GPU's L2 cache size; 128 MiB where the library cannot say (more than any GPU's)."""
        return 128 * 1024**2

    # -- transformations ------------------------------------------------------------------------
    def grad(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The gradient of scalar ``fn(w, *rest)`` in ``w``: forward differences, the seed's method."""
        from ..numeric.finite_diff import forward_difference_grad

        return forward_difference_grad(fn)

    def compile(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """A compiled version of ``fn``; raise ``Unavailable`` where the library has no compiler."""
        raise Unavailable(f"{self.label} has no compiler")

    #: Whether the compiler compiles the workload's own function (Numba) rather than tracing a closure.
    compiles_functions: ClassVar[bool] = False

    def compile_workload(self, fn: Callable[..., Any], xp: Any, settings: dict[str, Any], *,
                         grad: bool = False) -> Callable[..., Any]:
        """The compiled call ``op(*arrays)`` of ``fn(xp, *arrays, **settings)`` (its gradient in the
        first array where ``grad``): a closure over ``xp`` and the settings, compiled."""

        def call(*a: Any) -> Any:
            return fn(xp, *a, **settings)

        return self.compile(self.grad(call) if grad else call)

    compile_method: ClassVar[str] = "none"

    def compile_refusal(self, exc: BaseException) -> str | None:
        """Where an exception from a compiled call means "this compiler cannot compile that" (not
        applicable, not failed): the compiler's own reason, or "" where the exception says it; else None."""
        return None

    def recompile_limit_hit(self, exc: BaseException) -> bool:
        """Whether an exception from a compiled call means the compiler reached its recompile limit."""
        return False

    def compile_notes(self) -> list[str]:
        """What the compiler said about the last compiled function (graph breaks...), once it ran."""
        return []

    def intermittent_cause(self, max_rel_error: float | None) -> str:
        """A known library bug that would explain a first result wrong by ``max_rel_error`` where a
        second call is right, or ""."""
        return ""

    # -- housekeeping ---------------------------------------------------------------------------
    def limit_threads(self, threads: int) -> None:
        """Limit the library's thread pools again from inside the worker, once it is loaded."""
        with suppress(Exception):  # a pool that refuses leaves the environment's limit in force
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=threads)

    def free(self) -> None:
        """Release cached device memory between cells."""

    def device_peak(self, call: Callable[[], Any]) -> tuple[int | None, str] | None:
        """(bytes one ``call`` added at its highest by the library's own accounting, how it was
        counted), or None where the library keeps none (the host's resident mark is used)."""
        return None

    def energy_counter_mj(self) -> Callable[[], float] | str:
        """A reader of the GPU's total energy in millijoules (NVML), or why there is none."""
        if self.health is None:
            return f"GPU energy not readable: {self.health_note or 'no GPU monitor (NVML)'}"
        return self.health.energy_counter_mj()

    #: The library's own out-of-memory exceptions, and what its other RuntimeErrors say (in lower
    #: case) when memory ran out.
    out_of_memory_types: ClassVar[tuple[type[BaseException], ...]] = ()
    out_of_memory_text: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def is_out_of_memory(cls, exc: BaseException) -> bool:
        """Whether an exception is this library's (or Python's) out-of-memory error."""
        return isinstance(exc, (MemoryError, *cls.out_of_memory_types)) or isinstance(exc, RuntimeError) \
            and any(t in str(exc).lower() for t in cls.out_of_memory_text)

    def memory_available(self) -> tuple[int, int] | None:
        """(free, total) bytes of the device's memory (the host's on the CPU); None if unknown."""
        if self.device != "cpu":
            return None
        from .cpu import host_memory

        return host_memory()

    @abc.abstractmethod
    def info(self) -> dict[str, Any]:
        """Versions, device, threads and precision settings, for the environment record."""

    def kernels(self) -> dict[str, Any]:
        """The code paths the library runs, from its verbose modes: costly, so one worker of a
        configuration asks (``Job.describe``)."""
        return {}


def batches(per_call: Callable[[int], float], min_time_s: float) -> list[float]:
    """Seconds per call in batches of about 1 ms (``per_call(number)``: a batch of ``number``
    calls timed, per call), sized by the fastest of three single calls: at least 5 batches, then
    until ``min_time_s`` (at most 1,000)."""
    one = max(min(per_call(1) for _ in range(3)), 1e-7)
    number = max(1, int(1e-3 / one))
    out: list[float] = []
    end = time.perf_counter() + min_time_s
    while len(out) < 5 or (time.perf_counter() < end and len(out) < 1000):
        out.append(per_call(number))
    return out

