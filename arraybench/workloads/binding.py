"""Binding a workload to one library in a worker: the callable the timer calls, and how it computes
(eager, ``jax.jit``, ``torch.compile``, autograd or finite differences)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..backends.base import Gradient, Unavailable, analytic_method
from .definition import Workload

if TYPE_CHECKING:
    from ..backends.base import Backend


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
        bound = bind(own, backend, mode, arrays, dtype, params)
        return replace(bound, method=analytic_method(bound.method), gradient="analytic")
    fn = wl.function_for(backend.name)
    if wl.namespace == "backend":
        xp: Any = Context(backend, dtype, backend.namespace("native"))
    else:
        xp = backend.namespace(wl.namespace_for(backend.name))
    settings = dict(params or {})
    gradient = backend.gradient if wl.grad else None

    if mode == "compiled":
        if wl.namespace == "backend" and backend.compiles_functions:
            raise Unavailable(f"not applicable: {backend.compile_method} compiles array code, and "
                              f"{wl.name} is about the library itself (namespace='backend')")
        op = backend.evaluated(backend.compile_workload(fn, xp, settings, grad=wl.grad))
        if wl.grad:
            return Bound(op, arrays, f"{backend.compile_method} of {backend.grad_method}", gradient)
        return Bound(op, arrays, backend.compile_method)

    def call(*a: Any) -> Any:
        return fn(xp, *a, **settings)

    if wl.grad:
        return Bound(backend.evaluated(backend.grad(call)), arrays, backend.grad_method, gradient)
    # xp travels as the first argument, and the settings as keywords of the timed call itself, so
    # the timed call has no wrapper layer around fn.
    return Bound(backend.evaluated(fn), (xp, *arrays), "eager", kwargs=settings, prefix=1)
