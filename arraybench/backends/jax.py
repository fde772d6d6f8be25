"""JAX on the CPU or a GPU, eager (op by op) or under ``jax.jit``.

The worker sets ``JAX_PLATFORMS`` and ``XLA_FLAGS`` before this module is imported: XLA reads them
once, at start-up.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import jax
import numpy as np

# float64 must be enabled before the first array exists: with x64 off, jnp.asarray of a float64
# array quietly returns float32, and a float64 benchmark would silently measure float32.
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

from .base import Backend, Unavailable  # noqa: E402
from .cpu import cpu_flush, cpu_threads_info  # noqa: E402


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is JAX running out of memory: XLA says ``RESOURCE_EXHAUSTED: Out of memory
    allocating N bytes`` (CPU) or ``... while trying to allocate N bytes`` (GPU), raised as
    ``jax.errors.JaxRuntimeError``."""
    return isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in str(exc)


class JaxBackend(Backend):
    name = "jax"
    label = "JAX"
    grad_method = "autodiff (jax.grad)"
    gradient = "autodiff"
    compile_method = "jax.jit"
    device_timer_note = "wall clock + block_until_ready (JAX has no device-event API)"

    def __init__(self, device: str, *, allow_tf32: bool = False) -> None:
        super().__init__(device, allow_tf32=allow_tf32)
        platform = {"cpu": "cpu", "gpu": "gpu"}.get(device)
        if platform is None:
            raise Unavailable(f"JAX has no device {device!r}")
        try:
            devices = jax.devices(platform)
        except RuntimeError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if platform == "gpu":
                raise Unavailable(f"JAX {jax.__version__} has no GPU backend here ({first})") from None
            raise Unavailable(f"JAX cannot open the CPU ({first})") from None
        if not devices:
            raise Unavailable(f"JAX found no {platform} device")
        self.jax_device = devices[0]
        # "highest": full float32 on GPUs (no TF32 or bf16 passes) unless asked for.
        jax.config.update("jax_default_matmul_precision", "default" if allow_tf32 else "highest")
        self.sync = jax.block_until_ready

    def namespace(self, kind: str = "native") -> Any:
        # jax.numpy implements the Array API standard itself.
        return jnp

    def asarray(self, host: np.ndarray) -> Any:
        x = jax.device_put(np.ascontiguousarray(host), self.jax_device)
        if np.dtype(x.dtype) != host.dtype:
            raise RuntimeError(
                f"JAX stored a {host.dtype} array as {x.dtype}; is jax_enable_x64 off?"
            )
        return x.block_until_ready()

    def from_numpy(self, host: np.ndarray) -> Any:
        return jax.device_put(host, self.jax_device)

    def copy_from_numpy(self, host: np.ndarray) -> Any:
        return jnp.array(host, copy=True, device=self.jax_device)

    def from_list(self, data: list, dtype: str) -> Any:
        return jnp.array(data, dtype=dtype, device=self.jax_device)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(jax.device_get(x))

    #: A JAX array never changes: in-place code returns new arrays (``x.at[i].set(v)``).
    mutable_arrays = False

    def memory_range(self, x: Any) -> tuple[int, int] | None:
        if isinstance(x, np.ndarray):
            return super().memory_range(x)
        try:
            start = x.unsafe_buffer_pointer()
        except Exception:  # sharded or deleted arrays have no single buffer
            return None
        return start, start + max(int(x.nbytes), 1)

    def flush_cache(self) -> Callable[[], None] | None:
        if self.device == "cpu":
            return cpu_flush()
        buf = jax.device_put(np.zeros(64 * 1024**2 // 4, dtype=np.float32), self.jax_device)
        touch = jax.jit(lambda b: b + 1.0)

        def flush() -> None:
            touch(buf).block_until_ready()

        return flush

    def grad(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return jax.grad(fn)

    def compile(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return jax.jit(fn)

    def is_out_of_memory(self, exc: BaseException) -> bool:
        return is_out_of_memory(exc)

    def memory_available(self) -> tuple[int, int] | None:
        if self.device == "cpu":
            return super().memory_available()
        # XLA's GPU allocator reports its own pool (by default 75% of the GPU, preallocated).
        stats = self.jax_device.memory_stats() or {}
        limit, used = stats.get("bytes_limit"), stats.get("bytes_in_use")
        if limit is None or used is None or limit < 0 or used < 0:  # -1: "not available here"
            return None
        return int(limit) - int(used), int(limit)

    def info(self) -> dict[str, Any]:
        import jaxlib

        info: dict[str, Any] = {
            "library": "jax",
            "version": jax.__version__,
            "jaxlib": getattr(jaxlib, "__version__", None),
            "platform": self.jax_device.platform,
            "device_name": getattr(self.jax_device, "device_kind", str(self.jax_device)),
            "x64": bool(jax.config.jax_enable_x64),
            "matmul_precision": str(jax.config.jax_default_matmul_precision),
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "timer": self.device_timer_note,
        }
        info.update(cpu_threads_info())
        return info
