"""What a workload's first call did besides computing: inputs it changed, results that alias
inputs, and NumPy computing on the library's arrays.

Users' NumPy code updates its arguments (``C[:] = ...``) and returns views (``x.T``); both
silently spoil a benchmark (a changed input feeds one call's output to the next; a view changes
when a later call does), so the first call is looked at before any other runs. A workload that
writes ``np.exp(x)`` for ``xp.exp(x)`` makes NumPy compute on the host, its time reported as the
library's: during the first call ``Watch`` replaces NumPy in the function's globals by a recorder.
"""

from __future__ import annotations

import contextlib
import copy
import linecache
import sys
import types
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

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


def host_copy(h: Any) -> Any:
    """A host input copied, as a list where the workload takes one."""
    return list(h) if isinstance(h, list) else np.array(h, copy=True)


def workload_arrays(backend: "Backend", wl: Workload, host: Sequence[Any]) -> tuple[Any, ...]:
    """A call's inputs from the host ones: copies where the workload keeps them on the host."""
    return tuple(host_copy(h) if wl.placement == "host" else backend.asarray(h) for h in host)


def input_names(wl: Workload, count: int) -> list[str]:
    """The names of a workload's ``count`` array inputs (``input 2`` where it takes ``*args``)."""
    names = [p.name for p in array_parameters(wl.fn) or []]
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
    #: Each host output's checksum right after the call: memory written after the call returned
    #: is not blamed on the library's arithmetic.
    fingerprint: tuple[int, ...] = ()


def look(backend: "Backend", wl: Workload, arrays: Sequence[Any], pristine: Sequence[Any],
         result: Any) -> FirstCall:
    """Inspect the first call's ``result`` and its inputs (``arrays``) against ``pristine`` host
    copies: an input changed that ``mutates=`` does not declare is named, with the fix, and
    restored before every later call; a result that aliases an input is copied, and said."""
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
        scalar = next((o for o in outputs if isinstance(o, (bool, int, float, complex))), None)
        if scalar is None:
            raise
        # arraybench's conversion failed, but the mistake is the workload's: say that one.
        raise ForeignResult(f"returned a Python {type(scalar).__name__}, not a {own_type_name(backend)}: "
                            "return the library's array (xp.sum(x), not float(...) or .item())") from None
    if aliased:
        # A later call (or the restoring of a changed input) would change what is judged.
        host = copy.deepcopy(host)
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
    """Why ``produced`` is a NumPy value where the library's own array was due, or "". Backends
    whose arrays are NumPy's, interop workloads and inputs kept on the host are exempt."""
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
    return (f"returned a {kind}, not a {own_type_name(backend)}: the workload called np.… instead of xp.…, so NumPy "
            f"computed it, not {backend.label}; use the xp namespace the workload is given")


def own_type_name(backend: "Backend") -> str:
    """How users name the library's own array type (``torch.Tensor``)."""
    own = type(backend.asarray(np.zeros(1)))
    return _OWN_TYPES.get(backend.name, f"{own.__module__}.{own.__qualname__}")


def fingerprint(host: Any) -> tuple[int, ...]:
    """CRC-32 of each host output's bytes (0 for what is not a plain array)."""
    outputs = host if isinstance(host, tuple) else (host,)
    return tuple(zlib.crc32(np.ascontiguousarray(out).view(np.uint8).reshape(-1))
                 if isinstance(out, np.ndarray) and out.dtype != object else 0 for out in outputs)


def _returned_none(backend: "Backend", wl: Workload, changed: list[str]) -> None:
    """``TypeError`` with the fix for a call that returned None without ``mutates=``: nothing to
    judge, unless it changed inputs and the workload gives its own ``reference=``."""
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
    with contextlib.suppress(Exception):  # an exotic array type: no claim either way
        return backend.shares_memory(a, b)
    return False


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
    # ``equal_nan`` costs 10x plain equality, so it only settles what plain equality denies.
    return not np.array_equal(after, before) and not (
        np.issubdtype(before.dtype, np.inexact) and np.array_equal(after, before, equal_nan=True))


def dtype_of(backend: "Backend", x: Any) -> str | None:
    if not isinstance(x, (tuple, list)):
        with contextlib.suppress(Exception):
            return backend.dtype_name(x)
    return None


def output_bytes(result: Any) -> int:
    """The bytes of a call's result (an array, or tuples and lists of them)."""
    if isinstance(result, (tuple, list)):
        return sum(output_bytes(r) for r in result)
    return int(getattr(result, "nbytes", 0) or 0)


def _is_numpy(value: Any) -> bool:
    if isinstance(value, types.ModuleType):
        return value.__name__ == "numpy" or value.__name__.startswith("numpy.")
    if isinstance(value, np.ufunc):
        return True
    return callable(value) and not isinstance(value, type) and \
        (getattr(value, "__module__", None) or "").startswith("numpy")


def _holds(value: Any, test: Callable[[Any], bool]) -> bool:
    """Whether ``value``, or anything in it (tuples and lists, nested), passes ``test``."""
    return any(_holds(v, test) for v in value) if isinstance(value, (tuple, list)) else test(value)


class _Spy:
    """Stands for a NumPy module: its functions record calls with foreign arrays (``_recording``)."""

    def __init__(self, module: types.ModuleType, name: str, seen: list[str]) -> None:
        self._module, self._name, self._seen = module, name, seen

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._module, attr)
        if isinstance(value, types.ModuleType) and _is_numpy(value):
            return _Spy(value, f"{self._name}.{attr}", self._seen)
        if callable(value) and not isinstance(value, type):
            return _recording(value, f"{self._name}.{attr}", self._seen)
        return value


def _recording(fn: Callable[..., Any], name: str, seen: list[str]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        values = [*args, *kwargs.values()]
        # Another library's array (a shape and a dtype, not NumPy's), or a NumPy array (not a
        # scalar), on which NumPy computes in another library's cell.
        foreign = _holds(values, lambda v: _is_array(v) and not isinstance(v, (np.ndarray, np.generic)))
        host = _holds(values, lambda v: isinstance(v, np.ndarray) and v.ndim > 0)
        mark = "" if foreign else "host " if host else None
        if mark is not None:
            caller = sys._getframe(1)
            code = linecache.getline(caller.f_code.co_filename, caller.f_lineno).strip()
            seen.append(f"{mark}{name} [at {caller.f_code.co_filename.rsplit('/', 1)[-1]}:"
                        f"{caller.f_lineno}: {code}]")
        return fn(*args, **kwargs)

    return call


class Watch:
    """NumPy functions a workload calls on the library's arrays (or on NumPy arrays taken from
    them) during a block (``with``), with the line that called each; eager cells only."""

    def __init__(self, backend_name: str, backend_label: str, wl: Workload, mode: str) -> None:
        self.label = backend_label
        self.seen: list[str] = []
        fn = wl.function_for(backend_name)
        fn = getattr(fn, "__wrapped__", fn)
        names = getattr(fn, "__globals__", None)
        active = (backend_name not in ("numpy", "numba") and wl.namespace != "backend"
                  and wl.placement != "host" and mode != "compiled" and isinstance(names, dict))
        self._globals: dict[str, Any] = names if active else {}
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> "Watch":
        for key, value in list(self._globals.items()):
            if key.startswith("__") or not _is_numpy(value):
                continue
            self._saved[key] = value
            if isinstance(value, types.ModuleType):
                self._globals[key] = _Spy(value, "np" if value is np else value.__name__, self.seen)
            else:
                self._globals[key] = _recording(value, f"np.{getattr(value, '__name__', key)}", self.seen)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._globals.update(self._saved)
        self._saved.clear()

    def reason(self) -> str:
        """Why the call's result is not the library's work, or "" where NumPy never got its arrays."""
        if not self.seen:
            return ""
        first = self.seen[0]
        where = first[first.index("["):]
        if first.startswith("host "):
            name = first.split(" ")[1]
            return (f"{name} computed on a NumPy array in {self.label}'s cell (one taken from "
                    f"{self.label}'s with .numpy() or np.asarray, or made by NumPy): NumPy computed that "
                    f"part on the host, not {self.label}; use the xp namespace the workload is given "
                    f"(xp.{name.rsplit('.', 1)[-1]}) {where}")
        name = first.split(" ")[0]
        if name.rsplit(".", 1)[-1] in _CONVERSIONS:
            return (f"{name} took {self.label}'s array to the host as a NumPy array: NumPy computed "
                    f"what followed, not {self.label}, whatever type the result has; keep the work in "
                    f"the xp namespace the workload is given {where}")
        return (f"{name} got {self.label}'s array: NumPy computed that part on the host, "
                f"not {self.label}, whatever type the result has; use the xp namespace the workload "
                f"is given (xp.{name.rsplit('.', 1)[-1]}) {where}")

    def hint(self) -> str:
        """What to add to an error raised where NumPy got the library's array ("" otherwise)."""
        foreign = [s for s in self.seen if not s.startswith("host ")]
        if not foreign:
            return ""
        name = foreign[-1].split(" ")[0]
        return (f"; {name} was called on {self.label}'s array (NumPy's functions call the array's own "
                f"methods with NumPy's arguments, such as axis=): use xp.{name.rsplit('.', 1)[-1]}, "
                "the namespace the workload is given")


#: NumPy functions that only bring an array to the host: the NumPy work is what follows them.
_CONVERSIONS = frozenset({"asarray", "array", "asanyarray", "ascontiguousarray", "asfortranarray"})
