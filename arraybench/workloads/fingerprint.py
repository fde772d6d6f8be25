"""A workload's code, as one hash: what ``--resume`` compares before it measures again.

A run's journal records the fingerprint of each workload it plans. Resuming after the function was
edited would pool replicates of the old code and the new in one cell (and call the result
"bimodal"), so a resume whose workload differs is refused (``api.resume``).

The hash covers what decides what a call does: the bytecode of every function the workload holds
(the function, its inputs, reference, work model, overrides, gradients, ``params``), their
constants, the names they use, their defaults and closures, the functions of the same module they
call (by name, recursively), and the workload's settings. Data the code reads from its module
(``SCALE = 2``, bytes drawn at import) is not code, and may differ from one import to the next by
design: it is left out. It leaves out what does not change a call:
the file's name and line numbers (a comment or a blank line added above the function), and the
memory addresses a ``repr`` would show. It is computed in the same Python each time; a resume in
another Python version, whose bytecode differs, is refused too.
"""

from __future__ import annotations

import functools
import hashlib
import types
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..errors import UsageError
from .definition import Workload

#: How deep nested values (a dict of tuples of functions...) are followed, and how many items of
#: a list or tuple.
_DEPTH = 8
_ITEMS = 1000


def fingerprint(wl: Workload) -> str:
    """A hex digest of ``wl``'s code and settings (see the module's docstring)."""
    h = hashlib.sha256()
    seen: set[int] = set()
    parts = [wl.fn, wl.inputs, wl.reference, wl.work, wl.params, wl.grad, wl.namespace,
             wl.placement, wl.mutates, sorted(wl.overrides.items()), sorted(wl.gradients.items()),
             sorted(wl.override_namespaces.items()), sorted(wl.gradient_namespaces.items())]
    for part in parts:
        _feed(h, part, seen, _DEPTH)
    return h.hexdigest()[:24]


def _feed(h: Any, value: Any, seen: set[int], depth: int) -> None:
    if depth <= 0:
        h.update(b"<deep>")
        return
    if isinstance(value, (str, bytes)):  # hashed as they are: a long one costs no repr
        h.update(f"{type(value).__name__}:{len(value)}:".encode())
        h.update(value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value)
    elif value is None or isinstance(value, (bool, int, float, complex)):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, types.CodeType):
        _code(h, value, seen, depth)
    elif isinstance(value, types.FunctionType):
        _function(h, value, seen, depth)
    elif isinstance(value, functools.partial):
        h.update(b"partial(")
        _feed(h, value.func, seen, depth - 1)
        _feed(h, value.args, seen, depth - 1)
        _feed(h, sorted(value.keywords.items()), seen, depth - 1)
        h.update(b")")
    elif isinstance(value, (tuple, list)):
        h.update(f"{type(value).__name__}{len(value)}[".encode())
        for v in value[:_ITEMS]:  # a closure over a long list is data, not code
            _feed(h, v, seen, depth - 1)
        h.update(b"]")
    elif isinstance(value, (set, frozenset)):  # iteration order varies with hash randomisation
        h.update(b"set[")
        for item in sorted(repr(v) for v in value if isinstance(v, (int, float, str, bytes))):
            h.update(item.encode())
        h.update(b"]")
    elif isinstance(value, dict):
        h.update(b"dict[")
        for k in sorted(value, key=repr):
            _feed(h, k, seen, depth - 1)
            _feed(h, value[k], seen, depth - 1)
        h.update(b"]")
    elif hasattr(value, "dtype") and hasattr(value, "item") and getattr(value, "shape", None) == ():
        h.update(f"{value.dtype}:{value.item()!r};".encode())  # a NumPy scalar
    else:  # an object: its type (its repr may hold a memory address)
        h.update(f"<{type(value).__module__}.{type(value).__qualname__}>".encode())


def _code(h: Any, code: types.CodeType, seen: set[int], depth: int) -> None:
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_argcount,
                   code.co_kwonlyargcount, code.co_flags)).encode())
    for const in code.co_consts:
        _feed(h, const, seen, depth - 1)


def _function(h: Any, fn: types.FunctionType, seen: set[int], depth: int) -> None:
    if id(fn) in seen:  # recursion, or a helper two functions share
        h.update(f"<seen {fn.__qualname__}>".encode())
        return
    seen.add(id(fn))
    h.update(f"def {fn.__qualname__}".encode())
    _code(h, fn.__code__, seen, depth)
    _feed(h, fn.__defaults__, seen, depth - 1)
    _feed(h, fn.__kwdefaults__, seen, depth - 1)
    for cell in fn.__closure__ or ():
        try:
            _feed(h, cell.cell_contents, seen, depth - 1)
        except ValueError:  # an empty cell
            h.update(b"<empty>")
    # The module's own functions it calls by name: an edited helper changes what a call does.
    for name in _global_names(fn.__code__):
        value = fn.__globals__.get(name)
        if isinstance(value, types.FunctionType) and value.__module__ == fn.__module__:
            h.update(f"global {name}".encode())
            _function(h, value, seen, depth - 1)


def _global_names(code: types.CodeType) -> list[str]:
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _global_names(const)
    return list(dict.fromkeys(names))



def code_of(cells: Iterable[Any], workloads: Mapping[str, Workload]) -> dict[str, str]:
    """The fingerprint of each workload the cells measure, by name."""
    names = dict.fromkeys(c.workload for c in cells)
    return {n: fingerprint(workloads[n]) for n in names if n in workloads}


def check_code(code: Mapping[str, str], unfinished: Iterable[str], out: Path,
               workloads: Mapping[str, Workload]) -> None:
    """Refuse (``UsageError``) to resume the run journalled in ``out`` when the code of a
    workload it has still to measure (``unfinished``) is not what it was when the run began
    (``code``): its cells would pool replicates of both. A journal without fingerprints (an
    older arraybench) is not checked."""
    changed = [n for n in dict.fromkeys(unfinished)
               if n in code and n in workloads and fingerprint(workloads[n]) != code[n]]
    if not changed:
        return
    names = ", ".join(map(repr, changed))
    source = workloads[changed[0]].source
    where = "arraybench itself" if source == "builtin" else source
    raise UsageError(
        f"--resume {out}: the code of workload {names} changed since the run began (in {where}); "
        "resuming would pool measurements of the old code and the new in one cell. Put the code "
        f"back as it was to resume, or measure the new code afresh in another folder (or with "
        f"--overwrite, which discards what {out} holds)")
