"""What a workload's function takes: its settings and its arrays, each checked against its signature.

A setting is a Python scalar or string besides the arrays (``tsteps=20``, ``mode="ortho"``): a
keyword default of the function, updated by ``params=`` (a dict, or ``n -> dict``). It is part of
the cell (``jacobi_2d|small|numpy|cpu|float64|latency|tsteps=20``) and reaches every library as the
very Python value, a constant under ``jax.jit`` and ``torch.compile``. A NumPy scalar default is
recorded as its Python value and reaches the function in its own NumPy type (``typed``): NumPy
promotes ``np.float64(2.0)`` and ``2.0`` differently.
"""

from __future__ import annotations

import contextlib
import inspect
import linecache
import math
from typing import Any, Callable, Mapping, Sequence, Union

import numpy as np

#: What a setting may be: JSON's scalars, so that it survives results.json unchanged.
ParamValue = Union[bool, int, float, str, None]
Params = dict[str, ParamValue]
#: ``params=`` as given: a dict, or a function of the size that returns one.
ParamsSpec = Union[Mapping[str, ParamValue], Callable[[int], Mapping[str, ParamValue]], None]

_SCALARS = (bool, int, float, str)
#: The kinds of parameter a call fills by position.
POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def is_setting(value: Any) -> bool:
    """Whether a value is a setting (a Python scalar or string) rather than an array."""
    return value is None or (isinstance(value, _SCALARS) and type(value).__module__ == "builtins")


def is_numpy_setting(value: Any) -> bool:
    """A NumPy scalar that stands for a setting (``np.float64(1.5)``, ``np.int64(3)``, ``np.bool_``)."""
    return isinstance(value, np.generic) and is_setting(value.item()) and value.item() is not None


def plain(value: Any) -> Any:
    """A setting as plain JSON: a NumPy scalar's Python value."""
    return value.item() if is_numpy_setting(value) else value


def parameters(fn: Any) -> list[inspect.Parameter] | None:
    """``fn``'s parameters in order; None where its signature cannot be read (a builtin's)."""
    with contextlib.suppress(TypeError, ValueError):
        return list(inspect.signature(fn).parameters.values())
    return None


def is_setting_parameter(p: inspect.Parameter) -> bool:
    """A parameter that takes a setting: keyword-only, or positional with a scalar default other
    than None (which stays an optional array)."""
    return p.kind is inspect.Parameter.KEYWORD_ONLY or p.kind in POSITIONAL and p.default is not None \
        and (is_setting(p.default) or is_numpy_setting(p.default))


def default_settings(fn: Any) -> Params:
    """The settings a function declares by its keyword defaults, NumPy scalars as Python values."""
    return {p.name: plain(p.default) for p in (parameters(fn) or [])[1:]
            if is_setting_parameter(p) and (is_setting(p.default) or is_numpy_setting(p.default))}


def typed(fn: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` as ``fn`` is called with them: a setting whose default is a NumPy scalar in that
    NumPy type (``np.float64(2.0)`` for ``--param alpha=2.0`` over ``alpha=np.float64(1.5)``)."""
    defaults = {p.name: p.default for p in parameters(fn) or [] if is_numpy_setting(p.default)}
    return {k: type(defaults[k])(v) if k in defaults and v is not None else v for k, v in params.items()}


def accepted(fn: Any, params: Mapping[str, Any], filled: int = 0) -> dict[str, Any]:
    """The settings ``fn`` can take by keyword (all of them if it has ``**kwargs``), when a call
    fills its first ``filled`` positional parameters: a setting of the same name as one of those
    (``n`` for ``inputs(n, rng)``) is not passed again, where it would fail every call."""
    ps = parameters(fn)
    if ps is None:
        return {}
    taken = set([p.name for p in ps if p.kind in POSITIONAL][:filled])
    anything = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in ps)
    names = {p.name for p in ps
             if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)}
    return {k: v for k, v in params.items() if (anything or k in names) and k not in taken}


def check_takes(owner: str, fn: Any, names: Any, what: str) -> None:
    """``TypeError`` where ``fn`` (``what`` of ``owner``) cannot take one of the settings ``names`` by keyword."""
    bad = [n for n in names if n not in accepted(fn, {n: None})]
    if bad:
        raise TypeError(f"{owner}: {what} {getattr(fn, '__name__', 'the function')} takes no keyword "
                        f"{', '.join(map(repr, bad))} ({definition_line(fn)})")


def aimed(key: str) -> tuple[str | None, str]:
    """A run's setting key as (workload, name): ``jacobi_2d.tsteps`` is aimed at one workload,
    ``tsteps`` (workload None) at every workload that has it. Workload names may hold dots;
    setting names cannot, so the last dot splits."""
    workload, dot, name = key.rpartition(".")
    return (workload if dot else None), name


def check_settings(owner: str, params: Mapping[str, Any], *, aimable: bool = False) -> Params:
    """``params`` as a plain dict, every value a setting; ``TypeError`` names a bad one.
    ``aimable``: keys may also be ``WORKLOAD.NAME`` (a run's settings, see ``aimed``)."""
    if not isinstance(params, Mapping):
        raise TypeError(f"{owner}: params must be a dict such as {{'tsteps': 20}} (or n -> dict), "
                        f"not {type(params).__name__}")
    out: Params = {}
    for name, value in params.items():
        target, bare = aimed(name) if aimable and isinstance(name, str) else (None, name)
        if not isinstance(bare, str) or not bare.isidentifier() or target == "":
            raise TypeError(f"{owner}: params key {name!r} is not a parameter name"
                            + (" (NAME, or WORKLOAD.NAME for one workload's)" if aimable else ""))
        # np.int64(20) and np.float64(0.5) as their Python values: the record holds plain JSON.
        v = value.item() if hasattr(value, "item") and getattr(value, "ndim", None) == 0 else value
        if v is not None and not isinstance(v, _SCALARS):
            raise TypeError(f"{owner}: setting {name}={value!r} must be a Python bool, int, float, "
                            "str or None (arrays go in inputs=)")
        out[name] = v if v is None or isinstance(v, (bool, str)) else int(v) if isinstance(v, int) else float(v)
    return out


_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def coerce(name: str, value: ParamValue, default: ParamValue) -> ParamValue:
    """``value`` (command-line text, or from the API) in the type of the workload's ``default``,
    so ``--param tsteps=50`` reaches ``range(tsteps)`` as an int; ``ValueError`` says what was expected."""
    kind = type(default)
    if default is None or isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    text_value = value.strip() if isinstance(value, str) else None
    out: ParamValue = None
    with contextlib.suppress(TypeError, ValueError, OverflowError):
        if kind is bool and text_value is not None and text_value.lower() in _TRUE + _FALSE:
            out = text_value.lower() in _TRUE
        elif kind is int and (text_value is not None or isinstance(value, float) and value.is_integer()):
            out = int(text_value if text_value is not None else value)  # type: ignore[arg-type]
        elif kind is float and not isinstance(value, bool):
            out = float(text_value if text_value is not None else value)  # type: ignore[arg-type]
    if out is None or isinstance(out, float) and not math.isfinite(out):
        what = {bool: "true or false", int: "a whole number", float: "a finite number"}.get(kind, "text")
        raise ValueError(f"setting {name} is {what} (its default is {default!r}), not {value!r}")
    return out


def text(params: Mapping[str, Any]) -> str:
    """``tsteps=20,mode=ortho``: settings as they appear in a cell's key, in their own order."""
    return ",".join(f"{k}={_value_text(v)}" for k, v in params.items())


def _value_text(v: Any) -> str:
    v = plain(v)
    return repr(v) if isinstance(v, float) else str(v)


def describe(params: Mapping[str, Any]) -> str:
    """``tsteps = 20, mode = 'ortho'``: settings as tables show them."""
    return ", ".join(f"{k} = {v!r}" for k, v in params.items())


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
    params = parameters(fn)
    if params is None or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return None
    # Settings (``tsteps=20``) are passed by keyword, never filled by ``inputs``.
    return [p for p in [p for p in params if p.kind in POSITIONAL][1:] if not is_setting_parameter(p)]


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
    if mutates in (True, False, None):
        return ("*",) if mutates else ()
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

