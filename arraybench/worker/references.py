"""The float64 references a worker keeps for its cells, and what NumPy is asked about a result.

``ReferenceCache`` computes each reference and its own noise once per cell in a process
(``workloads/reference``); ``narrower_than_numpys`` asks whether a narrow result is NumPy's own on
the same inputs; a reference that returned None leaves a cell not checked (``UNCHECKED``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import accuracy
from .shared_references import SharedReferences, digest
from ..workloads.definition import Workload
from ..workloads.inputs import Inputs, make_inputs
from ..workloads.params import accepted, text as params_text
from ..workloads.reference import (Reference, extended_allowed, numpy_namespace, reference_noise,
                                   reference_result)


class ReferenceCache:
    """Float64 references and their own noise, computed once per (workload, size, dtype) in a
    process, and once per run where the run shares them (``shared``: its folder)."""

    def __init__(self, shared: str | None = None) -> None:
        self._cache: dict[tuple[str, int, str], Reference] = {}
        self._noise: dict[tuple[str, int, str], Any] = {}
        self._shared = SharedReferences(shared)
        self._names: dict[tuple[str, int, str], str] = {}

    def _name(self, key: tuple[Any, ...], inputs: tuple[np.ndarray, ...]) -> str:
        if key not in self._names:
            self._names.clear()
            self._names[key] = digest(key, inputs)
        return self._names[key]

    def inputs(self, wl: Workload, size: int, dtype: str, seed: int, params: dict[str, Any] | None) -> Inputs:
        """The cell's host inputs: read back where another worker of the run built them, else
        built (``make_inputs``) and kept for the others."""
        if self._shared.folder is None:
            return make_inputs(wl, size, dtype, seed, params)
        where = (wl.source, getattr(wl.fn, "__module__", ""), getattr(wl.fn, "__qualname__", ""))
        name = digest((wl.name, *where, size, dtype, params_text(params or {}), seed), ())
        found = self._shared.load_inputs(name)
        if found is not None:
            return Inputs(*found)
        built = make_inputs(wl, size, dtype, seed, params)
        self._shared.put_inputs(name, built.arrays, built.fixed)
        return built

    def reference(self, wl: Workload, size: int, dtype: str, inputs: tuple[np.ndarray, ...],
                  params: dict[str, Any] | None = None) -> Reference:
        """The reference with its own estimated error (nonzero for finite-difference gradients)."""
        key = (wl.name, size, dtype, params_text(params or {}))
        if key not in self._cache:
            self._cache.clear()  # large references are big; keep one
            name = self._name(key, inputs) if self._shared.folder else ""
            found = self._shared.load(name) if name else None
            if found is None:
                extended = extended_allowed(inputs, _declared_flops(wl, size, params))
                found = single_threaded(lambda: reference_result(wl, inputs, params, extended))
                if name:
                    self._shared.put(name, found)
            self._cache[key] = found
        return self._cache[key]

    def noise(self, wl: Workload, size: int, dtype: str, inputs: tuple[np.ndarray, ...],
              params: dict[str, Any] | None = None) -> "accuracy.Noise | tuple[accuracy.Noise, ...] | None":
        """How far that reference moves on its own (a few reference calls, never timed)."""
        key = (wl.name, size, dtype, params_text(params or {}))
        if key not in self._noise:
            ref = self.reference(wl, size, dtype, inputs, params)
            name = self._name(key, inputs) if self._shared.folder else ""
            found, noise = self._shared.load_noise(name) if name else (False, None)
            if not found:
                extended = extended_allowed(inputs, _declared_flops(wl, size, params))
                noise = single_threaded(
                    lambda: reference_noise(wl, inputs, ref.value, params, dtype, ref.plain, extended))
                if name:
                    self._shared.put_noise(name, noise)
            self._noise.clear()
            self._noise[key] = noise
        return self._noise[key]


def _declared_flops(wl: Workload, size: int, params: dict[str, Any] | None) -> float | None:
    """The float64 work the workload declares for one call at ``size``, or None."""
    try:
        work = wl.work_for(size, 8, params)
    except Exception:  # a work model that fails is reported where the cell reads it
        return None
    return work.flops if work is not None else None


def single_threaded(fn: Callable[[], Any]) -> Any:
    """Run NumPy work with a one-thread BLAS, so no idle BLAS pool spins beside the library timed.

    Waking OpenBLAS's pool in a torch or JAX worker slows that library's next operations (measured
    on a 2-core machine: ~1.8x for a torch matmul right after a NumPy one).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return fn()
    with threadpool_limits(limits=1, user_api="blas"):
        return fn()


def narrower_than_numpys(wl: Workload, host: tuple[Any, ...], params: dict[str, Any],
                          out_dtype: str | None, dtype: str) -> bool:
    """Whether a floating result narrower than the run's ``dtype`` is one NumPy does not give when
    it runs the workload's ``reference=`` (the user's word on what the answer is), or else its own
    function, on the same inputs, fixed dtypes and all: ``xp.astype(x, xp.float32)`` written into
    the function beside a fixed float32 ``w`` is then a cast the reference does not make."""
    if out_dtype is None or wl.grad or wl.namespace == "backend":
        return False
    got, want = np.dtype(out_dtype), np.dtype(dtype)
    if not (np.issubdtype(got, np.floating) and np.issubdtype(want, np.floating)) \
            or np.finfo(got).eps <= np.finfo(want).eps:
        return False
    try:
        copies = tuple((list(h) if isinstance(h, list) else np.array(h, copy=True)) for h in host)
        ref = wl.reference
        if ref is not None:
            produced = single_threaded(lambda: wl.result_of(
                ref(*copies, **accepted(ref, params, filled=len(copies))), list(copies)))
        else:
            fn = wl.function_for("numpy")
            produced = single_threaded(lambda: wl.result_of(
                fn(numpy_namespace(wl.namespace_for("numpy")), *copies, **params), list(copies)))
    except Exception:  # NumPy cannot run it here: the fixed inputs explain what they can
        return False
    theirs = getattr(produced, "dtype", None)
    return theirs is not None and np.dtype(theirs) == want


UNCHECKED = ("not checked: the reference (the workload's reference=, or its own function run by NumPy) "
              "returned None, so there is nothing to judge the result by: return the result, or "
              "declare @workload(mutates=(...)) for code that changes its inputs in place")


def is_none(value: Any) -> bool:
    """Whether a reference (or one of its outputs) is None, as NumPy holds it."""
    values = value if isinstance(value, tuple) else (value,)
    return any(v is None or (isinstance(v, np.ndarray) and v.dtype == object and v.shape == ()
                             and v.item() is None) for v in values)
