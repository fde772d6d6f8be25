"""PyTorch's Array API namespace whose creation functions make arrays on the backend's device."""

from __future__ import annotations

import functools
import types
from typing import Any

__all__ = ["ARRAY_API_CREATION", "device_namespace"]


#: The Array API's creation functions that make an array from no array, and so need ``device=``.
ARRAY_API_CREATION = ("arange", "asarray", "empty", "eye", "full", "linspace", "ones", "zeros")


def device_namespace(xp: Any, device: Any) -> types.ModuleType:
    """``xp`` (array_api_compat's torch namespace) whose creation functions default to ``device``.

    array_api_compat passes ``device=None`` on to torch, which then creates on the CPU, so a
    workload's ``xp.zeros(n)`` would meet CUDA inputs on the wrong device; CuPy and JAX create on
    their device already. ``torch.set_default_device`` would fix it at a cost on every torch call
    (a ``TorchFunctionMode`` intercepts them all); here only the eight creation functions change,
    each a ``functools.partial``, and a ``device=`` the workload passes still wins. Every other name
    is the namespace's own object, looked up in a module dict as fast as the original's. Likewise
    ``from_dlpack`` (whose ``device=None`` means "where the source is": a host array's DLPack stays
    on the CPU), ``fft.fftfreq``/``rfftfreq`` and ``__array_namespace_info__().default_device()``.
    """
    ns = _module_copy(xp)
    for name in (*ARRAY_API_CREATION, "from_dlpack"):
        setattr(ns, name, functools.partial(getattr(xp, name), device=device))
    # fft.fftfreq and fft.rfftfreq make arrays from no array too (torch.fft's own, passed through
    # by array_api_compat/torch/fft.py); every other fft function follows its input.
    fft = _module_copy(xp.fft)
    for name in ("fftfreq", "rfftfreq"):
        setattr(fft, name, functools.partial(getattr(xp.fft, name), device=device))
    ns.fft = fft
    ns.__array_namespace_info__ = _info_on(xp.__array_namespace_info__, device)
    return ns


def _module_copy(module: types.ModuleType) -> types.ModuleType:
    copy = types.ModuleType(module.__name__, module.__doc__)
    copy.__dict__.update({k: v for k, v in vars(module).items() if k not in ("__name__", "__doc__")})
    return copy


def _info_on(info: type, device: Any) -> type:
    """array_api_compat's ``__array_namespace_info__`` whose ``default_device()`` is ``device``
    (array_api_compat/torch/_info.py returns ``torch.device("cpu")``, whatever creation does)."""
    return type(info.__name__, (info,), {"default_device": lambda self: device,
                                         "__module__": info.__module__, "__doc__": info.__doc__})
