"""Finite-difference gradients, for libraries without automatic differentiation.

Written against the array protocol NumPy and CuPy share (reshape views, item assignment), so it needs
no import of either.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np


def forward_difference_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The gradient of scalar ``fn(w, *rest)`` in ``w`` by forward differences.

    One extra forward pass per parameter, as in the seed article: this is the O(n) cost autodiff
    avoids. Each step is ``sqrt(eps) * max(1, |w_i|)``, the textbook balance between truncation and
    rounding error, and the step actually taken is read back after rounding to the dtype. ``w`` is
    perturbed in place and restored, so no copy is made per parameter.
    """

    def grad(w: Any, *rest: Any) -> Any:
        eps = float(np.finfo(np.dtype(str(w.dtype))).eps)
        root_eps = math.sqrt(eps)
        flat = w.reshape(-1)
        out = w.copy()
        flat_out = out.reshape(-1)
        f0 = scalar_loss(fn(w, *rest))
        for i in range(flat.shape[0]):
            wi = float(flat[i])
            flat[i] = wi + root_eps * max(1.0, abs(wi))
            step = float(flat[i]) - wi
            fi = scalar_loss(fn(w, *rest))
            flat[i] = wi
            flat_out[i] = (fi - f0) / step
        return out

    return grad


def central_difference_grad_with_error(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Central differences of a NumPy ``fn(w, *rest)`` with an estimate of their own error.

    Returns ``grad(w, *rest) -> (g, error)``: ``g`` by central differences with the step
    ``h = eps^(1/3) * max(1, |w_i|)``, and per component a conservative bound of ``|g - true|``:
    twice the difference from the estimate with step ``2h`` (truncation error grows as h^2 and
    rounding noise differs between the two steps, so their gap shows both) plus four times the
    rounding floor ``eps * |f| / h``. It costs four evaluations of ``fn`` per parameter.
    A check against such a reference can only be as tight as this error; arraybench widens the
    tolerance by it instead of calling a correct gradient wrong.
    """

    def grad(w: np.ndarray, *rest: Any) -> tuple[np.ndarray, np.ndarray]:
        eps = float(np.finfo(w.dtype).eps)
        root = eps ** (1.0 / 3.0)
        f0 = abs(scalar_loss(fn(w, *rest)))
        flat = w.reshape(-1)
        if not np.shares_memory(flat, w):
            raise ValueError("central differences perturb the first input in place; it must be contiguous")
        g = np.empty(flat.shape[0], dtype=w.dtype)
        err = np.empty(flat.shape[0], dtype=np.float64)

        def central(i: int, wi: float, h: float) -> tuple[float, float]:
            flat[i] = wi + h
            hi = float(flat[i])
            f_hi = scalar_loss(fn(w, *rest))
            flat[i] = wi - h
            lo = float(flat[i])
            f_lo = scalar_loss(fn(w, *rest))
            flat[i] = wi
            return (f_hi - f_lo) / (hi - lo), max(abs(f_hi), abs(f_lo))

        for i in range(flat.shape[0]):
            wi = float(flat[i])
            h = root * max(1.0, abs(wi))
            d1, f1 = central(i, wi, h)
            d2, f2 = central(i, wi, 2.0 * h)
            g[i] = d1
            err[i] = 2.0 * abs(d1 - d2) + 4.0 * eps * max(f0, f1, f2) / h
        return g.reshape(w.shape), err.reshape(w.shape)

    return grad


def scalar_loss(value: Any) -> float:
    """A loss as a Python float; a clear error when the function returned more than one number."""
    shape = tuple(getattr(value, "shape", ()) or ())
    if shape and int(np.prod(shape)) != 1:
        raise ValueError(f"a gradient needs a scalar loss, but the function returned an array of shape "
                         f"{shape}: with grad=True the function (and any override) returns the loss; a "
                         "function that returns the gradient itself is given with "
                         "@<workload>.gradient(\"numpy\"), not override()")
    return float(value.reshape(()) if shape else value)
