"""PyTorch on the CPU, a CUDA GPU or an Apple GPU (mps)."""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Callable

import numpy as np
import torch

from .base import METAL_MISSING, Backend, Unavailable, batches, gpu_env, tf32_in_effect
from .gpu import CudaEvents, SpinKernel, first_line
from .cpu import cpu_threads_info
from .torch_support import (HAS_ISOLATE_RECOMPILES, CompiledNothing, cache_notes, device_namespace,
                            fail_on_recompile_limit, own_code, torch_build_linalg, torch_cpu_kernels)


def cuda_init_error() -> str:
    """Why CUDA cannot start here, in torch.cuda's own words ("The NVIDIA driver on your system is
    too old"...), or "": ``is_available()`` only counts devices, ``init()`` raises the reason."""
    try:
        torch.cuda.init()
    except Exception as exc:  # noqa: BLE001 - whatever CUDA says is the reason
        return first_line(exc)
    return ""


def mps_available() -> bool:
    """Whether PyTorch runs on an Apple GPU here (``mps``) and has no CUDA device, which comes first."""
    return torch.backends.mps.is_available() and (torch.version.cuda is None or not torch.cuda.is_available())


class TorchBackend(Backend):
    name = "torch"
    label = "PyTorch"
    native = torch
    grad_method = "autodiff (torch.autograd, fresh leaf per call)"
    gradient = "autodiff"
    compile_method = "torch.compile"
    #: The CUDA caching allocator's (torch.OutOfMemoryError since 2.5: the same class).
    out_of_memory_types = (torch.cuda.OutOfMemoryError,)
    #: The CPU allocator ("can't allocate memory"; "not enough memory" before 2.x), CUDA outside the
    #: caching allocator, and CUDA libraries' workspaces ("CUBLAS_STATUS_ALLOC_FAILED", "CUFFT_ALLOC_FAILED").
    out_of_memory_text = ("out of memory", "can't allocate memory", "not enough memory", "alloc_failed")

    def __init__(self, device: str, *, allow_tf32: bool = False) -> None:
        super().__init__(device, allow_tf32=allow_tf32)
        self._spin: SpinKernel | None = None
        if device == "cpu":
            self.torch_device = torch.device("cpu")
            self.device_timer_note = "wall clock (CPU kernels are synchronous)"
        elif device == "gpu" and mps_available():
            self.torch_device = torch.device("mps")
            self.sync = lambda _result: torch.mps.synchronize()
            self.device_timer_note = "MPS events"
            self.health_note = "Apple GPUs have no NVML"
            self.metal_lacks = "PyTorch's MPS device has no {dtype}"
        else:
            if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
                raise Unavailable(f"PyTorch {torch.__version__} is a CPU-only build (no CUDA, no MPS)")
            if not torch.cuda.is_available():
                why = cuda_init_error() or "torch.cuda.is_available() is False"
                raise Unavailable(f"no CUDA device usable by PyTorch ({why})")
            self.torch_device = torch.device("cuda", torch.cuda.current_device())
            dev = self.torch_device
            self.sync = lambda _result: torch.cuda.synchronize(dev)
            self.device_timer_note = "CUDA events"
            self.open_health(dev.index)
        # Pin matmul precision: TF32 is ~1000x less accurate, a different benchmark. On the CPU
        # "high" would let oneDNN run float32 matmuls in reduced precision (AMX) unrecorded.
        tf32 = allow_tf32 and device == "gpu"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.set_float32_matmul_precision("high" if tf32 else "highest")

    @property
    def is_mps(self) -> bool:
        return self.torch_device.type == "mps"

    def namespace(self, kind: str = "native") -> Any:
        xp = super().namespace(kind)
        on_gpu = kind == "array_api" and self.device == "gpu"
        return device_namespace(xp, self.torch_device) if on_gpu else xp

    def asarray(self, host: np.ndarray) -> Any:
        # clone(): memory owned and aligned by torch, not a view of the caller's NumPy buffer.
        return torch.from_numpy(np.ascontiguousarray(host)).clone().to(self.torch_device)

    def from_numpy(self, host: np.ndarray) -> Any:
        return torch.from_numpy(host).to(self.torch_device)  # zero-copy on the CPU: to() returns it

    def copy_from_numpy(self, host: np.ndarray) -> Any:
        return torch.tensor(host, device=self.torch_device)

    def from_list(self, data: list, dtype: str) -> Any:
        return torch.tensor(data, dtype=getattr(torch, dtype), device=self.torch_device)

    def to_numpy(self, x: Any) -> np.ndarray:
        return x.detach().cpu().numpy()

    def reduced_precision(self, dtype: str) -> str | None:
        if self.device != "gpu" or self.is_mps:
            return None  # the precision setting affects CUDA only (torch.set_float32_matmul_precision)
        allowed = bool(torch.backends.cuda.matmul.allow_tf32)
        if getattr(torch.version, "hip", None):  # ROCm's hipBLASLt asks for its own opt-in
            allowed = allowed and os.environ.get("HIPBLASLT_ALLOW_TF32") == "1"
        props = torch.cuda.get_device_properties(self.torch_device)
        return "tf32" if tf32_in_effect(allowed, dtype, (props.major, props.minor)) else None

    def clone(self, x: Any) -> Any:
        return x.clone() if isinstance(x, torch.Tensor) else super().clone(x)

    def copy_into(self, dst: Any, src: Any) -> None:
        if isinstance(dst, torch.Tensor):
            dst.copy_(src)
        else:
            super().copy_into(dst, src)

    def memory_range(self, x: Any) -> tuple[int, int] | None:
        if not isinstance(x, torch.Tensor):
            return super().memory_range(x)
        try:  # the whole storage: views of one tensor share it
            storage = x.untyped_storage()
            return storage.data_ptr(), storage.data_ptr() + storage.nbytes()
        except Exception:  # sparse or other layouts without one storage
            return None

    def device_timer(self):
        if self.device != "gpu":
            return None
        if self.is_mps:
            # MPS events work as CUDA's; with no spin kernel, there is no hold.
            return CudaEvents(functools.partial(torch.mps.Event, enable_timing=True), torch.mps.Event.elapsed_time)

        make, elapsed_ms = functools.partial(torch.cuda.Event, enable_timing=True), torch.cuda.Event.elapsed_time
        # torch.cuda._sleep(cycles) queues ATen's spin kernel on the current stream.
        sleep = getattr(torch.cuda, "_sleep", None)
        if self._spin is None and sleep is not None:
            self._spin = SpinKernel(sleep, make, elapsed_ms)
        return CudaEvents(make, elapsed_ms, spin=self._spin)

    def library_timing(self, fn: Callable[[], Any], min_time_s: float = 0.05) -> tuple[list[float], str]:
        """``torch.utils.benchmark.Timer`` in blocks of about 1 ms (``blocked_autorange``'s would be
        tens of ms); on a GPU the statement waits after every call, as the latency mode does."""
        from torch.utils.benchmark import Timer as TorchTimer

        sync = ("mps" if self.is_mps else "cuda") + ".synchronize" if self.device == "gpu" else ""
        # Its num_threads defaults to 1; the worker's own count, so that both time the same thing.
        timer = TorchTimer(f"fn(); torch.{sync}()" if sync else "fn()", globals={"fn": fn, "torch": torch},
                           num_threads=torch.get_num_threads())
        blocks = batches(lambda number: float(timer.timeit(number).median), min_time_s)
        return blocks, "torch.utils.benchmark.Timer" + (f" + {sync}" if sync else "")

    def l2_bytes(self) -> int:
        # torch.mps has no cache-size query.
        return (not self.is_mps and torch.cuda.get_device_properties(self.torch_device).L2_cache_size) \
            or super().l2_bytes()

    def grad(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def grad(w: Any, *rest: Any) -> Any:
            # A fresh leaf each call: no gradient accumulates across calls.
            leaf = w.detach().requires_grad_(True)
            fn(leaf, *rest).backward()
            return leaf.grad

        return grad

    def compile(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``torch.compile`` of a copy of ``fn`` with a code object of its own: Dynamo counts
        recompiles per code object, and every cell binds a closure of the same code, so after 8
        cells the later ones ran eager. (``reset()`` between cells would recompile the earlier ones
        inside their timed loops; ``isolate_recompiles`` covers the frames ``fn`` calls.)"""
        from torch._dynamo.utils import counters

        fail_on_recompile_limit()
        counters.clear()  # so compile_notes speaks of this function alone
        options = {"isolate_recompiles": True} if HAS_ISOLATE_RECOMPILES else {}
        return torch.compile(own_code(fn), dynamic=False, **options)

    def compile_refusal(self, exc: BaseException) -> str | None:
        return "" if isinstance(exc, CompiledNothing) else None

    def recompile_limit_hit(self, exc: BaseException) -> bool:
        # By name: torch 2.13 raises FailOnRecompileLimitHit, older releases FailOnCacheLimitHit.
        return type(exc).__name__ in ("FailOnRecompileLimitHit", "FailOnCacheLimitHit")

    def compile_notes(self) -> list[str]:
        """Graph breaks, where torch.compile fell back to eager Python; ``CompiledNothing`` where
        the cell's calls made no graph at all (its times would be eager)."""
        from torch._dynamo.utils import counters

        breaks = counters.get("graph_break", {})
        count = sum(breaks.values())
        graphs = counters.get("stats", {}).get("unique_graphs", 0)
        reasons = list(dict.fromkeys(str(r).strip().splitlines()[0] for r in breaks))
        if not graphs:
            because = f" ({count} graph break(s): {'; '.join(reasons[:3])})" if count else ""
            raise CompiledNothing(f"torch.compile made no graph of it{because}, so every call ran eager")
        notes = [f"torch.compile made {graphs} graphs with {count} graph break(s), running eager "
                 f"Python between them ({'; '.join(reasons[:3])})"] if count else []
        return notes + cache_notes(counters)

    def intermittent_cause(self, max_rel_error: float | None) -> str:
        # The low-accuracy kernel is off by ~1e-8 relative: a larger error is something else.
        if self.device != "cpu" or torch.get_num_threads() < 2 or not max_rel_error \
                or max_rel_error > 1e-6:
            return ""
        detail = torch_build_linalg(torch.__config__.show()).get("torch_blas_detail", "")
        m = re.search(r"Math Kernel Library Version (\d{4})\.(\d+)", detail)
        # oneMKL 2024.2.x only (the torch wheels' pin); it stops reproducing at 2025.0.
        if not m or (int(m.group(1)), int(m.group(2))) != (2024, 2):
            return ""
        return (f"likely a known PyTorch bug with oneMKL {m.group(1)}.{m.group(2)} (pytorch/pytorch#188792): "
                "MKL's vector math picks its kernel on a function's first call, and concurrent "
                "first calls from several threads can run the low-accuracy kernel on one thread's "
                "share, despite the high accuracy asked for; later calls are right. --threads 1 "
                "avoids it; oneMKL 2025.0 or later fixes it")

    def free(self) -> None:
        if self.device == "gpu":
            torch.mps.empty_cache() if self.is_mps else torch.cuda.empty_cache()

    def device_peak(self, call: Callable[[], Any]) -> tuple[int | None, str] | None:
        if self.device != "gpu" or self.is_mps:
            return None  # MPS keeps no peak; the CPU's is the host's resident mark
        dev = self.torch_device
        before = torch.cuda.memory_allocated(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        result = call()
        peak = torch.cuda.max_memory_allocated(dev)
        del result
        reserved = torch.cuda.max_memory_reserved(dev)
        return max(peak - before, 0), ("PyTorch's caching allocator: max_memory_allocated over one "
                                       f"call less what was allocated before; {reserved} bytes reserved at most")

    def memory_available(self) -> tuple[int, int] | None:
        if self.device != "gpu":
            return super().memory_available()
        if self.is_mps:
            total = int(torch.mps.recommended_max_memory())
            return total - int(torch.mps.driver_allocated_memory()), total
        free, total = torch.cuda.mem_get_info(self.torch_device)
        return int(free), int(total)

    def limit_threads(self, threads: int) -> None:
        super().limit_threads(threads)
        torch.set_num_threads(threads)  # torch's own pool, which threadpoolctl cannot see

    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "library": "torch",
            "version": torch.__version__,
            "cuda": torch.version.cuda,
            "torch_threads": torch.get_num_threads(),
            "torch_interop_threads": torch.get_num_interop_threads(),
            "matmul_precision": torch.get_float32_matmul_precision(),
            "allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "timer": self.device_timer_note,
            "gpu_env": gpu_env("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "PYTORCH_CUDA_ALLOC_CONF",
                               "PYTORCH_ALLOC_CONF", "HIPBLASLT_ALLOW_TF32"),
        }
        info.update(torch_build_linalg(torch.__config__.show()))
        if self.device == "gpu" and self.is_mps:
            info["device_name"] = "Apple GPU (mps)"
            info["mps_dtypes_missing"] = list(METAL_MISSING)
            info["gpu_monitor"] = self.health_note
        elif self.device == "gpu":
            props = torch.cuda.get_device_properties(self.torch_device)
            info["device_name"] = props.name
            info["device_memory_gib"] = round(props.total_memory / 1024**3, 1)
            info["compute_capability"] = f"{props.major}.{props.minor}"
            info["reduced_precision_float32"] = self.reduced_precision("float32")
            info["gpu_monitor"] = "NVML" if self.health else self.health_note
        else:
            info["device_name"] = "cpu"
            mkldnn = getattr(torch.backends.mkldnn, "matmul", None)  # fp32_precision: torch >= 2.9
            if mkldnn is not None and hasattr(mkldnn, "fp32_precision"):
                info["mkldnn_fp32_precision"] = mkldnn.fp32_precision
        info.update(cpu_threads_info())
        return info

    def kernels(self) -> dict[str, Any]:
        return torch_cpu_kernels() if self.device == "cpu" else {}

