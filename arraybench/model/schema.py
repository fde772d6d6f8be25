"""Typed JSON: dataclasses checked against their own annotations when read back.

``from_json`` builds a dataclass from parsed JSON and refuses, naming the field, any value whose
type does not match the annotation: one definition of a shape is its only validator. A field's
``metadata={"min": 0}`` (or ``"max"``) bounds a number, or every number of a list.

>>> from dataclasses import dataclass, field
>>> @dataclass
... class Point:
...     x: float
...     tags: list[str] = field(default_factory=list)
>>> from_json(Point, {"x": 1, "tags": ["a"]})
Point(x=1, tags=['a'])
>>> from_json(Point, {"x": "1"})
Traceback (most recent call last):
...
arraybench.model.schema.SchemaError: x: expected a number, got str
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from functools import lru_cache
from typing import Any, Literal, TypeVar, Union

T = TypeVar("T")


#: The longest time a results file may hold, in seconds (eleven days): beyond it is no measurement,
#: and ratios made from one overflow (1e308 s made a comparison call 1e151x "not significant").
MAX_SECONDS = 1e6
#: The metadata of a field that holds seconds.
SECONDS = {"min": 0, "max": MAX_SECONDS}


class SchemaError(ValueError):
    """A value that does not have the shape its dataclass declares; the message names the field."""


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_json(cls: type[T], data: Any, *, where: str = "") -> T:
    """An instance of dataclass ``cls`` from parsed JSON, every field checked; unknown keys are
    ignored (later versions' files stay readable), a missing field without a default refused."""
    if not isinstance(data, dict):
        raise SchemaError(f"{where or cls.__name__}: expected an object, got {_kind(data)}")
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        name = f"{where}.{f.name}" if where else f.name
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise SchemaError(f"{name}: missing")
            continue
        value = _check(hints[f.name], data[f.name], name)
        _check_bounds(value, f.metadata.get("min"), f.metadata.get("max"), name)
        values[f.name] = value
    return cls(**values)


def to_json(obj: Any) -> Any:
    """A dataclass (or list, dict, value) as JSON-ready data; inf and NaN become null."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        hints = _hints(type(obj))
        return {f.name: to_json(_as_declared(hints[f.name], getattr(obj, f.name)))
                for f in dataclasses.fields(obj)}
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    return obj


def _as_declared(tp: Any, value: Any) -> Any:
    """A whole number in a field declared a float (a work model's ``n**4`` flops), as a float: an
    int beyond 64 bits would be refused by every reader."""
    declared = (float,) if tp is float else typing.get_args(tp)  # float, or a union holding it
    if not _is_number(value) or abs(value) < 2**63 or float not in declared or int in declared:
        return value
    try:
        return float(value)
    except OverflowError:  # beyond any float: as inf, which JSON holds as null
        return None


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_bounds(value: Any, low: float | None, high: float | None, name: str) -> None:
    for v in filter(_is_number, value if isinstance(value, list) else [value]):
        if low is not None and v < low:
            raise SchemaError(f"{name}: {v!r} is below {low}")
        if high is not None and v > high:
            raise SchemaError(f"{name}: {v!r} is above {high:g}, the most it may be")


#: The plain JSON types: how each is named in an error, and what fits it.
_PLAIN: dict[Any, tuple[str, Any]] = {
    bool: ("true or false", lambda v: isinstance(v, bool)),
    int: ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    float: ("a number", _is_number),
    str: ("text", lambda v: isinstance(v, str)),
    type(None): ("null", lambda v: v is None),
}


def _check(tp: Any, value: Any, name: str) -> Any:
    """``value`` if it fits type ``tp`` (converted only where JSON loses the type: tuples, dataclasses)."""
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _check(option, value, name)
            except SchemaError as exc:
                errors.append(str(exc))
        raise SchemaError(errors[0] if len(errors) == 1 else f"{name}: unexpected {_kind(value)}")
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed or isinstance(value, bool) != any(isinstance(a, bool) for a in allowed):
            raise SchemaError(f"{name}: {value!r} is not one of {', '.join(map(repr, allowed))}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise SchemaError(f"{name}: expected a list, got {_kind(value)}")
        args = typing.get_args(tp)
        item = args[0] if args else Any
        checked = [_check(item, v, f"{name}[{i}]") for i, v in enumerate(value)]
        return tuple(checked) if origin is tuple else checked
    if origin is dict:
        if not isinstance(value, dict):
            raise SchemaError(f"{name}: expected an object, got {_kind(value)}")
        args = typing.get_args(tp)
        item = args[1] if len(args) == 2 else Any
        return {str(k): _check(item, v, f"{name}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return from_json(tp, value, where=name)
    if tp in _PLAIN:
        words, fits = _PLAIN[tp]
        if not fits(value):
            raise SchemaError(f"{name}: expected {words}, got {_kind(value)}")
        if tp is not float:
            return value
        try:
            finite = math.isfinite(value)
        except OverflowError:  # an integer beyond any float, such as 10**400
            finite = False
        if not finite:
            raise SchemaError(f"{name}: {str(value)[:20]} is not a finite number")
        return value
    raise TypeError(f"schema: no rule for {tp!r} ({name})")
