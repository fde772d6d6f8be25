"""Out-of-memory errors: recognised for every library, and told as "needed X, available Y".

CPU errors are produced for real. GPU errors cannot be here (no GPU): CuPy's exception classes are
the real ones, built with the arguments CuPy's allocator passes; PyTorch's CUDA message is the
format string of c10/cuda/CUDACachingAllocator.cpp (2.1 and later, and before), XLA's the one its
GPU allocator prints.
"""

from __future__ import annotations

import numpy as np
import pytest

from arraybench.worker import footprint as memory

from ..conftest import backend_or_skip

TORCH_CUDA = ("CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of "
              "79.15 GiB of which 1.23 GiB is free. Process 4242 has 77.90 GiB memory in use. Of "
              "the allocated memory 77.40 GiB is allocated by PyTorch, and 12.00 MiB is reserved "
              "by PyTorch but unallocated.")
TORCH_CUDA_OLD = ("CUDA out of memory. Tried to allocate 36.00 MiB (GPU 0; 7.93 GiB total capacity; "
                  "130.35 MiB already allocated; 47.06 MiB free; 188.00 MiB reserved in total by "
                  "PyTorch)")


def test_numpy_memory_error_for_real():
    backend = backend_or_skip("numpy")
    with pytest.raises(MemoryError) as info:
        np.empty(10**15)
    assert backend.is_out_of_memory(info.value)
    assert memory.needed_bytes(str(info.value)) == pytest.approx(8 * 10**15, rel=1e-3)
    text = memory.describe(str(info.value), "the first call", backend.memory_available(), "host memory")
    assert text.startswith("out of memory during the first call (needed 7.11 PiB, available ")
    assert "host memory): Unable to allocate 7.11 PiB" in text


def test_torch_cpu_allocator_failure_for_real():
    backend = backend_or_skip("torch")
    import torch

    with pytest.raises(RuntimeError) as info:
        torch.empty(10**15, dtype=torch.float64)
    assert not isinstance(info.value, MemoryError)  # why a plain isinstance check missed it
    assert backend.is_out_of_memory(info.value)
    assert memory.needed_bytes(str(info.value)) == 8 * 10**15
    text = memory.describe(str(info.value), "binding", None, "")
    assert "[enforce fail" not in text and "DefaultCPUAllocator" in text


def test_torch_cuda_messages():
    backend = backend_or_skip("torch")
    import torch

    for message, needed, free, total in (
        (TORCH_CUDA, 20 * 2**30, 1.23 * 2**30, 79.15 * 2**30),
        (TORCH_CUDA_OLD, 36 * 2**20, 47.06 * 2**20, 7.93 * 2**30),
    ):
        assert backend.is_out_of_memory(torch.OutOfMemoryError(message))
        assert backend.is_out_of_memory(RuntimeError(message))  # cuBLAS workspaces say it plainly
        assert memory.needed_bytes(message) == needed
        got_free, got_total = memory.available_in_message(message)
        assert got_free == pytest.approx(free, rel=1e-6)
        assert got_total == pytest.approx(total, rel=1e-6)
    text = memory.describe(TORCH_CUDA, "timing", (5, 10), "on the GPU")
    # the library's own numbers win over a later query of the device
    assert text.startswith("out of memory during timing (needed 20 GiB, available 1.23 GiB of "
                           "79.1 GiB on the GPU): CUDA out of memory.")
    assert not backend.is_out_of_memory(RuntimeError("shape mismatch"))


@pytest.mark.parametrize("message", [
    # ATen/cuda/Exceptions.h, TORCH_CUDABLAS_CHECK: "CUDA error: " + status name + the call
    "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    # ATen/native/cuda/CuFFTUtils.h, CUFFT_CHECK: "cuFFT error: " + status name
    "cuFFT error: CUFFT_ALLOC_FAILED",
    "CUDA error: CUSOLVER_STATUS_ALLOC_FAILED when calling `cusolverDnCreate(handle)`",
])
def test_torch_cuda_library_allocation_failures_are_out_of_memory(message):
    """These say no "out of memory", yet are one."""
    backend = backend_or_skip("torch")
    assert backend.is_out_of_memory(RuntimeError(message))
    assert not backend.is_out_of_memory(RuntimeError("CUDA error: CUBLAS_STATUS_EXECUTION_FAILED "
                                                     "when calling `cublasSgemm(...)`"))


def test_cupy_out_of_memory_classes():
    pytest.importorskip("cupy")
    try:
        from arraybench.backends import cupy as cupy_backend
    except Exception as exc:  # a CuPy that cannot even import reports itself unavailable
        pytest.skip(str(exc))
    import cupy
    from cupy_backends.cuda.api.runtime import CUDARuntimeError

    pool = cupy.cuda.memory.OutOfMemoryError(8_000_000_000, 1_000)
    assert cupy_backend.CupyBackend.is_out_of_memory(pool)
    assert memory.needed_bytes(str(pool)) == 8_000_000_000
    runtime = CUDARuntimeError(2)  # cudaErrorMemoryAllocation
    assert cupy_backend.CupyBackend.is_out_of_memory(runtime)
    assert memory.describe(str(runtime), "moving inputs to the device", (1 << 30, 1 << 34),
                           "on the GPU").startswith(
        "out of memory during moving inputs to the device (available 1 GiB of 16 GiB on the GPU)")
    assert not cupy_backend.CupyBackend.is_out_of_memory(CUDARuntimeError(1))  # cudaErrorInvalidValue


def test_jax_resource_exhausted_for_real():
    backend = backend_or_skip("jax")
    import jax.numpy as jnp

    with pytest.raises(Exception) as info:
        jnp.zeros(10**15).block_until_ready()
    assert backend.is_out_of_memory(info.value)
    assert memory.needed_bytes(str(info.value)) == 8 * 10**15
    gpu = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes."
    assert memory.needed_bytes(gpu) == 16 * 2**30
    assert memory.needed_bytes("Out of memory while trying to allocate 16.00GiB.") == 16 * 2**30


def test_host_memory_and_sizes():
    from arraybench.backends.cpu import host_memory

    available, total = host_memory()
    assert 0 <= available <= total
    assert memory.format_bytes(512) == "512 bytes"
    assert memory.format_bytes(8 * 10**9) == "7.45 GiB"
    assert memory.format_bytes(8 * 10**15) == "7.11 PiB"
    assert memory.needed_bytes("no numbers here") is None
    assert memory.describe("", "timing", None, "") == "out of memory during timing"
