"""What a cell makes of its workload: its host inputs, identical for every library and process
(drawn from a generator seeded by run seed, workload name and size; floating and complex arrays
cast to the run's dtype unless the workload fixed theirs, ``arraybench.fixed(a)``), and, in a
worker, its call bound to one library (eager, ``jax.jit``, ``torch.compile``, autograd...)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from ..backends.base import Gradient, Unavailable
from .definition import Workload
from .params import Params, accepted, array_parameters, definition_line

if TYPE_CHECKING:
    from ..backends.base import Backend


@dataclass(frozen=True)
class Fixed:
    """An input whose dtype the workload fixes: ``--dtype`` does not cast it. Made by ``fixed``."""

    array: np.ndarray


def fixed(array: Any, dtype: Any = None) -> Fixed:
    """Mark an input as keeping its own dtype (or ``dtype``) whatever the run's ``--dtype``:
    ``fixed(rng.standard_normal(n), "float32")``. Integer and boolean arrays need no mark."""
    a = np.asarray(array)
    return Fixed(a.astype(np.dtype(dtype)) if dtype is not None else a)


@dataclass(frozen=True)
class Inputs:
    """A cell's host inputs, and which of them keep the dtype the workload fixed."""

    arrays: tuple[Any, ...]
    fixed: tuple[bool, ...]

    def fixed_dtypes(self, names: Sequence[str]) -> dict[str, str]:
        """The dtype of each input the workload fixed, by name."""
        return {name: str(a.dtype) for name, a, f in zip(names, self.arrays, self.fixed) if f}


def make_inputs(wl: Workload, size: int, dtype: str, seed: int = 0,
                params: Params | None = None) -> Inputs:
    """The host inputs of ``wl`` at a size, cast to ``dtype`` unless fixed; identical for every backend and process."""
    rng = np.random.default_rng([seed, zlib.crc32(wl.name.encode()), size])
    settings = params if params is not None else wl.params_for(size)
    # Settings go to an ``inputs`` that takes them by name (``def inputs(n, rng, *, tsteps)``); the
    # generator to any but an ``inputs(n)``: *args, or a signature none can read, takes it too.
    args = (size,) if array_parameters(wl.inputs) == [] else (size, rng)
    made = arrange(wl, wl.inputs(*args, **accepted(wl.inputs, settings, filled=len(args))))
    # A Python list's floats made exactly representable in ``dtype``.
    arrays = tuple(np.asarray(a, dtype=np.dtype(dtype)).tolist() if isinstance(a, list)
                   else np.array(a.array, order="C") if isinstance(a, Fixed)
                   else _cast(np.asarray(a), dtype)
                   for a in made)
    return Inputs(arrays, tuple(isinstance(a, Fixed) for a in made))


def arrange(wl: Workload, made: Any) -> tuple[Any, ...]:
    """What ``inputs`` made, as the positional arguments of the function, checked against them."""
    params = array_parameters(wl.fn)
    if isinstance(made, Mapping):
        if params is None:
            raise TypeError(f"{wl.name}: inputs returned a dict, but the function takes *args")
        names = [p.name for p in params]
        extra = [k for k in made if k not in names]
        missing = [p.name for p in params if p.name not in made and p.default is p.empty]
        if extra or missing:
            raise TypeError(
                f"{wl.name}: inputs returned {sorted(made)}, the function takes {names}"
                + (f" (unknown: {extra})" if extra else "") + (f" (missing: {missing})" if missing else ""))
        arrays = tuple(made[n] for n in names if n in made)
    elif isinstance(made, (tuple, list)):
        arrays = tuple(made)
    else:
        arrays = (made,)
    if params is not None:
        least = sum(1 for p in params if p.default is p.empty)
        if not least <= len(arrays) <= len(params):
            takes = f"{least}" if least == len(params) else f"{least} to {len(params)}"
            raise TypeError(f"{wl.name}: inputs made {len(arrays)} array(s), but "
                            f"{wl.fn.__name__} takes {takes} after xp ({definition_line(wl.fn)})")
    return arrays


def _cast(a: np.ndarray, dtype: str) -> np.ndarray:
    # order="C": a 0-d array stays 0-d, where np.ascontiguousarray would make it shape (1,).
    if np.issubdtype(a.dtype, np.complexfloating):
        return a.astype(np.result_type(np.dtype(dtype), np.complex64), order="C")
    if np.issubdtype(a.dtype, np.floating):
        return a.astype(np.dtype(dtype), order="C")
    return np.array(a, order="C")


def input_bytes(host: tuple[Any, ...]) -> int:
    """How much memory a set of inputs takes (a list counts 8 bytes an element)."""
    return sum(getattr(h, "nbytes", 8 * len(h) if isinstance(h, list) else 8) for h in host)


# -- the call, bound to one library in a worker -----------------------------------------------------

@dataclass(frozen=True)
class Context:
    """What a ``namespace="backend"`` workload receives instead of ``xp``: the backend itself, for
    operations about the library rather than the arithmetic (construction, transfers)."""

    backend: "Backend"
    dtype: str
    xp: Any


@dataclass(frozen=True)
class Bound:
    """A workload bound to one backend and mode: call ``op(*args)``; ``method`` says how."""

    op: Callable[..., Any]
    args: tuple[Any, ...]
    method: str
    #: How the gradient is computed, for ``grad=True`` workloads.
    gradient: Gradient | None = None
    #: Settings passed by keyword to every call (eager mode; compiled functions hold them).
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: How many of ``args`` come before the workload's arrays (``xp`` in eager mode).
    prefix: int = 0


def bind(wl: Workload, backend: "Backend", mode: str, arrays: tuple[Any, ...],
         dtype: str = "float64", params: Mapping[str, Any] | None = None) -> Bound:
    """The callable to time for ``wl`` on ``backend`` in ``mode`` ("latency", "throughput",
    "compiled"); ``params`` reach the function by keyword (static under compilers)."""
    own = wl.analytic_gradient(backend.name)
    if own is not None:  # the workload's own gradient: a plain function, timed as written
        bound = bind(own, backend, mode, arrays, dtype, params)  # "jax.jit of analytic gradient"
        method = "analytic gradient" if bound.method == "eager" else f"{bound.method} of analytic gradient"
        return replace(bound, method=method, gradient="analytic")
    fn = wl.function_for(backend.name)
    xp = (Context(backend, dtype, backend.namespace("native")) if wl.namespace == "backend"
          else backend.namespace(wl.namespace_for(backend.name)))
    settings = dict(params or {})
    gradient = backend.gradient if wl.grad else None

    if mode == "compiled":
        if wl.namespace == "backend" and backend.compiles_functions:
            raise Unavailable(f"not applicable: {backend.compile_method} compiles array code, and "
                              f"{wl.name} is about the library itself (namespace='backend')")
        op = backend.evaluated(backend.compile_workload(fn, xp, settings, grad=wl.grad))
        method = f"{backend.compile_method} of {backend.grad_method}" if wl.grad else backend.compile_method
        return Bound(op, arrays, method, gradient)

    def call(*a: Any) -> Any:
        return fn(xp, *a, **settings)

    if wl.grad:
        return Bound(backend.evaluated(backend.grad(call)), arrays, backend.grad_method, gradient)
    # xp travels as the first argument, and the settings as keywords of the timed call itself, so
    # the timed call has no wrapper layer around fn.
    return Bound(backend.evaluated(fn), (xp, *arrays), "eager", kwargs=settings, prefix=1)
