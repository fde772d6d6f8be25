"""The float64 reference a result is checked against, computed by NumPy from the very same inputs.

The reference sees exactly the values the libraries see, promoted to float64, so the error measured
is the library's own and not the cast's. Without ``reference=``, the workload's own function runs
through NumPy; for a gradient, by central differences, whose own error is estimated and returned.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..worker.finite_diff import central_difference_grad_with_error
from .definition import Workload
from .params import Params, accepted

_CENTRAL_NOTE = ("reference gradient by central differences (no reference= given): "
                 "the tolerance includes its estimated error")


@dataclass(frozen=True)
class Reference:
    """The float64 reference result, and how far off the reference itself may be.

    ``error`` is in the measure of the workload's ``Check`` (what ``Check.error`` returns): zero for
    a reference computed directly, the estimated error of a finite-difference gradient otherwise.
    ``note`` says where a nonzero error comes from.
    """

    value: Any
    error: float = 0.0
    note: str = ""


def reference_result(wl: Workload, inputs: tuple[Any, ...], params: Params | None = None) -> Reference:
    """The float64 reference of ``wl`` for inputs already cast to the run's dtype.

    ``params`` are the cell's settings; a ``reference=`` function gets those it takes by name.
    An in-place function that returns None is judged by the inputs it changed.
    """
    wide = tuple(_widen(a) for a in inputs)
    settings = params if params is not None else {}
    if wl.reference is not None:
        return Reference(_as_host(wl.result_of(wl.reference(*wide, **accepted(wl.reference, settings)),
                                               wide)))
    fn = wl.function_for("numpy")
    fn = functools.partial(fn, **settings) if settings else fn
    xp = numpy_namespace(wl.namespace_for("numpy"))
    if wl.grad:
        if not wide or not np.issubdtype(wide[0].dtype, np.floating):
            got = wide[0].dtype if wide else "no input"
            raise TypeError(f"{wl.name}: grad=True differentiates with respect to the first "
                            f"input, which must be a floating array (got {got})")
        value, abs_error = central_difference_grad_with_error(lambda *a: fn(xp, *a))(*wide)
        error = wl.check.error(value + abs_error, value) if np.any(abs_error) else 0.0
        return Reference(value, float(error), _CENTRAL_NOTE if error else "")
    return Reference(_as_host(wl.result_of(fn(xp, *wide), wide)))


def _widen(a: Any) -> Any:
    if isinstance(a, list):
        return np.asarray(a, dtype=np.float64)
    if np.issubdtype(a.dtype, np.complexfloating):
        return a.astype(np.complex128)
    if np.issubdtype(a.dtype, np.floating):
        return a.astype(np.float64)
    return a.copy()


def _as_host(x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return tuple(np.asarray(v) for v in x)
    return np.asarray(x)


def numpy_namespace(kind: str) -> Any:
    """NumPy as a workload of namespace ``kind`` sees it (array-api-compat's wrapper, or NumPy)."""
    if kind == "array_api":
        import array_api_compat

        return array_api_compat.array_namespace(np.empty(0))
    return np
