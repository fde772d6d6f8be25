"""The one list of environment variables that change which kernels a library runs, on how many
threads, in what precision (``OPENBLAS_CORETYPE=Haswell``: a 2.2x slower matmul, measured). None
shows in a time unless recorded beside it: the parent records its own, each worker the one it ran with."""

from __future__ import annotations

from typing import Mapping

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


def gpu(environ: Mapping[str, str]) -> dict[str, str]:
    """The GPU variables of ``environ`` (``GPU``) that are set."""
    return {k: environ[k] for k in GPU if k in environ}
