"""What a workload's function takes, and where it is defined: its array parameters (those after
``xp``), its ``def`` line for messages, the default inputs its parameters imply, and the
``mutates=`` and ``params=`` it may be given, checked against its signature.
"""

from __future__ import annotations

import inspect
import linecache
from typing import Any, Callable, Sequence

import numpy as np

from .params import ParamsSpec, check_settings, is_setting_parameter, refused

ArrayFn = Callable[..., Any]
#: ``(n, rng) -> arrays`` or ``(n) -> arrays``: one array, a tuple or list, or a dict by parameter name.
InputsFn = Callable[..., Any]


def source_of(fn: ArrayFn) -> str:
    """Where a workload's function comes from: ``builtin`` for arraybench's own, else its file."""
    module = getattr(fn, "__module__", "") or ""
    if module.startswith("arraybench."):
        return "builtin"
    code = getattr(fn, "__code__", None)
    return code.co_filename if code is not None else module


def definition_line(fn: Any) -> str:
    """``path:line: def name(...):`` for a function (its ``def`` line, not its decorators)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return getattr(fn, "__qualname__", repr(fn))
    path, first = code.co_filename, code.co_firstlineno
    is_lambda = getattr(fn, "__name__", "") == "<lambda>"
    for lineno in range(first, first + 60):
        line = linecache.getline(path, lineno)
        if not line:
            break
        text = line.strip()
        if ("lambda" in text) if is_lambda else text.startswith(("def ", "async def ")):
            return f"{path}:{lineno}: {text}"
    return f"{path}:{first}: {linecache.getline(path, first).strip()}"


def array_parameters(fn: Any) -> list[inspect.Parameter] | None:
    """The positional parameters after ``xp``; None where the function takes ``*args``."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return None
    # Settings (``tsteps=20``) are passed by keyword, never filled by ``inputs``.
    return [p for p in [p for p in params if p.kind in positional][1:] if not is_setting_parameter(p)]


def default_inputs(fn: ArrayFn) -> InputsFn:
    """One standard-normal float64 vector of length ``n`` per required parameter after ``xp``."""
    params = array_parameters(fn)
    name = getattr(fn, "__name__", "the function")
    if params is None:
        raise TypeError(f"{name} takes *args, so arraybench cannot tell how many arrays it needs: "
                        "give inputs=lambda n, rng: (...)")
    count = sum(1 for p in params if p.default is p.empty)
    if count == 0:
        raise TypeError(f"{name} takes no array after xp (a workload is a function of "
                        "(xp, *arrays), xp first): add its parameters, or give inputs=...")

    def standard_normal_vectors(n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        return tuple(rng.standard_normal(n) for _ in range(count))

    return standard_normal_vectors


def mutated_inputs(name: str, fn: ArrayFn, mutates: Sequence[str] | str | bool) -> tuple[str, ...]:
    """``mutates=`` as parameter names ("*" for every array), each checked against the function."""
    if mutates is True:
        return ("*",)
    if mutates is False or mutates is None:
        return ()
    names = (mutates,) if isinstance(mutates, str) else tuple(mutates)
    params = array_parameters(fn)
    if params is None:
        raise TypeError(f"{name}: the function takes *args, so mutates= cannot name its inputs; "
                        "give mutates=True (every input is restored before each call)")
    known = [p.name for p in params]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise TypeError(f"{name}: mutates={names!r} names {', '.join(map(repr, unknown))}, not an "
                        f"input of {getattr(fn, '__name__', 'the function')} ({', '.join(known) or 'none'})")
    return names


def check_params(name: str, fn: ArrayFn, params: ParamsSpec) -> None:
    """A ``params=`` dict must hold settings the function takes (checked again per size if n -> dict)."""
    if params is None or callable(params):
        return
    given = check_settings(name, params)
    bad = refused(fn, given)
    if bad:
        raise TypeError(f"{name}: params={given!r}: {getattr(fn, '__name__', 'the function')} takes no "
                        f"keyword {', '.join(map(repr, bad))} ({definition_line(fn)})")
