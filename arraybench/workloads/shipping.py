"""Sending workloads defined in a notebook or a script to the worker processes, by value.

A workload with no file to import travels by ``cloudpickle`` (code, closures, defaults), written into
the run's output folder so that ``--resume`` can send it again after the kernel is gone (``trust``).
The source lines of every function go along too, into the worker's ``linecache``, so that an error
names the user's own line.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import pickle
import sys
import types
from pathlib import Path
from typing import Any, Iterable

from ..errors import UsageError
from ..files import write_bytes_atomic
from .definition import Workload
from .registry import register
from .trust import SHIPPED_NAME, nested_codes


def needs_shipping(wl: Workload, files: Iterable[str]) -> bool:
    """Whether a worker can get ``wl`` only by value: not built in, not from a workload file."""
    return wl.source != "builtin" and wl.source not in {str(Path(f).resolve()) for f in files}


def pack(workloads: list[Workload]) -> bytes:
    """The workloads, by value, with their source lines; ``ShippingError`` names a workload and
    what of it could not be pickled (a lock, an open file), before anything is written."""
    import cloudpickle

    for wl in workloads:
        for fn in wl.functions():
            _by_value(fn)
        try:
            cloudpickle.dumps(wl)
        except Exception as exc:  # pickling calls arbitrary __reduce__ code: anything can fail
            first = (str(exc).strip().splitlines() or [""])[0]
            raise ShippingError(
                f"workload {wl.name!r} cannot be sent to the worker processes ({type(exc).__name__}: "
                f"{first}): what its functions refer to must be picklable; create such an object "
                "inside the function, or define the workload in a file and pass it with "
                "--workload-files (workload_files=)") from None
    payload = {"workloads": workloads, "sources": _sources(workloads),
               "filenames": [[c.co_filename if isinstance(c := getattr(fn, "__code__", None), types.CodeType)
                              else None for fn in wl.functions()] for wl in workloads]}
    return cloudpickle.dumps(payload)


def ship(workloads: list[Workload], out_dir: Path, payload: bytes | None = None) -> Path:
    """Write the workloads (``payload``, or packed now) to ``out_dir``; return the path."""
    return write_bytes_atomic(out_dir / SHIPPED_NAME, payload if payload is not None else pack(workloads))


def receive(path: str | os.PathLike[str]) -> list[str]:
    """Load shipped workloads into this process's registry; return their names (``ShippingError``
    where the file cannot be read or unpickled here)."""
    try:
        with open(path, "rb") as f:
            payload = pickle.load(f)
    except FileNotFoundError:
        raise ShippingError(f"{path}: the workloads defined in Python are missing") from None
    except Exception as exc:  # unpickling runs arbitrary reconstruction code: anything can fail
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ShippingError(f"{path}: the workloads defined in Python cannot be loaded here "
                            f"({type(exc).__name__}: {first})") from None
    for filename, lines in payload.get("sources", {}).items():
        # mtime None: linecache.checkcache leaves the entry alone.
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    names = []
    shipped = payload.get("workloads", [])
    for wl, filenames in zip(shipped, payload.get("filenames") or [[]] * len(shipped)):
        for fn, filename in zip(wl.functions(), filenames):
            # Its file given back: cloudpickle (>= 3.1.3) ships code as ``<dynamic-code>``.
            if isinstance(fn, types.FunctionType) and filename:
                fn.__code__ = _with_filename(fn.__code__, filename)
        register(wl)
        names.append(wl.name)
    return names


class ShippingError(UsageError):
    """Shipped workloads that cannot be pickled or loaded; the message is one line."""


def _by_value(fn: Any) -> None:
    """Make cloudpickle copy the code of ``fn``'s module where it is the user's own."""
    import cloudpickle

    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    if module is None or module.__name__ == "__main__" or module.__name__.startswith("arraybench"):
        return
    path = getattr(module, "__file__", None) or ""
    if "site-packages" in path or "dist-packages" in path or not path:
        return
    with contextlib.suppress(ValueError):  # one cloudpickle refuses (a package's submodule): by reference
        cloudpickle.register_pickle_by_value(module)


def _with_filename(code: types.CodeType, filename: str) -> types.CodeType:
    consts = tuple(_with_filename(c, filename) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _sources(workloads: list[Workload]) -> dict[str, list[str]]:
    """Source lines of every file the workloads' code comes from, as ``linecache`` holds them."""
    out: dict[str, list[str]] = {}
    for wl in workloads:
        for fn in wl.functions():
            for code in nested_codes(getattr(fn, "__code__", None)):
                name = code.co_filename
                if name not in out:
                    lines = linecache.getlines(name)
                    if lines:
                        out[name] = lines
    return out
