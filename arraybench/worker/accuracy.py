"""Judging a result against the NumPy float64 reference, with the ``Check`` its workload declared
(``workloads/check``), and a second look at a wrong first result before it is reported ``wrong``:
does one more call give the same error (``second_opinion``), and is it a known limitation of the
library that its backend can show (``known_limitation``: then the cell is skipped, never ``wrong``).
"""

from __future__ import annotations

import inspect
import math
import re
import types
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..backends.base import Backend, WrongResult
from ..model.cell import Cell
from ..workloads.definition import Workload
from .effects import FirstCall, to_host, workload_arrays
from ..workloads.check import DERIVED_NEAR_ZERO, REDUCED_PRECISION_EPS, Check, Noise, machine_epsilon, own_size_floor

if TYPE_CHECKING:
    from .timer import Timer

#: Above this, a finite-difference "gradient" is not a gradient, whatever the rounding model says.
FINITE_DIFFERENCE_CAP = 1e-2


def reduced_precision_note(precision: str, dtype: str) -> str:
    """What a record says when its matmuls ran in a reduced precision."""
    label = {"tf32": "TF32", "bf16": "bfloat16"}.get(precision, precision)  # as reports name them
    return (f"{dtype} matmuls ran in {label} (--allow-tf32): checked against {label}'s unit roundoff "
            f"{REDUCED_PRECISION_EPS[precision] / 2:.1e} (√n-scaled), not {dtype}'s")


def finite_difference_tolerance(dtype: str, size: int) -> float:
    """Forward differences: rounding error ~ sqrt(eps) times the loss's scale (~size terms)."""
    return min(FINITE_DIFFERENCE_CAP, math.sqrt(machine_epsilon(dtype)) * max(size, 1))


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
          fixed: dict[str, str] | None = None,
          noise: "Noise | tuple[Noise | None, ...] | None" = None,
          inputs: tuple[Any, ...] = ()) -> Verdict:
    """Compare a result (on the host) with the float64 reference: shape, dtype and NaNs, then the
    error against the tolerance. A dtype the workload chose (wider, or following an input it fixed:
    ``fixed``, name -> dtype) is judged in its own and said in ``note``. ``noise``, the reference's
    own (one per output), sets a ``derived`` check's tolerance and is quoted by every ``wrong``
    reason. Integers are judged by value; a permutation ordering one of ``inputs`` alike is right."""
    if isinstance(ref, (tuple, list)):
        noises = noise if isinstance(noise, tuple) else (noise,) * len(ref)
        tol = check.settle(None, dtype).tolerance(dtype, size) if tolerance is None else tolerance
        if not isinstance(out, (tuple, list)) or len(out) != len(ref):
            got = f"{len(out)} outputs" if isinstance(out, (tuple, list)) else "one output"
            return Verdict(False, None, tol, f"expected {len(ref)} outputs, got {got}")
        verdicts = [judge(o, r, check, dtype, size, tolerance, fixed=fixed, noise=n, inputs=inputs)
                    for o, r, n in zip(out, ref, noises)]
        errors = tuple(v.max_rel_error for v in verdicts)
        bad = next((v for v in verdicts if not v.ok), None)
        worst = max((e for e in errors if e is not None), default=None)
        note = "; ".join(dict.fromkeys(v.note for v in verdicts if v.note))
        tol = max(v.tolerance for v in verdicts) if verdicts else tol
        if bad is not None:
            return Verdict(False, bad.max_rel_error if bad.max_rel_error is not None else worst, tol,
                           bad.reason, errors, note)
        return Verdict(True, worst if worst is not None else 0.0, tol, "", errors, note)
    single = noise if isinstance(noise, Noise) else None
    settled = check.settle(single, dtype, outputs=max(int(np.size(ref)), 1))
    tol = settled.tolerance(dtype, size) if tolerance is None else tolerance
    if isinstance(out, (tuple, list)):
        return Verdict(False, None, tol,
                       f"returned {len(out)} outputs where one is expected (e.g. torch.sort's indices)")
    out_arr = np.asarray(out)
    ref_arr = np.asarray(ref)
    if out_arr.shape != ref_arr.shape:
        return Verdict(False, None, tol, f"shape {out_arr.shape} differs from the reference's {ref_arr.shape}")
    want = ref_arr.dtype  # the run's dtype, in its complex form for complex results
    if np.issubdtype(want, np.complexfloating):
        want = np.result_type(np.dtype(dtype), np.complex64)
    elif np.issubdtype(want, np.floating):
        want = np.dtype(dtype)
    got = np.dtype(out_dtype) if out_dtype else out_arr.dtype
    notes = []
    judged_in = dtype
    if got != want and _integer(got) and _integer(want):
        notes.append(f"result is {got}, not {want}: integers judged by value")
    elif got != want:
        own = own_dtype(got, want, fixed or {})
        if not own:
            return Verdict(False, None, tol, _DTYPE_REASON.format(got=got, want=want))
        notes.append(own)
        if tolerance is None and np.finfo(got).eps > np.finfo(want).eps:
            judged_in = str(np.finfo(got).dtype)
            tol = settled.tolerance(judged_in, size)  # judged in its own precision
            if check.needs_noise(dtype) and single is not None:
                # (L - 1) u, the bound of a recursive sum of L terms: what a library may lose
                # summing inputs the workload fixed narrower.
                terms = max(single.elements, 1) / max(ref_arr.size, 1)
                tol = max(tol, (terms - 1) * machine_epsilon(judged_in) / 2)
    if np.issubdtype(out_arr.dtype, np.inexact):
        bad = np.isnan(out_arr) & ~np.isnan(ref_arr)
        if bad.any():
            return Verdict(False, math.inf, tol, f"{int(bad.sum())} NaN values where the reference has none")
    if check.leaves_out(dtype):
        notes.append(f"check= gives rtol for {', '.join(dict(check.rtol or ()))} only: this "
                     f"{np.dtype(dtype).name} run is checked by a tolerance derived from the computation")
    if check.needs_noise(dtype) and single is not None and tol > math.sqrt(machine_epsilon(judged_in)):
        notes.append(f"the reference itself {single.describe(settled.kind, judged_in)}: its "
                     f"derived tolerance {tol:.2g} is loose; give check= to bound the error yourself")
    err = settled.error(out_arr, ref_arr)
    if single is not None and single.float64_only and np.issubdtype(ref_arr.dtype, np.inexact):
        own = single.ulps(settled.kind) * machine_epsilon("float64")
        if 0 < own and err <= 4 * own:
            # No long double at this size: NumPy's float64 rounding is in every error measured
            # against it, said beside the error rather than charged to the library.
            notes.append(f"error {err:.2g} against NumPy's plain float64 reference (no long-double "
                         f"run above 2²² input elements), which itself moves by "
                         f"{own:.2g}: an error below that does not tell which side rounded "
                         "(NumPy's own 0 included)")
    note = "; ".join(notes)
    if err > tol and _orders_alike(out_arr, ref_arr, inputs):
        notes.append("a permutation that orders the input as the reference's does (ties broken "
                     "in another order, which argsort leaves free)")
        return Verdict(True, 0.0, tol, note="; ".join(notes))
    if err > tol and _orders_alike(_inverse(out_arr), _inverse(ref_arr), inputs):
        notes.append("ranks that order the input as the reference's do (ties broken in another "
                     "order, which a sort that is not stable leaves free)")
        return Verdict(True, 0.0, tol, note="; ".join(notes))
    if err > tol and out_arr.size > 1 and settled.error(np.sort(out_arr, axis=None),
                                                       np.sort(ref_arr, axis=None)) <= tol:
        return Verdict(False, err, tol, f"{_measure(settled)} {err:.3g}, but the result holds the "
                       "reference's values in another order: where the order is not determined (ties "
                       "in a sort that is not stable, ranks of equal values), check what is: return "
                       "the sorted values, or break ties by a second key", note=note)
    if err > tol:
        return Verdict(False, err, tol, _wrong_reason(settled, err, tol, judged_in, single), note=note)
    if tolerance is None and check.needs_noise(dtype) and settled.kind == "elementwise" and single:
        hidden = _below_floor(out_arr, ref_arr, settled, single, check.factor, judged_in)
        if hidden is not None:
            return replace(hidden, note=note)
    return Verdict(True, err, tol, note=note)


def _below_floor(out: np.ndarray, ref: np.ndarray, settled: Check, noise: Noise, factor: float,
                 dtype: str) -> Verdict | None:
    """A wrong verdict for elements the element-wise floor hides (below 2^-26 max|ref|) that are
    off by more than the reference's own move allows, against their own size; None where they are
    right or the reference does not pin them down."""
    eps = machine_epsilon(dtype)
    known = noise.below_floor * machine_epsilon("float64")
    if not known <= DERIVED_NEAR_ZERO:  # not measured (inf), or the reference does not know them
        return None
    size = np.abs(ref)
    small = (size < settled.near_zero * float(np.max(size, initial=0.0))) & (size >= own_size_floor(dtype))
    if not small.any():
        return None
    with np.errstate(all="ignore"):
        off = np.abs(out[small].astype(np.result_type(ref, np.float64)) - ref[small]) / size[small]
    tol = max(settled.ulps, factor * noise.below_floor) * eps
    worst = int(np.argmax(off))
    if not off[worst] > tol:
        return None
    return Verdict(False, float(off[worst]), tol,
                   f"{int(np.sum(off > tol))} of {int(small.sum())} elements below 2^-26 of max|ref| are "
                   f"off by up to {off[worst]:.3g} of their own size (tolerance {tol:.3g}; the reference "
                   f"itself moves them by {known:.2g}), e.g. "
                   f"{out[small][worst]:.3g} where the reference has {ref[small][worst]:.3g}: the large "
                   "elements hide them from an error measured against max|ref|; where such elements "
                   "need not be exact, give check= (Check.elementwise judges elements below "
                   "1e-3 max|ref| against that scale)")


#: Above this error no tolerance is suggested: 1% off is no rounding, and a check that accepted
#: it would accept a bug.
SUGGESTION_CAP = 1e-2


def _measure(check: Check) -> str:
    return "max relative error" if check.kind == "elementwise" else "normwise relative error"


#: A result whose dtype is not the one expected, as its verdict says it.
_DTYPE_REASON = "result is {got}, expected {want}"


def is_dtype_reason(reason: str) -> bool:
    """Whether a wrong verdict's reason is a dtype mismatch (``result is float32, expected float64``)."""
    return re.fullmatch(_DTYPE_REASON.format(got=r"\w+", want=r"\w+"), reason.split(";")[0]) is not None


def _wrong_reason(check: Check, err: float, tol: float, dtype: str, noise: Noise | None) -> str:
    """One line: the error, the reference's own noise where known, and the check that accepts it."""
    reason = f"{_measure(check)} {err:.3g} exceeds tolerance {tol:.3g}"
    if noise is not None:
        reason += f"; the reference itself {noise.describe(check.kind, dtype)}"
    if math.isfinite(err) and err * 1.25 <= max(SUGGESTION_CAP, 16 * machine_epsilon(dtype)):
        reason += f"; check={check.accepting(err, dtype)} would accept it"
    else:
        reason += ("; the result does not match the reference: no tolerance would accept it and "
                   "still catch a bug")
    return reason


#: Names in a workload function's code that draw random numbers (torch.rand, jax.random.normal,
#: np.random.default_rng, dropout...): each library's stream is its own.
_RANDOM_NAMES = frozenset({"random", "rand", "randn", "randint", "randperm", "rand_like", "randn_like",
                           "randint_like", "bernoulli", "multinomial", "poisson", "normal_", "uniform_",
                           "dropout", "manual_seed", "PRNGKey", "default_rng"})


def random_draws(fn: Any) -> str:
    """Where a workload function draws random numbers of its own (``file:line: code``), or ""."""
    fn = inspect.unwrap(fn) if callable(fn) else fn
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    names: set[str] = set()
    stack = [code]
    while stack:  # the function and the functions and comprehensions it defines
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    drawn = names & _RANDOM_NAMES
    if not drawn:
        return ""
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return f"{code.co_filename.rsplit('/', 1)[-1]}: {', '.join(sorted(drawn))}"
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(drawn))) + r")\b")
    line = next((i for i, text in enumerate(lines) if pattern.search(text) and not
                 text.lstrip().startswith(("#", "def ", "@"))), 0)
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{start + line}: {lines[line].strip()}"


def random_stream_reason(verdict: Verdict, where: str, label: str) -> str:
    """A wrong verdict's reason for a result drawn from the library's own random numbers: one line,
    what happened and what to do, with no tolerance that would accept anything."""
    measured = verdict.reason.split(";")[0]
    return (f"{measured}; no single answer: the workload draws random numbers itself [at {where}], "
            f"and {label}'s random numbers are not the reference's, so its result cannot match: "
            "draw them in inputs= (one seeded stream every library gets), or return what does not "
            "depend on the draw (a statistic) with a check= tolerance of its own")


def own_dtype(got: np.dtype, want: np.dtype, fixed: dict[str, str]) -> str:
    """Why a result in ``got`` rather than the run's ``want`` is the workload's doing, or "": a
    floating result wider than the run's dtype comes from its own code, one matching the promotion
    of an input it fixed follows that input; a narrower one otherwise is the library's, and wrong."""
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


def _integer(dt: np.dtype) -> bool:
    return np.issubdtype(dt, np.integer)


def _orders_alike(out: np.ndarray, ref: np.ndarray, inputs: tuple[Any, ...]) -> bool:
    """Whether ``out`` and ``ref`` are both permutations (along the last axis or the first) that
    take some input of their shape to the same ordered values: argsort's promise."""
    if not (_integer(out.dtype) and _integer(ref.dtype)) or out.ndim == 0 or out.size == 0:
        return False
    keys = [np.asarray(a) for a in inputs if np.shape(a) == ref.shape]
    for axis in dict.fromkeys((ref.ndim - 1, 0)):
        n = ref.shape[axis]
        ordered = np.arange(n).reshape([-1 if i == axis else 1 for i in range(ref.ndim)])
        if not all(np.array_equal(np.sort(p, axis=axis), np.broadcast_to(ordered, p.shape))
                   for p in (out, ref)):
            continue
        if any(np.array_equal(np.take_along_axis(k, out.astype(np.intp), axis),
                              np.take_along_axis(k, ref.astype(np.intp), axis), equal_nan=k.dtype.kind in "fc")
               for k in keys):
            return True
    return False


def _inverse(p: np.ndarray) -> np.ndarray:
    """The inverse of a permutation along the last axis (ranks -> the order that sorts), or ``p``
    itself where it is no integer array."""
    if not _integer(p.dtype) or p.ndim == 0 or p.size == 0:
        return p
    ordered = np.broadcast_to(np.arange(p.shape[-1]), p.shape)
    if not np.array_equal(np.sort(p, axis=-1), ordered):
        return p
    return np.argsort(p, axis=-1, kind="stable")


def second_opinion(backend: Backend, wl: Workload, timer: Timer, seen: FirstCall,
                   arrays: tuple[Any, ...] | None, first_error: float | None,
                   judge: Callable[[Any], Verdict]) -> str:
    """Whether one more call gives the same wrong result (``judge``: the first result's check),
    or an intermittent one that a user may meet only sometimes; "" where it cannot be told (a call
    that changes its inputs)."""
    if arrays is None or seen.changed or wl.mutated_positions(len(arrays)):
        return ""
    try:
        _, result = timer.first_call()  # one call, waited for, untimed as far as the samples go
        verdict = judge(to_host(backend, wl.result_of(result, list(arrays))))
    except Exception:
        return ""
    if verdict.ok:
        cause = backend.intermittent_cause(first_error)
        return ("a second call in the same process gave a correct result: the wrong one is "
                "intermittent, " + (cause or "a race or a fault, not the library's arithmetic on "
                                    "these inputs"))
    if verdict.max_rel_error == first_error:
        return "a second call gave the same error"
    return f"a second call was wrong too ({verdict.reason})"


def known_limitation(backend: Backend, wl: Workload, cell: Cell, host: tuple[Any, ...],
                     params: dict[str, Any], verdict: Verdict,
                     right: Callable[[Any], bool], same: Callable[[Any], bool]) -> str | None:
    """The backend's reason why a wrong first result is a known limitation of its library
    (``Backend.explain_wrong``), or None: then it stays wrong. Only a measured error or a narrower
    dtype than the run's is looked into, never a gradient's."""
    if wl.grad or wl.namespace == "backend":
        return None
    measured = verdict.max_rel_error is not None and math.isfinite(verdict.max_rel_error)
    if not measured and not is_dtype_reason(verdict.reason):
        return None
    fn = wl.function_for(backend.name)

    def rerun(xp: Any) -> Any:
        arrays = workload_arrays(backend, wl, host)
        return to_host(backend, wl.result_of(fn(xp, *arrays, **params), list(arrays)))

    try:
        namespace = backend.namespace(wl.namespace_for(backend.name))
        return backend.explain_wrong(WrongResult(cell.dtype, namespace, verdict.reason.split(";")[0],
                                                 rerun, right, same))
    except Exception:  # looking into a wrong verdict must never cost it
        return None
