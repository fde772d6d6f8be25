"""The float64 reference a result is checked against, computed by NumPy from the very same inputs
(promoted to float64, so the error measured is the library's, not the cast's).

Without ``reference=``, the workload's own function runs through NumPy; for a gradient, by central
differences, whose error is estimated. Where affordable (``extended_allowed``: sizes, never time,
so every worker decides alike) the reference is the long-double run rounded to float64: a float64
reduction errs like sqrt(n), and no library should be charged for that. How far the reference
moves on its own (``reference_noise``) is what a ``derived`` check's tolerance is made of.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..backends.numpy import NumpyBackend
from .check import DERIVED_NEAR_ZERO, Check, Noise, machine_epsilon, own_size_floor
from ..numeric.finite_diff import central_difference_grad_with_error
from .definition import Workload
from .params import Params, accepted

#: Inputs of the noise reruns are each multiplied by 1 + u * eps, u uniform in [-PERTURB_ULPS, PERTURB_ULPS].
PERTURB_ULPS = 4.0
#: Perturbed reruns: two draws see the conditioning; more only add calls.
PERTURBED_RUNS = 2
#: Long double has no BLAS (a 1000x1000 matmul takes about 7 s): it runs where the inputs hold
#: at most this many elements (a reduction over 4M takes ~0.3 s)...
LONG_DOUBLE_ELEMENTS = 2 ** 22
#: ...and the workload's declared work, where it declares one, is at most this many flops (~1 s).
LONG_DOUBLE_FLOPS = 2.0 ** 28

_CENTRAL_NOTE = ("reference gradient by central differences (no reference= given): "
                 "the tolerance includes its estimated error")


@dataclass(frozen=True)
class Reference:
    """The float64 reference result, and how far off it may be in the measure of the workload's
    ``Check`` (nonzero for a finite-difference gradient; ``note`` says why)."""

    value: Any
    error: float = 0.0
    note: str = ""
    #: NumPy's plain float64 result where ``value`` is the long-double run rounded to float64.
    plain: Any = None


def extended_allowed(inputs: tuple[Any, ...], flops: float | None = None) -> bool:
    """Whether the reference reruns in long double: NumPy has a wider one, and the inputs and the
    declared work (``flops``, None if undeclared) are within the limits above."""
    if not np.finfo(np.longdouble).eps < np.finfo(np.float64).eps:
        return False
    elements = sum(int(np.size(a)) for a in inputs)
    return elements <= LONG_DOUBLE_ELEMENTS and (flops is None or flops <= LONG_DOUBLE_FLOPS)


def reference_result(wl: Workload, inputs: tuple[Any, ...], params: Params | None = None,
                     extended: bool | None = None) -> Reference:
    """The float64 reference of ``wl`` for inputs already cast to the run's dtype, with the cell's
    settings; ``extended`` (default: ``extended_allowed`` by elements alone) computes it in long
    double, rounded to float64."""
    wide = tuple(_widen(a) for a in inputs)
    settings = params if params is not None else {}
    if wl.reference is not None or not wl.grad:
        return _extended(_call(wl, settings), wide, extended_allowed(wide) if extended is None else extended)
    if not wide or not np.issubdtype(wide[0].dtype, np.floating):
        got = wide[0].dtype if wide else "no input"
        raise TypeError(f"{wl.name}: grad=True differentiates with respect to the first "
                        f"input, which must be a floating array (got {got})")
    fn = functools.partial(wl.function_for("numpy"), **settings)
    xp = numpy_namespace(wl.namespace_for("numpy"))
    value, abs_error = central_difference_grad_with_error(lambda *a: fn(xp, *a))(*wide)
    error = wl.check.error(value + abs_error, value) if np.any(abs_error) else 0.0
    return Reference(value, float(error), _CENTRAL_NOTE if error else "")


def _call(wl: Workload, settings: Params) -> Callable[..., Any]:
    """The reference as a call of the inputs: ``reference=`` with the settings it takes by name, or
    the workload's function under NumPy; an in-place one's result is the inputs it changed."""
    ref = wl.reference
    if ref is not None:
        return lambda *args: _as_host(wl.result_of(ref(*args, **accepted(ref, settings, filled=len(args))), args))
    fn = functools.partial(wl.function_for("numpy"), **settings)
    xp = numpy_namespace(wl.namespace_for("numpy"))
    return lambda *args: _as_host(wl.result_of(fn(xp, *args), args))


def _extended(call: Callable[..., Any], wide: tuple[Any, ...], extended: bool) -> Reference:
    """``call``'s float64 result, replaced by its long-double run rounded to float64 where that ran
    and agrees in shape (NumPy refuses long double in ``linalg``)."""
    # Long double first, on copies: an in-place workload's plain run changes ``wide`` itself.
    long = _quietly(call, tuple(_long(a) for a in wide)) if extended else None
    plain = call(*wide)
    if long is None:
        return Reference(plain)
    if isinstance(plain, tuple):
        if not isinstance(long, tuple) or len(long) != len(plain):
            return Reference(plain)
        value: Any = tuple(_better(p, g) for p, g in zip(plain, long))
    else:
        value = _better(plain, long)
    return Reference(value, plain=plain)


def _better(plain: Any, long: Any) -> Any:
    """The long-double result in float64's type where it is a floating array of the same shape
    and finite wherever the float64 one is; the float64 one otherwise."""
    plain, long = np.asarray(plain), np.asarray(long)
    if (not np.issubdtype(plain.dtype, np.inexact) or not np.issubdtype(long.dtype, np.inexact)
            or long.shape != plain.shape):
        return plain
    narrowed = long.astype(plain.dtype)
    return plain if np.any(np.isfinite(plain) & ~np.isfinite(narrowed)) else narrowed


def reference_noise(wl: Workload, inputs: tuple[Any, ...], value: Any,
                    params: Params | None = None, dtype: str = "float64", plain: Any = None,
                    extended: bool | None = None) -> Noise | tuple[Noise, ...] | None:
    """How far the float64 reference ``value`` moves on its own, per output, in ulps of the type
    each rerun ran in: on inputs perturbed by ``PERTURB_ULPS`` (its conditioning); NumPy's plain
    float64 result (``plain``) or a long-double rerun (float64 rounding, which perturbed inputs do
    not show for long sums); and, for a narrower ``dtype``, NumPy in that dtype (only arithmetic
    in float32 shows float32 rounding). None for a finite-difference gradient (estimated instead).
    """
    if wl.grad and wl.reference is None:
        return None
    wide = tuple(_widen(a) for a in inputs)
    call = _call(wl, params if params is not None else {})
    rng = np.random.default_rng(20231)
    eps = machine_epsilon("float64")
    variants: list[tuple[Any, float]] = []
    sources = [f"inputs perturbed by {PERTURB_ULPS:g} ulp"]

    def rerun(args: Any, source: str = "", ulp: Callable[[Any], float] = lambda _got: eps) -> bool:
        """Whether ``call`` ran on ``args`` (then kept, its move in ``ulp``s of its result)."""
        got = _quietly(call, tuple(args))
        if got is not None:
            variants.append((got, ulp(got)))
            if source:
                sources.append(source)
        return got is not None

    for _ in range(PERTURBED_RUNS):
        rerun(_floats(a, lambda f: f * (1.0 + eps * rng.uniform(-PERTURB_ULPS, PERTURB_ULPS, f.shape)))
              for a in wide)
    float64_only = plain is None
    if plain is not None:
        variants.append((plain, eps))
        sources.append("NumPy's float64 against its long double")
    elif extended if extended is not None else extended_allowed(wide):
        float64_only = not rerun(map(_long, wide), "in long double")
    if float64_only and any(isinstance(a, np.ndarray) and a.ndim >= 2 for a in wide):
        # No long double: float64's own rounding, which perturbed inputs barely move (1.5 ulp seen,
        # 56 ulp off), shows in another summation order (NumPy sums Fortran-ordered columns pairwise).
        rerun((np.array(a, order="F") if isinstance(a, np.ndarray) else a for a in wide),
              "NumPy's float64 on Fortran-ordered inputs (another summation order)")
    narrow = max([machine_epsilon(dtype)] + [machine_epsilon(a.dtype) for a in inputs
                                             if isinstance(a, np.ndarray) and np.issubdtype(a.dtype, np.inexact)])
    if narrow > eps:
        # The run's dtype, or an input fixed narrower: NumPy on the inputs as given shows its
        # rounding, in ulps of the type its result came out in.
        run_narrow = machine_epsilon(dtype) > eps
        rerun(map(_copy, inputs), f"by NumPy in {np.dtype(dtype).name}" if run_narrow
              else "by NumPy on the inputs as given (fixed narrower)",
              lambda got: machine_epsilon(dtype) if run_narrow else max(eps, _result_eps(got)))
    how = ", ".join(sources)
    elements = sum(int(np.size(a)) for a in wide)
    if isinstance(value, tuple):
        return tuple(_noise(v, [(g[i] if isinstance(g, tuple) and len(g) == len(value) else None, e)
                                for g, e in variants], how, elements, float64_only)
                     for i, v in enumerate(value))
    return _noise(value, [(None if isinstance(g, tuple) else g, e) for g, e in variants], how, elements,
                  float64_only)


def _noise(ref: Any, variants: list[tuple[Any, float]], sources: str, elements: int,
           float64_only: bool = False) -> Noise:
    """The largest move of one output over the reruns, in both measures, in ulps of each rerun's type."""
    ref = np.asarray(ref)
    moves = {"elementwise": 0.0, "normwise": 0.0}
    if not np.issubdtype(ref.dtype, np.inexact):
        return Noise(0.0, 0.0, sources, elements, float64_only, 0.0)
    size = np.abs(ref)
    # Elements the element-wise floor hides: whether the reference pins each down to its own size.
    top = float(np.max(size, initial=0.0))
    small = (size < DERIVED_NEAR_ZERO * top) & (size >= own_size_floor("float64"))
    below: list[float] = []
    for got, eps in variants:
        if got is None or np.shape(got) != ref.shape:
            continue
        got = np.asarray(got)
        if np.issubdtype(got.dtype, np.complexfloating) and not np.issubdtype(ref.dtype, np.complexfloating):
            continue
        got = got.astype(np.result_type(ref.dtype, np.float64))
        for kind in moves:
            with np.errstate(all="ignore"):
                move = Check(kind, near_zero=DERIVED_NEAR_ZERO).error(got, ref) / eps
            if math.isfinite(move):
                moves[kind] = max(moves[kind], move)
        if small.any():
            with np.errstate(all="ignore"):
                move = float(np.max(np.abs(got[small] - ref[small]) / size[small])) / eps
            below.append(move if math.isfinite(move) else math.inf)
    # Not measured (no rerun ran) counts as not pinned down: those elements keep the floor.
    pinned = (max(below) if below else math.inf) if small.any() else 0.0
    return Noise(moves["elementwise"], moves["normwise"], sources, elements, float64_only, pinned)


def _result_eps(got: Any) -> float:
    """The epsilon of the narrowest floating output of a rerun (0 where none is floating)."""
    outs = got if isinstance(got, tuple) else (got,)
    return max([machine_epsilon(o.dtype) for o in map(np.asarray, outs) if np.issubdtype(o.dtype, np.inexact)],
               default=0.0)


def _quietly(call: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """``call(*args)``, or None where NumPy refuses these inputs (long double in ``linalg``)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return call(*args)
    except Exception:
        return None


def _copy(a: Any) -> Any:
    return a.copy() if isinstance(a, np.ndarray) else a


def _floats(a: Any, change: Callable[[np.ndarray], Any]) -> Any:
    """``change(a)`` where ``a`` is a floating array; a copy of another array; anything else as it is."""
    return change(a) if isinstance(a, np.ndarray) and np.issubdtype(a.dtype, np.inexact) else _copy(a)


def _long(a: Any) -> Any:
    return _floats(a, lambda f: f.astype(np.clongdouble if np.iscomplexobj(f) else np.longdouble))


def _widen(a: Any) -> Any:
    if isinstance(a, list):
        return np.asarray(a, dtype=np.float64)
    return _floats(a, lambda f: f.astype(np.complex128 if np.iscomplexobj(f) else np.float64))


def _as_host(x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return tuple(np.asarray(v) for v in x)
    return np.asarray(x)


def numpy_namespace(kind: str) -> Any:
    """NumPy as a workload of namespace ``kind`` sees it: the NumPy backend's own namespace."""
    return NumpyBackend("cpu").namespace(kind)
