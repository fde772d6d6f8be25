"""NumPy called on another library's arrays inside a workload: code that did not run on that library.

A workload that writes ``np.exp(x)`` where it meant ``xp.exp(x)`` makes NumPy compute on the
host: in a JAX worker ``np.exp`` turns the JAX array into a NumPy one, and in a PyTorch worker it
even hands a ``torch.Tensor`` back (``__array_wrap__``), so the result can look like the
library's own while the time is NumPy's. Where the NumPy function has another signature than the
library's method it calls (``np.sum(t, axis=0)`` calls ``Tensor.sum(axis=0)``), PyTorch fails with
"sum() got an unexpected keyword argument 'axis'", which names neither NumPy nor the fix.

So during the first call (eager only: compilers trace the code and refuse, or translate, NumPy
themselves), every name in the workload function's globals that is NumPy (the module, one of its
submodules, or one of its functions) is replaced by a watcher that records each NumPy function
called with an array that is not NumPy's, or with a NumPy array (one the code took from the
library's, ``t.numpy()``, which no NumPy function sees being made), and the line that called it.
``Watch.reason`` says what happened and the fix, where the call returned; ``Watch.hint`` adds it
to an error's.
"""

from __future__ import annotations

import linecache
import sys
import types
from typing import Any, Callable

import numpy as np

from ..workloads.definition import Workload


def _is_numpy(value: Any) -> bool:
    if isinstance(value, types.ModuleType):
        return value.__name__ == "numpy" or value.__name__.startswith("numpy.")
    if isinstance(value, np.ufunc):
        return True
    return callable(value) and not isinstance(value, type) and \
        (getattr(value, "__module__", None) or "").startswith("numpy")


def _foreign(value: Any) -> bool:
    """An array of another library: has a shape and a dtype, and is not NumPy's."""
    if isinstance(value, (tuple, list)):
        return any(_foreign(v) for v in value)
    return (hasattr(value, "shape") and hasattr(value, "dtype")
            and not isinstance(value, (np.ndarray, np.generic)))


class _Spy:
    """Stands for a NumPy module: its functions record calls with foreign arrays."""

    def __init__(self, module: types.ModuleType, name: str, seen: list[str]) -> None:
        self._module, self._name, self._seen = module, name, seen

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._module, attr)
        if isinstance(value, types.ModuleType) and _is_numpy(value):
            return _Spy(value, f"{self._name}.{attr}", self._seen)
        if callable(value) and not isinstance(value, type):
            return _recording(value, f"{self._name}.{attr}", self._seen)
        return value


def _host(value: Any) -> bool:
    """A NumPy array (not a scalar): in another library's cell, one taken from the library's
    (``t.numpy()``, ``np.asarray(x)``) or made by NumPy; either way NumPy computes on it."""
    if isinstance(value, (tuple, list)):
        return any(_host(v) for v in value)
    return isinstance(value, np.ndarray) and value.ndim > 0


def _recording(fn: Callable[..., Any], name: str, seen: list[str]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        values = [*args, *kwargs.values()]
        mark = "" if _foreign(values) else "host " if _host(values) else None
        if mark is not None:
            caller = sys._getframe(1)
            code = linecache.getline(caller.f_code.co_filename, caller.f_lineno).strip()
            seen.append(f"{mark}{name} [at {caller.f_code.co_filename.rsplit('/', 1)[-1]}:"
                        f"{caller.f_lineno}: {code}]")
        return fn(*args, **kwargs)

    return call


class Watch:
    """NumPy functions a workload calls on the library's arrays during a block (``with``)."""

    def __init__(self, backend_name: str, backend_label: str, wl: Workload, mode: str) -> None:
        self.label = backend_label
        self.seen: list[str] = []
        fn = wl.function_for(backend_name)
        fn = getattr(fn, "__wrapped__", fn)
        names = getattr(fn, "__globals__", None)
        # NumPy's own arrays, the backend's own objects, host inputs and compiled code: nothing to watch.
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
