"""Finite-difference gradients, for libraries without automatic differentiation, written against
the array protocol NumPy and CuPy share (reshape views, item assignment)."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np


def forward_difference_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The gradient of scalar ``fn(w, *rest)`` in ``w`` by forward differences: one extra pass per
    parameter (the seed's O(n) cost autodiff avoids), step ``sqrt(eps) * max(1, |w_i|)`` read back
    after rounding, ``w`` perturbed in place and restored."""

    def grad(w: Any, *rest: Any) -> Any:
        root_eps = math.sqrt(np.finfo(np.dtype(str(w.dtype))).eps)
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
    """``grad(w, *rest) -> (g, error)``: central differences of a NumPy ``fn`` with step
    ``h = eps^(1/3) * max(1, |w_i|)``, and per component a conservative bound of ``|g - true|``:
    twice the gap to the estimate with step ``2h`` (truncation and rounding both show in it) plus
    four times the rounding floor ``eps * |f| / h``. A check widens its tolerance by it."""

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
