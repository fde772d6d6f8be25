"""MLX's float64 functions that compute with float32 accuracy on the CPU, and how a wrong verdict
is shown to come from them.

MLX's CPU kernels of ``sin``, ``cos``, ``exp``, ``erf`` and ``erfinv`` (and the ops it builds on
``exp``: ``sigmoid``, ``logaddexp``, ``softmax``, ``logsumexp``) use float32 approximations for
float64 arrays: a known, open upstream bug (ml-explore/mlx#3047, "[CPU] Some ops fallback to fp32
implementation even for fp64"). A float64 workload that calls one is judged ``wrong``, truly. The
backend turns that verdict into a skip only where a counterfactual says the bug explains it all:
the workload, called again (eager, untimed) with those functions computed in float64 on the host,
is within the check's tolerance, and the judged result equals a plain eager call's. A workload
that calls none of them, or has an error of its own besides, stays ``wrong``.

Which functions are float32-accurate is found by asking this MLX (``float32_accurate``), not by
its version number: no release has fixed it yet, and a fixed MLX is judged normally the day it
ships.

MLX has no complex128 either, so its FFTs compute a float64 array in complex64 and a float64
workload that calls one gets a float32 (or complex64) result, which no tolerance can make float64
(``fft_without_complex128``): skipped too, with that reason, where the workload, called again,
passed a float64 array to an FFT and got the narrower result. Imported only inside a worker, by
``backends.mlx``, on a wrong verdict.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

import mlx.core as mx
import numpy as np

#: The upstream issue a skip's reason names.
ISSUE = "ml-explore/mlx#3047"

#: Relative error above which a float64 function is not float64-accurate: float64's rounding is
#: ~1e-16, a float32 approximation's ~1e-8 (measured on MLX 0.32.4: sin 8e-7, erf 3e-4 at worst).
_NOT_FLOAT64 = 1e-12


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, (list, tuple)) else axis


def _host_versions() -> dict[str, Callable[..., np.ndarray]]:
    """Each suspect's float64-accurate host version, with MLX's signature (less ``stream``)."""
    from scipy import special  # only on a wrong verdict: keeps scipy out of every MLX worker's start

    return {
        "sin": np.sin, "cos": np.cos, "exp": np.exp, "erf": special.erf, "erfinv": special.erfinv,
        "sigmoid": special.expit, "logaddexp": np.logaddexp,
        "softmax": lambda a, axis=None, *, precise=False: special.softmax(a, axis=_axis(axis)),
        "logsumexp": lambda a, axis=None, keepdims=False: special.logsumexp(
            a, axis=_axis(axis), keepdims=keepdims),
    }


#: The functions MLX 0.32.4 was found to compute float64 with float32 accuracy on the CPU, in
#: the order a reason names them.
SUSPECTS = ("sin", "cos", "exp", "erf", "erfinv", "sigmoid", "logaddexp", "softmax", "logsumexp")


@functools.cache
def float32_accurate() -> tuple[str, ...]:
    """Those of ``SUSPECTS`` that this MLX computes with float32 accuracy for float64 on the CPU,
    each compared once with its host version on 39 points in (-0.95, 0.95)."""
    host = _host_versions()
    x = np.linspace(-0.95, 0.95, 39)
    found = []
    for name in SUSPECTS:
        own = getattr(mx, name, None)
        if own is None:
            continue
        args = (x, x[::-1].copy()) if name == "logaddexp" else (x,)
        got = np.array(own(*(mx.array(a, dtype=mx.float64) for a in args), stream=mx.cpu))
        want = host[name](*args)
        if np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-300)) > _NOT_FLOAT64:
            found.append(name)
    return tuple(found)


def _is_float64(a: Any) -> bool:
    return isinstance(a, mx.array) and a.dtype == mx.float64


def in_float64(namespace: Any, names: tuple[str, ...], called: list[str]) -> types.ModuleType:
    """``namespace`` with each of ``names`` computed in float64 on the host where it gets a
    float64 array (the name appended to ``called`` each time), MLX's own otherwise.

    For an eager, untimed call only: the host round trip cannot be traced by ``mx.compile``.
    """
    host = _host_versions()
    ns = types.ModuleType(getattr(namespace, "__name__", "mlx.core") + "_float64",
                          "an MLX namespace with float64 functions computed on the host")
    ns.__dict__.update({k: v for k, v in vars(namespace).items() if not k.startswith("__")})

    def accurate(name: str, own: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if not any(_is_float64(a) for a in args):
                return own(*args, **kwargs)
            called.append(name)
            kwargs.pop("stream", None)
            values = [np.array(a) if isinstance(a, mx.array) else a for a in args]
            return mx.array(np.asarray(host[name](*values, **kwargs), dtype=np.float64), dtype=mx.float64)

        return call

    for name in names:
        own = getattr(namespace, name, None)
        if own is not None:
            setattr(ns, name, accurate(name, own))
    return ns


def recording_fft(namespace: Any, called: list[str]) -> types.ModuleType:
    """``namespace`` whose ``fft`` functions append their name to ``called`` where they get a
    float64 array: MLX has no complex128, so each of those computes in complex64."""
    ns = types.ModuleType(getattr(namespace, "__name__", "mlx.core") + "_fft_seen",
                          "an MLX namespace that records its FFTs of float64 arrays")
    ns.__dict__.update({k: v for k, v in vars(namespace).items() if not k.startswith("__")})
    own = namespace.fft
    fft = types.ModuleType("fft")
    fft.__dict__.update({k: v for k, v in vars(own).items() if not k.startswith("__")})

    def seen(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if any(_is_float64(a) for a in args):
                called.append(name)
            return fn(*args, **kwargs)

        return call

    for name, fn in vars(own).items():
        if callable(fn) and not name.startswith("_") and "freq" not in name and "shift" not in name:
            setattr(fft, name, seen(name, fn))
    ns.fft = fft
    return ns


def fft_without_complex128(rerun: Callable[[Any], Any], namespace: Any) -> tuple[str, ...]:
    """The FFTs of float64 arrays a workload called, where that explains its narrower result:
    MLX has no complex128, the workload (called again) got a float64 array into an FFT, and its
    result came out float32 or complex64. Empty where any of that does not hold."""
    if hasattr(mx, "complex128") or not hasattr(namespace, "fft"):
        return ()
    called: list[str] = []
    out = rerun(recording_fft(namespace, called))
    outs = out if isinstance(out, (tuple, list)) else (out,)
    narrow = any(np.asarray(o).dtype in (np.float32, np.complex64) for o in outs)
    return tuple(dict.fromkeys(called)) if called and narrow else ()
