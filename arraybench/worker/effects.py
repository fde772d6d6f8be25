"""What a workload's first call did besides computing: inputs it changed, results that alias inputs.

Users' NumPy code updates its arguments (``C[:] = ...``) and returns views (``x.T``, ``C``
itself). Both are legitimate, and both silently spoil a benchmark: a call that changes an input
feeds its output to the next call, and a result that is a view of an input changes when a later
call does. So the first call is looked at before any other runs:

- every input the workload does not declare in ``mutates=`` is compared with its pristine host
  copy; one that changed is named, with the fix, and restored before every later call;
- the result is compared, by address, with every input (``np.shares_memory``, torch's storage,
  JAX's buffer pointer, CuPy's allocation: ``Backend.shares_memory``); one that aliases an input is
  copied to the host before it is checked, and said;
- the result the check judges is this host copy, taken before any other call could change it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..workloads.definition import Workload
from ..workloads.params import array_parameters

if TYPE_CHECKING:
    from ..backends.base import Backend


def to_host(backend: "Backend", x: Any) -> Any:
    """A result (or tuple of results) as host NumPy arrays."""
    if isinstance(x, (tuple, list)):
        return tuple(to_host(backend, v) for v in x)
    if isinstance(x, np.ndarray):
        return x
    return backend.to_numpy(x)


def input_names(wl: Workload, count: int) -> list[str]:
    """The names of a workload's ``count`` array inputs (``input 2`` where it takes ``*args``)."""
    params = array_parameters(wl.fn) or []
    names = [p.name for p in params]
    return [names[i] if i < len(names) else f"input {i}" for i in range(count)]


@dataclass
class FirstCall:
    """What the first call gave and did, seen before any other call."""

    #: The result on the host, copied where it shares memory with an input.
    result: Any
    #: The result's dtype as the library names it (None for several outputs).
    dtype: str | None
    #: Inputs (positions among the workload's arrays) the call changed without declaring them.
    changed: tuple[int, ...] = ()
    #: What the record should say about it (stable text: the same in every process).
    notes: list[str] = field(default_factory=list)
    #: A checksum of each host output right after the call (``fingerprint``): a result judged
    #: wrong later is first compared with it, so that memory written after the call returned is
    #: not blamed on the library's arithmetic.
    fingerprint: tuple[int, ...] = ()


def look(backend: "Backend", wl: Workload, arrays: Sequence[Any], pristine: Sequence[Any],
         result: Any) -> FirstCall:
    """Inspect the first call: its result (``result``) and its inputs (``arrays``) after it ran.

    ``pristine``: host copies of the inputs as they were before the call (never passed to it).
    """
    names = input_names(wl, len(arrays))
    declared = set(wl.mutated_positions(len(arrays)))
    changed = tuple(i for i, (a, p) in enumerate(zip(arrays, pristine))
                    if i not in declared and _changed(backend, a, p))
    produced = wl.result_of(result, list(arrays))
    foreign = foreign_result(backend, wl, produced)
    if foreign:
        raise ForeignResult(foreign)
    if produced is None:
        _returned_none(backend, wl, [names[i] for i in changed])
        # in-place code that forgot mutates=, judged against a reference= of its own: what it changed
        produced = arrays[changed[0]] if len(changed) == 1 else tuple(arrays[i] for i in changed)
    outputs = list(produced) if isinstance(produced, (tuple, list)) else [produced]
    aliased = sorted({i for out in outputs for i, a in enumerate(arrays)
                      if _is_array(out) and _is_array(a) and _shares(backend, out, a)})
    try:
        host = to_host(backend, produced)
    except Exception:
        scalar = _python_scalar(produced)
        if scalar is None:
            raise
        # arraybench's conversion failed, but the mistake is the workload's: say that one.
        raise ForeignResult(f"returned a Python {type(scalar).__name__}, not a {own_type_name(backend)}: "
                            "return the library's array (xp.sum(x), not float(...) or .item())") from None
    if aliased:
        # A later call (or the restoring of a changed input) would change what is judged.
        host = _copied(host)
    notes = []
    if changed:
        which = ", ".join(repr(names[i]) for i in changed)
        declare = ", ".join(repr(names[i]) for i in sorted(declared | set(changed)))
        notes.append(f"the call changes its input {which} in place, which mutates= does not "
                     f"declare: it was restored before every timed call; declare it in "
                     f"@workload(mutates=({declare},))")
    # Returning the input it updates is what in-place code does; a view of any other input is news.
    views = [i for i in aliased if i not in declared and i not in changed]
    if views and wl.namespace != "backend":  # interop workloads share memory by design
        which = ", ".join(repr(names[i]) for i in views)
        notes.append(f"the result shares memory with input {which} (a view of it, or the input "
                     "itself): it was copied before it was checked, and its time is that of "
                     "making the view, not of computing new values")
    return FirstCall(host, dtype_of(backend, produced), changed, notes, fingerprint(host))


class ForeignResult(TypeError):
    """A result that is not the library's own array: the code never ran on that library."""


#: How each library's own array type is named to users.
_OWN_TYPES = {"torch": "torch.Tensor", "jax": "jax.Array", "mlx": "mlx.core.array", "cupy": "cupy.ndarray"}


def foreign_result(backend: "Backend", wl: Workload, produced: Any) -> str:
    """Why ``produced`` is a NumPy value where the library's own array was due, or "".

    A workload that calls ``np.exp`` instead of ``xp.exp`` runs NumPy in the JAX worker, and its
    time would be reported as JAX's. Backends whose arrays are NumPy's (NumPy, Numba), workloads
    written against the backend itself (interop: ``to_numpy`` returns NumPy by design) and inputs
    kept on the host are exempt.
    """
    if wl.namespace == "backend" or wl.placement == "host":
        return ""
    try:
        own = backend.asarray(np.zeros(1))
    except Exception:
        return ""
    if isinstance(own, np.ndarray):
        return ""
    outputs = produced if isinstance(produced, (tuple, list)) else (produced,)
    numpy_out = next((o for o in outputs if isinstance(o, (np.ndarray, np.generic))), None)
    if numpy_out is None:
        return ""
    kind = "numpy.ndarray" if isinstance(numpy_out, np.ndarray) else f"numpy.{type(numpy_out).__name__} scalar"
    own_name = own_type_name(backend)
    return (f"returned a {kind}, not a {own_name}: the workload called np.… instead of xp.…, so NumPy "
            f"computed it, not {backend.label}; use the xp namespace the workload is given")


def own_type_name(backend: "Backend") -> str:
    """How users name the library's own array type (``torch.Tensor``)."""
    if backend.name in _OWN_TYPES:
        return _OWN_TYPES[backend.name]
    own = type(backend.asarray(np.zeros(1)))
    return f"{own.__module__}.{own.__qualname__}"


def _python_scalar(produced: Any) -> Any:
    outputs = produced if isinstance(produced, (tuple, list)) else (produced,)
    return next((o for o in outputs if isinstance(o, (bool, int, float, complex))), None)


def fingerprint(host: Any) -> tuple[int, ...]:
    """CRC-32 of each host output's bytes (0 for what is not a plain array): cheap, and enough
    to tell whether memory changed since."""
    outputs = host if isinstance(host, tuple) else (host,)
    sums = []
    for out in outputs:
        if isinstance(out, np.ndarray) and out.dtype != object:
            sums.append(zlib.crc32(np.ascontiguousarray(out).view(np.uint8).reshape(-1)))
        else:
            sums.append(0)
    return tuple(sums)


def _returned_none(backend: "Backend", wl: Workload, changed: list[str]) -> None:
    """A call that returned None without ``mutates=`` has no result to judge, unless it changed
    inputs and the workload gives its own ``reference=``; otherwise the reference (the same code
    under NumPy) is None too, and every library would be called wrong for a shape it never had.
    ``TypeError`` says what happened and the fix."""
    if changed and wl.reference is not None:
        return
    fn = getattr(wl.function_for(backend.name), "__name__", "the function")
    if changed:
        which = ", ".join(map(repr, changed))
        raise TypeError(f"{fn} returned None and changed its input {which} in place: declare "
                        f"@workload(mutates=({which},)) to make what it changed its result "
                        "(restored before every call)")
    hint = "" if backend.mutable_arrays else \
        f"; {backend.label} arrays never change in place, so its override returns the new values"
    raise TypeError(f"{fn} returned None and changed none of its inputs: a workload returns its "
                    "result, or declares the inputs it changes in place with "
                    f"@workload(mutates=(...)){hint}")


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _shares(backend: "Backend", a: Any, b: Any) -> bool:
    try:
        return backend.shares_memory(a, b)
    except Exception:  # an exotic array type: no claim either way
        return False


def _copied(host: Any) -> Any:
    if isinstance(host, tuple):
        return tuple(_copied(h) for h in host)
    return np.array(host, copy=True)


def _changed(backend: "Backend", arg: Any, before: Any) -> bool:
    """Whether an input no longer holds the values it held before the call."""
    if isinstance(before, list):
        return arg != before
    if not _is_array(arg):
        return False
    if not isinstance(arg, np.ndarray) and not backend.mutable_arrays:
        return False  # a JAX array cannot change
    after = np.asarray(to_host(backend, arg))
    if after.shape != before.shape or after.dtype != before.dtype:
        return True
    # The same values compare equal at memory speed; ``equal_nan`` costs 10x as much (27 against
    # 3 ms for a 2000x2000 matrix, in each process), so it only settles what plain equality denies.
    if np.array_equal(after, before):
        return False
    return not (np.issubdtype(before.dtype, np.inexact) and np.array_equal(after, before, equal_nan=True))


def dtype_of(backend: "Backend", x: Any) -> str | None:
    if isinstance(x, (tuple, list)):
        return None
    try:
        return backend.dtype_name(x)
    except Exception:
        return None


def output_bytes(result: Any) -> int:
    """The bytes of a call's result (an array, or tuples and lists of them): what each call asks
    the allocator for at least (large outputs make its state matter)."""
    if isinstance(result, (tuple, list)):
        return sum(output_bytes(r) for r in result)
    return int(getattr(result, "nbytes", 0) or 0)
