"""Judging a result against the NumPy float64 reference.

A workload declares how its error may grow (``Check``); the tolerance is then a multiple of the
dtype's machine epsilon: a few ulp for element-wise operations, a normwise bound that grows with the
reduction length for matmul, FFT and reductions, zero for exact operations such as sorting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

#: Above this, a finite-difference "gradient" is not a gradient, whatever the rounding model says.
FINITE_DIFFERENCE_CAP = 1e-2


#: Machine epsilon of the reduced precisions a GPU may run float32 matmuls in when allowed
#: (``--allow-tf32``): TF32 keeps 10 explicit mantissa bits (float32: 23), bfloat16 keeps 7.
REDUCED_PRECISION_EPS: dict[str, float] = {"tf32": 2.0**-10, "bf16": 2.0**-7}

#: How reduced precisions are named in reports.
PRECISION_LABELS: dict[str, str] = {"tf32": "TF32", "bf16": "bfloat16"}


def machine_epsilon(dtype: str) -> float:
    """Machine epsilon of a real or complex floating dtype."""
    return float(np.finfo(np.dtype(dtype)).eps)


@dataclass(frozen=True)
class Check:
    """How to compare a result with its reference.

    - ``elementwise``: max over elements of |out - ref| / |ref|, within ``ulps`` machine epsilons.
    - ``normwise``: max|out - ref| / max|ref|, within ``ulps * eps * growth(size)``.
    - ``exact``: the result must equal the reference.

    ``matmul=True`` says the operation runs on the GPU's matrix units, where ``--allow-tf32`` lets
    float32 run in a reduced precision: the tolerance then uses that precision's epsilon.
    """

    kind: str = "elementwise"
    ulps: float = 8.0
    growth: Callable[[int], float] | None = None
    matmul: bool = False

    @classmethod
    def elementwise(cls, ulps: float = 8.0) -> "Check":
        return cls("elementwise", ulps)

    @classmethod
    def normwise(cls, growth: Callable[[int], float], ulps: float = 8.0, matmul: bool = False) -> "Check":
        return cls("normwise", ulps, growth, matmul)

    @classmethod
    def exact(cls) -> "Check":
        return cls("exact", 0.0)

    def tolerance(self, dtype: str, size: int, precision: str | None = None) -> float:
        """The largest acceptable error for this dtype and size.

        ``precision`` (``"tf32"``...) is the reduced precision the library ran matmuls in; it
        replaces the dtype's epsilon for a ``matmul`` check, and changes nothing for the others.
        """
        if self.kind == "exact":
            return 0.0
        growth = self.growth(size) if (self.kind == "normwise" and self.growth) else 1.0
        eps = machine_epsilon(dtype)
        if precision and self.matmul:
            eps = max(eps, REDUCED_PRECISION_EPS[precision])
        return self.ulps * eps * max(growth, 1.0)

    def error(self, out: np.ndarray, ref: np.ndarray) -> float:
        """The error measure this check bounds."""
        diff = np.abs(out.astype(np.result_type(ref, np.float64)) - ref)
        if self.kind == "elementwise":
            scale = np.abs(ref)
            # Where the reference is (nearly) zero, judge against the array's scale instead.
            floor = np.finfo(np.float64).tiny + 1e-3 * float(np.max(scale, initial=0.0))
            return float(np.max(diff / np.maximum(scale, floor), initial=0.0))
        top = float(np.max(np.abs(ref), initial=0.0))
        worst = float(np.max(diff, initial=0.0))
        if top == 0.0:
            return 0.0 if worst == 0.0 else math.inf
        return worst / top


def reduced_precision_note(precision: str, dtype: str) -> str:
    """What a record says when its matmuls ran in a reduced precision."""
    label = PRECISION_LABELS.get(precision, precision)
    return (f"{dtype} matmuls ran in {label} (--allow-tf32): checked against {label}'s epsilon "
            f"{REDUCED_PRECISION_EPS[precision]:.1e}, not {dtype}'s")


def finite_difference_tolerance(dtype: str, size: int) -> float:
    """Forward differences: rounding error ~ sqrt(eps) times the loss's scale (~size terms)."""
    return min(FINITE_DIFFERENCE_CAP, math.sqrt(machine_epsilon(dtype)) * max(size, 1))


def expected_dtype(ref: np.ndarray, dtype: str) -> np.dtype:
    """The dtype a correct result has: the run's dtype, or its complex form for complex results."""
    if np.issubdtype(ref.dtype, np.complexfloating):
        return np.result_type(np.dtype(dtype), np.complex64)
    if np.issubdtype(ref.dtype, np.floating):
        return np.dtype(dtype)
    return ref.dtype


@dataclass(frozen=True)
class Verdict:
    """The outcome of a comparison: ``ok`` or the reason it is wrong."""

    ok: bool
    max_rel_error: float | None
    tolerance: float
    reason: str = ""
    #: For several outputs (mean and std, say), the error of each, in order.
    output_errors: tuple[float | None, ...] = ()
    #: A result in a dtype of the workload's own making (not the run's), said rather than wrong.
    note: str = ""


def judge(out: Any, ref: Any, check: Check, dtype: str, size: int,
          tolerance: float | None = None, out_dtype: str | None = None,
          fixed: dict[str, str] | None = None) -> Verdict:
    """Compare a result (already on the host) with the float64 reference.

    Semantics first: shape and dtype must match (a float64 run computed in float32 is wrong whatever
    its values), and NaN where the reference has none is wrong. Then the error is held against
    the tolerance. A dtype the workload itself chose is not the library's fault: a result wider
    than the run's dtype, or following an input the workload fixed (``fixed``: name -> dtype), is
    judged in its own dtype and said in ``note``.
    """
    tol = check.tolerance(dtype, size) if tolerance is None else tolerance
    if isinstance(ref, (tuple, list)):
        if not isinstance(out, (tuple, list)) or len(out) != len(ref):
            return Verdict(False, None, tol, f"expected {len(ref)} outputs, got {_describe(out)}")
        verdicts = [judge(o, r, check, dtype, size, tolerance, fixed=fixed) for o, r in zip(out, ref)]
        errors = tuple(v.max_rel_error for v in verdicts)
        bad = next((v for v in verdicts if not v.ok), None)
        known = [e for e in errors if e is not None]
        worst = max(known) if known else None
        note = "; ".join(dict.fromkeys(v.note for v in verdicts if v.note))
        tol = max(v.tolerance for v in verdicts) if verdicts else tol
        if bad is not None:
            return Verdict(False, bad.max_rel_error if bad.max_rel_error is not None else worst, tol,
                           bad.reason, errors, note)
        return Verdict(True, worst if worst is not None else 0.0, tol, "", errors, note)
    if isinstance(out, (tuple, list)):
        return Verdict(False, None, tol,
                       f"returned {len(out)} outputs where one is expected (e.g. torch.sort's indices)")
    out_arr = np.asarray(out)
    ref_arr = np.asarray(ref)
    if out_arr.shape != ref_arr.shape:
        return Verdict(False, None, tol, f"shape {out_arr.shape} differs from the reference's {ref_arr.shape}")
    want = expected_dtype(ref_arr, dtype)
    got = np.dtype(out_dtype) if out_dtype else out_arr.dtype
    note = ""
    if got != want:
        note = own_dtype(got, want, fixed or {})
        if not note:
            return Verdict(False, None, tol, f"result is {got}, expected {want}")
        if tolerance is None and np.finfo(got).eps > np.finfo(want).eps:
            tol = check.tolerance(str(np.finfo(got).dtype), size)  # judged in its own precision
    if np.issubdtype(out_arr.dtype, np.inexact):
        bad = np.isnan(out_arr) & ~np.isnan(ref_arr)
        if bad.any():
            return Verdict(False, math.inf, tol, f"{int(bad.sum())} NaN values where the reference has none")
    err = check.error(out_arr, ref_arr)
    if err > tol:
        return Verdict(False, err, tol, f"max relative error {err:.3g} exceeds tolerance {tol:.3g}",
                       note=note)
    return Verdict(True, err, tol, note=note)


def own_dtype(got: np.dtype, want: np.dtype, fixed: dict[str, str]) -> str:
    """Why a result in ``got`` rather than the run's ``want`` is the workload's doing, or "".

    Inputs not fixed are cast to the run's dtype, so a floating result *wider* than it comes from
    the workload's own code (``np.zeros(n)``, a float64 constant); one that matches the promotion
    of an input the workload fixed follows that input. A narrower result with no fixed input to
    explain it is the library's doing (JAX without x64), and wrong.
    """
    if not (np.issubdtype(got, np.inexact) and np.issubdtype(want, np.inexact)):
        return ""
    if np.issubdtype(got, np.complexfloating) != np.issubdtype(want, np.complexfloating):
        return ""
    followed = [name for name, dt in fixed.items()
                if np.issubdtype(np.dtype(dt), np.inexact)
                and got in (np.dtype(dt), np.result_type(np.dtype(dt), want))]
    if followed:
        return (f"result is {got}, not the run's {want}: it follows the {got} the workload fixed for "
                f"input {', '.join(map(repr, followed))}")
    if np.finfo(got).eps < np.finfo(want).eps:
        return (f"result is {got}, not the run's {want}: the workload's own code computes in {got} "
                f"(a constant or an array it creates), so its time is that of {got} arithmetic")
    return ""


def _describe(x: Any) -> str:
    if isinstance(x, (tuple, list)):
        return f"{len(x)} outputs"
    return "one output"
