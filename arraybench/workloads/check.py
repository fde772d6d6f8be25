"""What a workload declares about its result's accuracy: a ``Check``, and the ``Noise`` of a reference.

A tolerance is a multiple of the dtype's epsilon: a few ulp element-wise, a normwise bound growing
with the reduction length, zero for exact operations. A workload that says nothing gets one derived
from how far its own float64 reference moves (``Noise``): ordinary float64 code differs from NumPy's
by more than 8 ulp wherever it reduces, and a fixed bound would call it wrong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .params import POSITIONAL, parameters

#: Machine epsilon of the reduced precisions a GPU may run float32 matmuls in (``--allow-tf32``).
REDUCED_PRECISION_EPS: dict[str, float] = {"tf32": 2.0**-10, "bf16": 2.0**-7}

#: A matmul in a reduced precision p is bounded by ``REDUCED_UNITS * u * growth(n)``, never below
#: ``REDUCED_FLOOR_UNITS * u``, u = eps_p / 2: errors of random sign grow as √n (Higham & Mary,
#: 2019), so a result 10% off fails at n = 2,000 (bound 0.044), where the float32 rule allowed 0.70.
REDUCED_UNITS = 2.0
REDUCED_FLOOR_UNITS = 8.0


def machine_epsilon(dtype: str) -> float:
    """Machine epsilon of a real or complex floating dtype."""
    return float(np.finfo(np.dtype(dtype)).eps)


#: An element-wise check judges elements below this fraction of max|ref| against it (0 where the
#: reference rounds to 1e-17 is right); a derived check uses √eps of float64, so ``log(1 + e)`` for
#: ``log1p(e)`` is still judged on its near-zero elements.
ELEMENTWISE_NEAR_ZERO = 1e-3
DERIVED_NEAR_ZERO = 2.0 ** -26


def own_size_floor(dtype: str) -> float:
    """The smallest value an element is judged against its own size at: clear of subnormals."""
    info = np.finfo(np.dtype(dtype))
    return float(info.tiny / info.eps)

#: A derived check judges an output element-wise when perturbed inputs move none of its elements
#: more than this many ulps of its own value; otherwise normwise.
STABLE_ELEMENTWISE_ULPS = 64.0


@dataclass(frozen=True)
class Noise:
    """How far the float64 reference of one output moves on its own, in ulps of each rerun's type,
    in the two measures of ``Check.error``; ``sources`` says what was rerun."""

    elementwise: float
    normwise: float
    sources: str = ""
    #: Elements in the inputs: a reduction of them may round log2 of that many times.
    elements: int = 0
    #: The reference is NumPy's plain float64 run (no long double), its rounding in every error.
    float64_only: bool = False
    #: The most an element below the near-zero floor moved, in ulps of its own value (0: none
    #: there; inf: not measured).
    below_floor: float = math.inf

    def ulps(self, kind: str) -> float:
        """The noise in ulps, in the measure of a check of ``kind``."""
        return self.elementwise if kind == "elementwise" else self.normwise

    def describe(self, kind: str, dtype: str) -> str:
        """``moves by 3.1e-14 (14 ulp of float64: how it was seen)``."""
        ulps = self.ulps(kind)
        return (f"moves by {ulps * machine_epsilon(dtype):.2g} ({ulps:.3g} ulp of "
                f"{np.dtype(dtype).name}: {self.sources})")


@dataclass(frozen=True)
class Check:
    """How to compare a result with its reference.

    - ``derived`` (the default): ``factor`` times how far the float64 reference moves on its own
      (``Noise``), never below ``ulps`` nor 2 log2(N) ulps for N input elements; element-wise
      where every element is stable, normwise otherwise.
    - ``elementwise``: max over elements of |out - ref| / |ref|, within ``ulps`` machine epsilons.
    - ``normwise``: max|out - ref| / max|ref|, within ``ulps * eps * growth(size)``.
    - ``exact``: the result must equal the reference.

    ``rtol`` replaces the ulps rule: one number, or a dict by dtype name (a dtype it leaves out gets
    the derived tolerance). ``growth`` takes ``(n)`` or ``(n, dtype)``. ``matmul=True``: with
    ``--allow-tf32`` the tolerance uses the reduced precision's epsilon.
    """

    kind: str = "elementwise"
    ulps: float = 8.0
    growth: Callable[..., float] | None = None
    matmul: bool = False
    rtol: float | tuple[tuple[str, float], ...] | None = None
    #: For ``derived``: how many times the reference's own noise a result may be off.
    factor: float = 32.0
    #: Element-wise: elements below this fraction of max|ref| are judged against it.
    near_zero: float = ELEMENTWISE_NEAR_ZERO

    def __post_init__(self) -> None:
        if isinstance(self.rtol, dict):
            object.__setattr__(self, "rtol", _rtol_pairs(self.rtol))
        elif self.rtol is not None and not isinstance(self.rtol, tuple):
            object.__setattr__(self, "rtol", _positive("rtol", self.rtol))

    @classmethod
    def derived(cls, factor: float = 32.0, floor_ulps: float = 16.0) -> "Check":
        """Tolerance from the reference's own noise: ``factor`` x noise, at least ``floor_ulps``."""
        return cls("derived", _positive("floor_ulps", floor_ulps), factor=_positive("factor", factor))

    @classmethod
    def elementwise(cls, ulps: float = 8.0, rtol: float | dict[str, float] | None = None) -> "Check":
        """Each element within ``ulps`` epsilons (or ``rtol``) of its own reference value."""
        return cls("elementwise", ulps, rtol=rtol)

    @classmethod
    def normwise(cls, growth: Callable[..., float] | None = None, ulps: float = 8.0,
                 matmul: bool = False, rtol: float | dict[str, float] | None = None) -> "Check":
        """The largest difference within ``ulps * eps * growth(n[, dtype])`` (or ``rtol``) of max|ref|."""
        return cls("normwise", ulps, growth, matmul, rtol)

    @classmethod
    def exact(cls) -> "Check":
        """The result must equal the reference (sorting, integer work)."""
        return cls("exact", 0.0)

    def settle(self, noise: "Noise | None", dtype: str | None = None, outputs: int = 0) -> "Check":
        """The concrete check for an output with this noise in a ``dtype`` run: a ``derived`` one (or
        one whose ``rtol`` leaves ``dtype`` out) becomes element-wise or normwise with its
        tolerance. ``outputs``: the output's elements, where known (bounding a reduction's length)."""
        if self.kind != "derived":
            return Check.derived().settle(noise) if self.leaves_out(dtype) else self
        if noise is None:
            return Check("normwise", self.ulps)
        # A pairwise reduction over N elements rounds log2(N) times, and another library's order
        # of summation need not move the reference at all: the floor grows with it.
        floor = max(self.ulps, 2.0 * math.log2(max(noise.elements, 1)))
        if outputs:
            # A reduction of L = N / outputs terms summed in another order errs by up to ~√L ulps
            # (PyTorch's var at 10^6 is 83 ulp off), which the reference cannot show.
            floor = max(floor, math.sqrt(max(noise.elements, 1) / outputs))
        # Rounding moves a sequential scan's elements by up to ~√N ulps, instability by orders
        # more: within √N the output stays judged element by element.
        stable = max(STABLE_ELEMENTWISE_ULPS, math.sqrt(max(noise.elements, 1)))
        if noise.elementwise <= stable:
            return Check("elementwise", max(floor, self.factor * noise.elementwise),
                         near_zero=DERIVED_NEAR_ZERO)
        return Check("normwise", max(floor, self.factor * noise.normwise))

    def needs_noise(self, dtype: str) -> bool:
        """Whether this check's tolerance in a ``dtype`` run comes from the reference's noise."""
        return self.kind == "derived" or self.leaves_out(dtype)

    def leaves_out(self, dtype: str | None) -> bool:
        """Whether ``rtol`` is given per dtype, and not for ``dtype``."""
        return (dtype is not None and isinstance(self.rtol, tuple)
                and np.dtype(dtype).name not in dict(self.rtol))

    def tolerance(self, dtype: str, size: int, precision: str | None = None) -> float:
        """The largest acceptable error for this dtype and size; ``precision`` (``"tf32"``...), the
        one the library ran matmuls in, replaces the dtype's epsilon for a ``matmul`` check."""
        if self.kind == "exact":
            return 0.0
        eps = machine_epsilon(dtype)
        reduced = REDUCED_PRECISION_EPS[precision] if precision and self.matmul else 0.0
        if self.rtol is not None:  # the user's own bound, widened by the precision's epsilon
            return self.rtol_for(dtype) * max(eps, reduced) / eps
        growth = 1.0
        if self.kind == "normwise" and self.growth:
            growth = max(float(self.growth(size, np.dtype(dtype).name) if _takes_two(self.growth)
                               else self.growth(size)), 1.0)
        full = self.ulps * eps * growth
        if reduced <= eps:
            return full
        unit = reduced / 2  # the reduced precision's unit roundoff (see REDUCED_UNITS)
        return max(full, unit * max(REDUCED_FLOOR_UNITS, REDUCED_UNITS * growth))

    def rtol_for(self, dtype: str) -> float:
        """``rtol`` for ``dtype``: one number for all, or the dict's entry (else the nearest precision's)."""
        if not isinstance(self.rtol, tuple):
            return float(self.rtol or 0.0)
        given = dict(self.rtol)
        name = np.dtype(dtype).name
        if name in given:
            return given[name]
        eps = machine_epsilon(dtype)
        nearest = min(given, key=lambda d: abs(math.log(machine_epsilon(d) / eps)))
        return given[nearest] * eps / machine_epsilon(nearest)

    def error(self, out: np.ndarray, ref: np.ndarray) -> float:
        """The error measure this check bounds."""
        diff = np.abs(out.astype(np.result_type(ref, np.float64), copy=False) - ref)
        if self.kind == "elementwise":
            scale = np.abs(ref)
            # Where the reference is (nearly) zero, judge against the array's scale instead.
            floor = np.finfo(np.float64).tiny + self.near_zero * float(np.max(scale, initial=0.0))
            return float(np.max(diff / np.maximum(scale, floor), initial=0.0))
        top = float(np.max(np.abs(ref), initial=0.0))
        worst = float(np.max(diff, initial=0.0))
        if top == 0.0:
            return 0.0 if worst == 0.0 else math.inf
        return worst / top

    def accepting(self, error: float, dtype: str) -> str:
        """The check, written as in a workload file, that would accept ``error`` for ``dtype``."""
        kind = "elementwise" if self.kind == "elementwise" else "normwise"
        return f"Check.{kind}(rtol={{{np.dtype(dtype).name!r}: {_round_up(error * 1.25)}}})"


def _takes_two(fn: Callable[..., float]) -> bool:
    params = parameters(fn) or []
    return sum(p.kind in POSITIONAL for p in params) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
            or not value > 0 or not math.isfinite(value):
        raise ValueError(f"Check: {name} must be a positive finite number, got {value!r}")
    return float(value)


def _rtol_pairs(rtol: dict[Any, Any]) -> tuple[tuple[str, float], ...]:
    pairs = []
    for name, value in rtol.items():
        try:
            dt = np.dtype(name)
        except TypeError:
            raise ValueError(f"Check: rtol is keyed by dtype names such as 'float64', got {name!r}") from None
        if not np.issubdtype(dt, np.inexact):
            raise ValueError(f"Check: rtol is for floating dtypes, got {name!r}")
        pairs.append((dt.name, _positive(f"rtol[{name!r}]", value)))
    if not pairs:
        raise ValueError("Check: rtol={} gives no tolerance; name a dtype, e.g. {'float64': 1e-12}")
    return tuple(sorted(pairs))


def _round_up(x: float) -> str:
    """``x`` rounded up to two significant digits, as a short literal."""
    if not math.isfinite(x) or x <= 0:
        return repr(x)
    digits = 1 - math.floor(math.log10(x))
    return f"{math.ceil(x * 10 ** digits) / 10 ** digits:.2g}"
