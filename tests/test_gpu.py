"""GPU paths, tested on the CPU (issue 15).

No GPU is lent to this project. Each test here runs the real code path with the real libraries
where the CPU reaches it; where only a GPU would, a small fake stands in for the library object,
and its docstring says which real behaviour (and which source line) it stands for.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import backend_or_skip


# -- finding 1: JAX's to_numpy must copy on every call ------------------------------------------

def test_jax_to_numpy_on_a_gpu_reads_a_never_read_array_every_call(monkeypatch):
    """On a GPU, ``ArrayImpl._value`` keeps the host copy once made (jax/_src/array.py:
    ``if did_copy: self._npy_value = npy_value``; jaxlib's ``PyHostValue::CopyToHostAsync`` returns
    early once its value is set), so a second transfer of the same array is a lookup. The CPU
    never copies (zero-copy), so the test records which arrays reach ``jax.device_get``: on the GPU
    path each must be a new array over the same device buffer, never read before."""
    from arraybench.backends import jax as jax_backend

    backend = backend_or_skip("jax")
    x = backend.asarray(np.arange(1000.0))
    seen = []
    real_get = jax_backend.jax.device_get

    def device_get(a):
        seen.append((a, a._npy_value))
        return real_get(a)

    monkeypatch.setattr(jax_backend.jax, "device_get", device_get)
    monkeypatch.setattr(backend, "device", "gpu")  # the GPU branch, run on the CPU's arrays
    first, second = backend.to_numpy(x), backend.to_numpy(x)
    (a, cached_a), (b, cached_b) = seen
    assert a is not x and b is not x and a is not b
    assert cached_a is None and cached_b is None
    assert a.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()  # zero-copy: no device copy timed
    np.testing.assert_array_equal(first, np.arange(1000.0))
    np.testing.assert_array_equal(second, first)


def test_jax_to_numpy_on_the_cpu_stays_the_plain_conversion(monkeypatch):
    from arraybench.backends import jax as jax_backend

    backend = backend_or_skip("jax")
    x = backend.asarray(np.arange(10.0))
    seen = []
    monkeypatch.setattr(jax_backend.jax, "device_get", lambda a: seen.append(a) or np.asarray(a))
    backend.to_numpy(x)
    assert seen == [x]


# -- finding 6: torch's Array API namespace creates on the workload's device ---------------------

def test_torch_array_api_creation_follows_the_device():
    """array_api_compat/torch/_aliases.py: ``zeros(shape, dtype=None, device=None)`` passes
    ``device=None`` to torch, which means the CPU. The meta device stands for CUDA: a real
    non-CPU torch device that exists without a GPU."""
    import array_api_compat
    import torch

    from arraybench.backends.torch import TorchBackend

    backend_or_skip("torch")
    backend = TorchBackend("cpu")
    assert backend.namespace("array_api") is array_api_compat.torch  # the CPU: unchanged
    backend.device, backend.torch_device = "gpu", torch.device("meta")
    xp = backend.namespace("array_api")
    assert xp is backend.namespace("array_api")  # built once
    for made in (xp.zeros(3), xp.ones((2, 2)), xp.empty(4), xp.full(3, 1.0), xp.arange(5),
                 xp.linspace(0, 1, 5), xp.eye(3), xp.asarray([1.0, 2.0])):
        assert made.device.type == "meta"
    assert xp.zeros(3, device="cpu").device.type == "cpu"  # an explicit device= still wins
    assert xp.sin is array_api_compat.torch.sin and xp.linalg is array_api_compat.torch.linalg
    assert array_api_compat.is_torch_namespace(xp)
