"""Numba as NumPy's compiler: a workload's own function under ``numba.njit``, with the NumPy
module as its ``xp`` argument. Numba has no type for a module passed as an argument, so this module
registers one (``types.Module``, as for modules read as globals): ``xp.sin`` then types as ``np.sin``.
"""

from __future__ import annotations

import functools
import re
import types as pytypes
from contextlib import suppress
from typing import Any, Callable

import numba
import numpy as np
from numba.core import errors, types
from numba.extending import NativeValue, models, register_model, typeof_impl, unbox


@typeof_impl.register(pytypes.ModuleType)
def _typeof_module(val: pytypes.ModuleType, c: Any) -> types.Module:
    return types.Module(val)


# A module carries no data at run time: every use of it is resolved while typing.
register_model(types.Module)(models.OpaqueModel)


@unbox(types.Module)
def _unbox_module(typ: types.Module, obj: Any, c: Any) -> NativeValue:
    return NativeValue(c.context.get_dummy_value())


def compile_workload(fn: Callable[..., Any], settings: dict[str, Any], grad: bool) -> Callable[..., Any]:
    """``op(*arrays)``: ``fn(np, *arrays, **settings)`` under ``numba.njit``, compiled at its first
    call; with ``grad``, forward differences of it, the loop compiled too."""
    loss = numba.njit(cache=False)(fn)
    if grad:
        return _compiled_forward_difference(loss, settings)
    # partial: no Python frame of ours between the timer and Numba's dispatcher.
    return functools.partial(loss, np, **settings)


def _compiled_forward_difference(loss: Any, settings: dict[str, Any]) -> Callable[..., Any]:
    """``numeric.finite_diff.forward_difference_grad`` of ``loss(np, w, *rest)`` as one compiled loop."""
    if settings:
        raise errors.UnsupportedError("settings of a gradient workload cannot reach a compiled loss")

    @numba.njit(cache=False)
    def grad(xp: Any, w: Any, *rest: Any) -> Any:
        root_eps = np.sqrt(np.finfo(w.dtype).eps)
        flat = w.reshape(-1)
        out = np.empty_like(w)
        flat_out = out.reshape(-1)
        f0 = loss(xp, w, *rest)
        for i in range(flat.shape[0]):
            wi = flat[i]
            flat[i] = wi + root_eps * max(1.0, abs(wi))
            step = flat[i] - wi
            fi = loss(xp, w, *rest)
            flat[i] = wi
            flat_out[i] = (fi - f0) / step
        return out

    return functools.partial(grad, np)


def refusal(exc: BaseException) -> str | None:
    """Where Numba refused to compile (typing, unsupported features: not applicable, not failed), its
    own reason in one line: the first after the failed pipeline stage's lines; else None."""
    if not isinstance(exc, (errors.TypingError, errors.UnsupportedError, errors.NumbaNotImplementedError,
                            errors.LoweringError, errors.UnsupportedBytecodeError)):
        return None
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("Failed in ", "File ", "During:", "^", "- Resolution failure", "No implementation of function")):
            continue
        # "Module(<module 'numpy.fft' from '/.../__init__.py'>)" says "module numpy.fft".
        line = re.sub(r"Module\(<module '([^']+)'[^>]*>\)", r"module \1", line)
        return f"Numba: {line}"[:300]
    return f"Numba: {lines[0]}" if lines else type(exc).__name__


def threading() -> tuple[str, int]:
    """(the threading layer Numba chose here, its thread count), after a tiny ``prange`` loop:
    Numba picks its layer only when a parallel function first runs."""

    @numba.njit(parallel=True, cache=False)
    def total(a: Any) -> Any:
        s = 0.0
        for i in numba.prange(a.shape[0]):
            s += a[i]
        return s

    total(np.ones(64))
    return numba.threading_layer(), numba.get_num_threads()


def info() -> dict[str, Any]:
    """Numba's and llvmlite's versions and the CPU Numba compiles for."""
    import llvmlite

    out: dict[str, Any] = {"numba": numba.__version__, "llvmlite": llvmlite.__version__}
    with suppress(Exception):
        import llvmlite.binding as ll

        out["numba_target_cpu"] = numba.config.CPU_NAME or ll.get_host_cpu_name()
    out["numba_threading_layer"] = numba.config.THREADING_LAYER
    return out
