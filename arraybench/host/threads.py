"""One thread setting for every library's worker, decided here and handed to it at its start: variables
must be set before a library loads its pools, and the CPU affinity is the one limit XLA respects. So is
the C allocator's state: glibc reads ``MALLOC_*`` only at start-up (``mallopt`` later: 0 faults a call
instead of ~2,600, measured); left alone where ``uncontrolled_reason`` says why. And the one list of the
variables that change a library's kernels, threads or precision (``OPENBLAS_CORETYPE=Haswell``: a 2.2x
slower matmul, measured), recorded by the parent and by each worker."""

from __future__ import annotations

import contextlib
import os
from typing import Mapping

from ..errors import spell
from ..model.replicate import USER_VARIABLES, State, environment

#: Variables recorded by name.
NAMES: tuple[str, ...] = (
    # OpenBLAS (NumPy's BLAS): the kernel family forced, the cache size assumed, its threads.
    "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OPENBLAS_VERBOSE",
    "OPENBLAS_DEFAULT_NUM_THREADS", "GOTO_NUM_THREADS",
    # MKL (PyTorch's BLAS on x86): its ISA cap, reproducibility mode (pins a code path), threads.
    "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "MKL_NUM_THREADS", "MKL_DYNAMIC", "MKL_DEBUG_CPU_TYPE",
    "MKL_THREADING_LAYER", "MKL_VERBOSE",
    # oneDNN (PyTorch's CPU convolutions and more): its ISA cap.
    "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ONEDNN_DEFAULT_FPMATH_MODE",
    # ATen's own kernels: the vector ISA PyTorch dispatches to.
    "ATEN_CPU_CAPABILITY", "TORCH_NUM_THREADS",
    # BLIS, Accelerate, NVPL (other BLAS builds NumPy may load).
    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NVPL_BLAS_DEBUG_CPU_TYPE",
    # JAX / XLA: compiler flags (ISA cap, threads), platform, GPU memory and precision.
    "XLA_FLAGS", "JAX_PLATFORMS", "JAX_ENABLE_X64", "JAX_DEFAULT_MATMUL_PRECISION",
    "TF_CPP_MIN_LOG_LEVEL",
    # The C library's allocator: whether large outputs come fresh from the kernel (page faults).
    "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_ARENA_MAX", "GLIBC_TUNABLES",
    "LD_PRELOAD",
)
#: The GPU's: TF32 behind the library's back, which devices are visible and in what order, lazy
#: loading, each library's allocator and precision switches (JAX's preallocation, torch's TF32
#: override and allocator, CuPy's TF32 and memory limit).
GPU: tuple[str, ...] = (
    "NVIDIA_TF32_OVERRIDE", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING",
    "CUBLAS_WORKSPACE_CONFIG", "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
    "HIPBLASLT_ALLOW_TF32", "CUPY_TF32", "CUPY_GPU_MEMORY_LIMIT", "CUPY_ACCELERATORS",
)
NAMES = NAMES + GPU
#: Variables recorded by prefix (every OpenMP and KMP setting, every XLA client setting).
PREFIXES: tuple[str, ...] = ("OMP_", "KMP_", "GOMP_", "XLA_PYTHON_CLIENT_", "CUPY_")


def recorded(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` that change kernels, threads or precision, sorted by name."""
    return {k: environ[k] for k in sorted(environ)
            if k in NAMES or any(k.startswith(p) for p in PREFIXES)}


def available_cpus() -> list[int]:
    """The CPUs this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def worker_cpus(threads: int | None) -> list[int] | None:
    """The CPUs a worker is pinned to, or None to leave it free (the default: all cores)."""
    if threads is None:
        return None
    cpus = available_cpus()
    return cpus[: max(1, min(threads, len(cpus)))]


def jax_gpu_platform(plugins: list[str] | None = None) -> str:
    """The JAX platform a GPU worker asks for: "METAL" with only jax-metal, "rocm" with only a ROCm
    plugin, else "cuda". ``plugins``: the installed plugins' names, found without importing jax."""
    names = " ".join(_jax_plugins() if plugins is None else plugins).lower()
    if "metal" in names and "cuda" not in names and "rocm" not in names:
        return "METAL"  # jax-metal registers its platform under this name (Apple GPUs)
    return "rocm" if "rocm" in names and "cuda" not in names else "cuda"


def _jax_plugins() -> list[str]:
    import importlib.metadata
    import importlib.util
    import pkgutil

    found: list[str] = []
    with contextlib.suppress(ImportError, ValueError):
        spec = importlib.util.find_spec("jax_plugins")
        if spec is not None and spec.submodule_search_locations:
            found += [m.name for m in pkgutil.iter_modules(spec.submodule_search_locations)]
    with contextlib.suppress(Exception):  # a broken distribution's metadata must not stop a run
        found += [ep.name + " " + ep.value for ep in importlib.metadata.entry_points(group="jax_plugins")]
    return found


def worker_env(base: Mapping[str, str], *, threads: int | None, backend: str, device: str,
               allow_tf32: bool) -> dict[str, str]:
    """The environment of a worker process."""
    env = dict(base)
    env["PYTHONUNBUFFERED"] = "1"
    # Keep the worker from writing bytecode caches into a user's tree mid-benchmark.
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    if threads is not None:
        env.update(dict.fromkeys(("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                  "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"), str(threads)))
        if backend == "jax":
            flags = env.get("XLA_FLAGS", "")
            # XLA's CPU thread pool follows the affinity; one thread also needs Eigen's pool off.
            if threads == 1:
                flags += " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
            env["XLA_FLAGS"] = flags.strip()
    if backend == "jax" and device == "cpu":
        # A CPU worker must not initialise CUDA (slow, and it reserves GPU memory).
        env["JAX_PLATFORMS"] = "cpu"
    elif backend == "jax" and device == "gpu" and not env.get("JAX_PLATFORMS"):
        # Named platforms fail loudly; unset, a GPU plugin that cannot start is skipped quietly
        # and the record would only say "Unknown backend: 'gpu'".
        env["JAX_PLATFORMS"] = f"{jax_gpu_platform()},cpu"
    if threads is not None and backend == "numpy":
        # NumPy's compiled mode is Numba: its own pool (parallel=True code) follows the limit too.
        env["NUMBA_NUM_THREADS"] = str(threads)
    if backend == "cupy":
        env["CUPY_TF32"] = "1" if allow_tf32 else "0"
    return env


def uncontrolled_reason(env: Mapping[str, str]) -> str:
    """Why workers started with ``env`` keep their allocator as it is ("" when it may be set)."""
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        libc = ""
    if not libc.startswith("glibc"):
        return "the C library is not glibc"
    chosen = [name for name in USER_VARIABLES if name in env]
    if chosen:
        return f"{', '.join(chosen)} set by the user"
    if "malloc" in env.get("GLIBC_TUNABLES", ""):
        return "a glibc.malloc tunable set by the user (GLIBC_TUNABLES)"
    preload = env.get("LD_PRELOAD", "")
    if any(name in preload for name in ("malloc", "jemalloc", "tcmalloc")):
        return f"another allocator preloaded (LD_PRELOAD={preload})"
    return ""


def with_state(env: Mapping[str, str], state: State) -> dict[str, str]:
    """``env`` with ``state``'s variables; a library's own the user set stays (glibc's user choice disables the state)."""
    return {**env, **{k: v for k, v in environment(state).items() if k.startswith("MALLOC_") or k not in env}}


def choice_ignored(chosen: str, env: Mapping[str, str]) -> str:
    """Why a state the user asked for (``--allocator fresh``) is not what workers get, in one line; "" where applied."""
    reason = uncontrolled_reason(env) if chosen != "both" else ""
    return (f"{spell('allocator', chosen)} is not applied ({reason}): the allocator runs as that "
            "sets it") if reason else ""
