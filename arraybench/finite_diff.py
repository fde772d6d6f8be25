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
        f0 = float(fn(w, *rest))
        for i in range(flat.shape[0]):
            wi = float(flat[i])
            flat[i] = wi + root_eps * max(1.0, abs(wi))
            step = float(flat[i]) - wi
            fi = float(fn(w, *rest))
            flat[i] = wi
            flat_out[i] = (fi - f0) / step
        return out

    return grad


def central_difference_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The gradient by central differences: twice the passes, error O(eps^(2/3)) instead of O(sqrt(eps)).

    Used for float64 references of user gradients that come without an analytic reference.
    """

    def grad(w: Any, *rest: Any) -> Any:
        eps = float(np.finfo(np.dtype(str(w.dtype))).eps)
        root = eps ** (1.0 / 3.0)
        flat = w.reshape(-1)
        out = w.copy()
        flat_out = out.reshape(-1)
        for i in range(flat.shape[0]):
            wi = float(flat[i])
            flat[i] = wi + root * max(1.0, abs(wi))
            hi = float(flat[i])
            f_hi = float(fn(w, *rest))
            flat[i] = wi - root * max(1.0, abs(wi))
            lo = float(flat[i])
            f_lo = float(fn(w, *rest))
            flat[i] = wi
            flat_out[i] = (f_hi - f_lo) / (hi - lo)
        return out

    return grad
