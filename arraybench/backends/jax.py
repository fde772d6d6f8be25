"""JAX on the CPU or a GPU, eager or under ``jax.jit``. The worker sets ``JAX_PLATFORMS`` and
``XLA_FLAGS`` before this module is imported: XLA reads them once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping

import jax
import numpy as np

# float64 must be enabled before the first array exists: with x64 off, jnp.asarray of a float64
# array quietly returns float32, and a float64 benchmark would silently measure float32.
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

from .gpu import first_line, l2_cache_bytes  # noqa: E402
from .base import Backend, Unavailable, gpu_env, tf32_in_effect  # noqa: E402
from .cpu import cpu_threads_info  # noqa: E402


def fresh_view(x: Any) -> Any:
    """A new ``jax.Array`` over ``x``'s device buffers, with no host copy cached (zero-copy):
    ``ArrayImpl`` directly, as ``jax.make_array_from_single_device_arrays`` builds it without its
    checks (3 µs, not 12, inside a timed transfer), or that function if the private class moves."""
    try:
        from jax._src.array import ArrayImpl

        return ArrayImpl(x.aval, x.sharding, [x], committed=True, _skip_checks=True)
    except (ImportError, TypeError, AttributeError):
        return jax.make_array_from_single_device_arrays(x.shape, x.sharding, [x])


#: The environment variables that decide how XLA's GPU client allocates (jaxlib/xla_client.py).
MEMORY_VARS = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_CLIENT_MEM_FRACTION",
               "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR")


def memory_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """How JAX will take GPU memory: allocator, whether it preallocates (75% by default, which
    nvidia-smi shows as used), and which fraction."""
    allocator = environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default").lower() or "default"
    text = environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "")
    preallocate = allocator != "platform" and text not in ("false", "False", "0")
    fraction_text = environ.get("XLA_CLIENT_MEM_FRACTION") or environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION")
    try:
        fraction = float(fraction_text) if fraction_text else 0.75
    except ValueError:
        fraction = None  # XLA itself will refuse it when the client starts
    return {"allocator": allocator, "preallocate": preallocate, "fraction": fraction}


#: Matmul precision settings that keep float32 arithmetic (6 or 9 bfloat16 passes come close enough).
_FULL_FLOAT32 = ("highest", "float32", "F32_F32_F32", "F64_F64_F64", "TF32_TF32_F32_X3",
                 "BF16_BF16_F32_X6", "BF16_BF16_F32_X9")


def gpu_devices() -> list[Any]:
    """JAX's GPUs: CUDA or ROCm (the ``gpu`` platform), else Apple's (jax-metal's ``METAL``)."""
    try:
        return jax.devices("gpu")
    except RuntimeError as first:
        try:
            return jax.devices("METAL")
        except RuntimeError:
            raise first from None


class JaxBackend(Backend):
    name = "jax"
    label = "JAX"
    grad_method = "autodiff (jax.grad)"
    gradient = "autodiff"
    compile_method = "jax.jit"
    grad = staticmethod(jax.grad)
    compile = staticmethod(jax.jit)
    device_timer_note = "wall clock + block_until_ready (JAX has no device-event API)"
    #: XLA's RESOURCE_EXHAUSTED: "Out of memory allocating N bytes", as a JaxRuntimeError.
    out_of_memory_text = ("resource_exhausted",)
    timing_loop = "a jax.block_until_ready loop"

    def __init__(self, device: str, *, allow_tf32: bool = False) -> None:
        super().__init__(device, allow_tf32=allow_tf32)
        try:
            devices = gpu_devices() if device == "gpu" else jax.devices("cpu")
        except RuntimeError as exc:
            why = first_line(exc)
            raise Unavailable(f"JAX {jax.__version__} has no GPU backend here ({why})" if device == "gpu"
                              else f"JAX cannot open the CPU ({why})") from None
        if not devices:
            raise Unavailable(f"JAX found no {device} device")
        self.jax_device = devices[0]
        if device == "gpu" and self.is_metal:
            self.health_note = "Apple GPUs have no NVML"
            self.metal_lacks = "jax-metal has no {dtype}"
            self.device_timer_note = "wall clock + block_until_ready (jax-metal has no device-event API)"
        elif device == "gpu":
            self.open_gpu_health()
        # "highest": full float32 on GPUs. Unset (or "default") would mean TF32 on Ampere and later
        # (jax.lax.Precision), so it is always set; "tensorfloat32" says what --allow-tf32 asks.
        jax.config.update("jax_default_matmul_precision", "tensorfloat32" if allow_tf32 else "highest")
        self.sync = jax.block_until_ready

    @property
    def is_metal(self) -> bool:
        """Whether the device is an Apple GPU through jax-metal (platform ``METAL``)."""
        return str(getattr(self.jax_device, "platform", "")).lower() == "metal"

    def hardware_ordinal(self) -> int | None:
        """The device's CUDA ordinal (``local_hardware_id``), or None where the plugin gives none."""
        ordinal = getattr(self.jax_device, "local_hardware_id", None)
        return None if ordinal is None else int(ordinal)

    def open_gpu_health(self) -> None:
        """NVML for this GPU, found through its CUDA ordinal; where JAX gives none, why not."""
        ordinal = self.hardware_ordinal()
        if ordinal is not None:
            self.open_health(ordinal)
        else:  # guessing 0 could watch another GPU than the one measured
            self.health_note = "JAX gives this device no local_hardware_id, so its GPU is not known to NVML"

    def l2_bytes(self) -> int:
        """The GPU's L2 size from the CUDA driver (JAX has no API for it; ROCm and Apple GPUs have no
        driver to ask)."""
        return l2_cache_bytes(self.hardware_ordinal()) or super().l2_bytes()

    def namespace(self, kind: str = "native") -> Any:
        return jnp  # jax.numpy implements the Array API standard itself

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
        if self.device != "cpu":
            # A jax.Array keeps its host copy after the first transfer: a new, never-read array
            # over the same buffer makes every call cross the bus.
            x = fresh_view(x)
        return np.asarray(jax.device_get(x))

    def reduced_precision(self, dtype: str) -> str | None:
        if self.device == "cpu" or self.is_metal:
            return None  # jax.lax.Precision: "Has no impact on CPU backends"
        setting = str(jax.config.jax_default_matmul_precision or "default")
        if setting in _FULL_FLOAT32:
            return None
        if setting.startswith("BF16_BF16") and not setting.endswith(("_X6", "_X9")):
            return "bf16" if dtype in ("float32", "complex64") else None
        # default, fastest, high, bfloat16, tensorfloat32, TF32_TF32_F32: TF32 where the GPU has it.
        return "tf32" if tf32_in_effect(True, dtype, self.compute_capability()) else None

    def compute_capability(self) -> tuple[int, int] | None:
        """The CUDA compute capability (8, 0), or None where the device does not say (ROCm)."""
        text = str(getattr(self.jax_device, "compute_capability", "") or "")
        try:
            major, minor = (int(p) for p in text.split(".")[:2])
        except ValueError:
            return None
        return major, minor

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

    def compile_notes(self) -> list[str]:
        """JAX's persistent compilation cache, where one is configured (it counts no hits)."""
        where = jax.config.jax_compilation_cache_dir
        if not where:
            return []
        return [f"JAX's persistent compilation cache is on ({where}): the first call may be served "
                f"from a disk cache, so its compile time may be a cache load, not a compile"]

    def device_peak(self, call: Callable[[], Any]) -> tuple[int | None, str] | None:
        stats = self.jax_device.memory_stats()
        if not stats or "peak_bytes_in_use" not in stats:
            return None
        # XLA's peak cannot be reset: a call that stays under an earlier peak leaves it unmoved.
        before, old_peak = int(stats["bytes_in_use"]), int(stats["peak_bytes_in_use"])
        result = call()
        new_peak = int((self.jax_device.memory_stats() or {}).get("peak_bytes_in_use", old_peak))
        del result
        if new_peak <= old_peak:
            return (None, f"XLA's peak_bytes_in_use did not move (its peak cannot be reset): "
                          f"the call added at most {old_peak - before} bytes")
        return new_peak - before, "XLA's allocator: peak_bytes_in_use over one call less bytes_in_use before"

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
            "gpu_env": gpu_env(*MEMORY_VARS),
        }
        if self.device != "cpu":
            info["memory"] = memory_settings(os.environ)
            stats = self.jax_device.memory_stats() or {}
            if stats.get("bytes_limit"):
                info["memory"]["bytes_limit"] = int(stats["bytes_limit"])
            info["reduced_precision_float32"] = self.reduced_precision("float32")
            info["gpu_monitor"] = "NVML" if self.health else self.health_note
        else:
            info.update(xla_cpu_target())
        info.update(cpu_threads_info())
        return info


def xla_cpu_target() -> dict[str, Any]:
    """What XLA compiles CPU code for: the ``--xla_cpu_max_isa`` cap, and the target triple, CPU and
    vector width from the LLVM IR of one tiny compiled function."""
    import contextlib
    import re
    import tempfile

    out: dict[str, Any] = {}
    cap = re.search(r"--xla_cpu_max_isa=(\S+)", os.environ.get("XLA_FLAGS", ""))
    out["xla_cpu_max_isa"] = cap.group(1) if cap else "none (the host CPU's features)"
    with tempfile.TemporaryDirectory(prefix="xla-dump-for-arraybench-", ignore_cleanup_errors=True) as folder, \
            contextlib.suppress(Exception):  # a target it cannot tell is left unsaid
        x = jnp.ones(64, dtype=jnp.float32)
        jax.jit(lambda v: v * 2.0 + 1.0).lower(x).compile(compiler_options={"xla_dump_to": folder})
        dumps = sorted(Path(folder).glob("*ir-with-opt.ll"))
        text = dumps[0].read_text(encoding="utf-8", errors="replace") if dumps else ""
        triple = re.search(r'target triple = "([^"]+)"', text)
        width = re.search(r'"prefer-vector-width"="(\d+)"', text)
        cpu = re.search(r'"target-cpu"="([^"]+)"', text)
        parts = [triple.group(1) if triple else None,
                 f"target-cpu {cpu.group(1)}" if cpu else None,
                 f"{width.group(1)}-bit vectors" if width else None]
        if any(parts):
            out["xla_cpu_target"] = ", ".join(p for p in parts if p)
    return out
