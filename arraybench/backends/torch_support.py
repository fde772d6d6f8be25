"""What the PyTorch backend needs around torch: its build (BLAS, LAPACK, the CPU code paths it
runs), torch.compile's handling of a workload, and an Array API namespace that creates on the device."""

from __future__ import annotations

import functools
import inspect
import re
import types
from contextlib import suppress
from typing import Any, Callable

import torch

from .base import module_copy
from .cpu import captured_stdout

# -- the build --------------------------------------------------------------------------------------


def _isa_named(text: str) -> str:
    """The ISA a library's own words name: "AVX-512", "AVX2", "AVX", "SSE4.2" or "generic"."""
    t = text.upper().replace("-", "").replace("_", "")
    return next((name for key, name in (("AVX512", "AVX-512"), ("AVX2", "AVX2"), ("AVX", "AVX"), ("SSE4", "SSE4.2"))
                 if key in t), "generic")


def torch_cpu_kernels() -> dict[str, Any]:
    """The CPU code paths PyTorch really runs: ATen's vector ISA, and MKL's and oneDNN's from
    their verbose modes around one tiny call each. What cannot be learnt is left out."""
    out: dict[str, Any] = {}
    with suppress(Exception):
        out["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    with suppress(Exception):
        if torch.backends.mkl.is_available():
            a = torch.ones(64, 64, dtype=torch.float64)
            said = _verbose(torch.backends.mkl, lambda: torch.mm(a, a))
            m = re.search(r"MKL_VERBOSE (.+?) Product build.*? architecture (.+?), Lnx", said)
            if m:
                path = m.group(2).replace("(R)", "").strip()
                out["mkl_code_path"] = path  # "Intel Architecture processors": the generic path
                out["mkl_isa"] = _isa_named(path)
                out["mkl_version"] = m.group(1).strip()
    with suppress(Exception):
        if torch.backends.mkldnn.is_available():
            said = _verbose(torch.backends.mkldnn, torch.ones(8).to_mkldnn)
            m = re.search(r"info,cpu,isa:([^\n]+)", said)
            if m:
                out["onednn_isa"] = m.group(1).strip()
    return out


def _verbose(library: Any, call: Callable[[], Any]) -> str:
    """What ``call`` prints with ``library``'s verbose mode on (``torch.backends.mkl``, ``.mkldnn``)."""

    def run() -> None:
        with library.verbose(library.VERBOSE_ON):
            call()

    return captured_stdout(run)


def torch_build_linalg(config: str) -> dict[str, str]:
    """BLAS and LAPACK from ``torch.__config__.show()`` (``BLAS_INFO=mkl, ..., LAPACK_INFO=mkl``),
    and the MKL or OpenBLAS release line as ``torch_blas_detail``. torch links its BLAS statically,
    out of threadpoolctl's sight: the build configuration is the only witness."""
    out = {name: m.group(1) for key, name in (("BLAS_INFO", "torch_blas"), ("LAPACK_INFO", "torch_lapack"))
           if (m := re.search(rf"\b{key}=([^,\s]+)", config))}
    for line in config.splitlines():
        text = line.strip().lstrip("- ").strip()
        if "Math Kernel Library" in text or text.lower().startswith("openblas"):
            out["torch_blas_detail"] = text
            break
    if "torch_blas" not in out and "Math Kernel Library" in config:
        out["torch_blas"] = "mkl"
    return out


# -- torch.compile ----------------------------------------------------------------------------------

#: ``torch.compile(isolate_recompiles=True)``: its own recompile region per call (torch >= 2.13).
HAS_ISOLATE_RECOMPILES = "isolate_recompiles" in inspect.signature(torch.compile).parameters


def own_code(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A copy of the function ``fn`` with a new code object (same globals, defaults, closure)."""
    if not isinstance(fn, types.FunctionType):
        def call(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        fn = call
    copy = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__ = fn.__qualname__
    return copy


class CompiledNothing(Exception):
    """torch.compile ran a cell without compiling any graph of it: a compiled record would be eager."""


def fail_on_recompile_limit() -> None:
    """Make Dynamo's recompile limit an error (a failed cell) instead of a silent fall back to
    eager; ``suppress_errors``, which would do the same with every compile error, goes off."""
    from torch._dynamo import config

    for name in ("fail_on_recompile_limit_hit", "fail_on_cache_limit_hit"):  # 2.13's name, then older
        if hasattr(config, name):
            config.suppress_errors = False
            setattr(config, name, True)
            return


def cache_notes(counters: Any) -> list[str]:
    """Whether Inductor's FX graph cache (or AOTAutograd's) served this function's compile: the
    first call then loads compiled code (70 ms) instead of compiling it (1.6 s the first time)."""
    inductor, aot = counters.get("inductor", {}), counters.get("aot_autograd", {})
    hits = inductor.get("fxgraph_cache_hit", 0) + aot.get("autograd_cache_hit", 0)
    misses = inductor.get("fxgraph_cache_miss", 0)
    if not hits:
        return []
    part = "partly " if misses else ""
    return [f"torch.compile's first call was {part}served from a disk cache ({hits} hit(s) in "
            f"Inductor's and AOTAutograd's caches, {misses} graph(s) compiled): its compile time is "
            f"mostly a cache load; a cold compile (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1) takes longer"]


# -- the namespace on the device --------------------------------------------------------------------

#: The Array API's creation functions that make an array from no array, and so need ``device=``.
ARRAY_API_CREATION = ("arange", "asarray", "empty", "eye", "full", "linspace", "ones", "zeros")


@functools.cache
def device_namespace(xp: Any, device: Any) -> types.ModuleType:
    """``xp`` (array_api_compat's torch namespace) whose functions that make arrays from no array
    default to ``device``: array_api_compat creates on the CPU, and ``torch.set_default_device``
    would cost every torch call. A ``device=`` the workload passes still wins."""
    ns = module_copy(xp)
    for name in (*ARRAY_API_CREATION, "from_dlpack"):
        setattr(ns, name, functools.partial(getattr(xp, name), device=device))
    fft = module_copy(xp.fft)
    for name in ("fftfreq", "rfftfreq"):
        setattr(fft, name, functools.partial(getattr(xp.fft, name), device=device))
    ns.fft = fft
    info = xp.__array_namespace_info__
    ns.__array_namespace_info__ = type(info.__name__, (info,), {
        "default_device": lambda self: device, "__module__": info.__module__, "__doc__": info.__doc__})
    return ns

