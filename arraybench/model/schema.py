"""JSON read back as untrusted input, and typed: ``results.json``, the journal, the store's rows.

A results file travels (mailed, committed, downloaded from CI), so a path must be a regular file
(a named pipe would block forever), the JSON plain (shallow, 64-bit whole numbers, no NaN), the
environment of the shape the reports read, and a cell's names of a length a person can read.

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
import errno
import json
import math
import os
import stat
import types
import typing
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any, Literal, Mapping, TypeVar, Union

T = TypeVar("T")


#: The longest time a results file may hold, in seconds (eleven days): beyond it is no measurement,
#: and ratios made from one overflow (1e308 s made a comparison call 1e151x "not significant").
MAX_SECONDS = 1e6
#: The metadata of a field that holds seconds.
SECONDS = {"min": 0, "max": MAX_SECONDS}
#: The metadata of a field that holds a count, a share or a size: never below zero.
NON_NEGATIVE = {"min": 0}


class SchemaError(ValueError):
    """A value that does not have the shape its dataclass declares; the message names the field."""


_hints = lru_cache(maxsize=None)(typing.get_type_hints)


def from_json(cls: type[T], data: Any, *, where: str = "") -> T:
    """An instance of dataclass ``cls`` from parsed JSON, every field checked; unknown keys are
    ignored (later versions' files stay readable), a missing field without a default refused."""
    if not isinstance(data, dict):
        raise SchemaError(f"{where or cls.__name__}: expected an object, got {_kind(data)}")
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
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
        for option in [o for o in options if o is not type(None)]:
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
        item = (typing.get_args(tp) or (Any,))[0]
        checked = [_check(item, v, f"{name}[{i}]") for i, v in enumerate(value)]
        return tuple(checked) if origin is tuple else checked
    if origin is dict:
        if not isinstance(value, dict):
            raise SchemaError(f"{name}: expected an object, got {_kind(value)}")
        item = (typing.get_args(tp) or (Any, Any))[-1]
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


#: arraybench nests its files about six deep; anything far deeper is not one of them.
MAX_DEPTH = 64
#: A results file or journal beyond this is not one of ours (the largest real ones are MBs).
MAX_BYTES = 1 << 30
_INT_LIMIT = 2**63
#: The longest name of a cell's part a file may hold: far beyond any a person writes, short enough
#: that tables stay quick (100,000 characters took a comparison from one second to a minute).
MAX_NAME = 1000
#: The parts of a record that name its cell.
_NAMES = ("workload", "size_label", "backend", "device", "dtype", "mode", "machine", "environment")


class NotRegularFile(OSError):
    """A path that is a named pipe, a device or a socket: reading it could block or never end."""


def read_regular(path: str | os.PathLike[str], *, follow_links: bool = True) -> bytes:
    """The bytes of a regular file; ``IsADirectoryError``, ``NotRegularFile`` or ``OSError``
    (``ELOOP``: a link where ``follow_links`` is False; ``EFBIG``: beyond ``MAX_BYTES``) else."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    # O_NONBLOCK: opening a named pipe must not wait for a writer; the file type is checked next.
    fd = os.open(path, flags)
    try:
        found = os.fstat(fd)
        if stat.S_ISDIR(found.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
        if not stat.S_ISREG(found.st_mode):
            raise NotRegularFile(errno.EINVAL, "is not a regular file (a named pipe, a device or "
                                 "a socket)", str(path))
        if found.st_size > MAX_BYTES:
            raise OSError(errno.EFBIG, f"is larger than {MAX_BYTES >> 20} MiB", str(path))
        return b"".join(iter(partial(os.read, fd, 1 << 20), b""))
    finally:
        os.close(fd)


class NotPlainJson(ValueError):
    """JSON that parsed but is not as arraybench writes it; the message says why."""


def _no_constant(name: str) -> Any:
    raise NotPlainJson(f"holds {name}, which JSON does not allow")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 19 or abs(int(text)) >= _INT_LIMIT:
        raise NotPlainJson(f"holds the number {text[:20]}{'…' if len(text) > 20 else ''}, "
                           "too large to be a measurement")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotPlainJson(f"holds the number {text[:20]}, beyond any float")
    return value


def loads(text: str) -> Any:
    """``json.loads``, refusing NaN, Infinity, whole numbers beyond 64 bits and deep nesting
    (``NotPlainJson``)."""
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_int=_bounded_int,
                          parse_float=_finite_float)
    except RecursionError:
        raise NotPlainJson(f"is nested too deeply (more than {MAX_DEPTH} levels)") from None
    if too_deep(data):
        raise NotPlainJson(f"is nested too deeply (more than {MAX_DEPTH} levels)")
    return data


def problem(data: Any, where: str = "") -> str | None:
    """Why ``loads`` would refuse ``data`` once written, naming the entry, or None: the reader's
    rule applied before writing."""
    stack: list[tuple[Any, str, int]] = [(data, where, 0)]
    while stack:
        value, at, depth = stack.pop()
        label = at or "the value"
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_LIMIT:
            digits = str(value) if value.bit_length() < 200 else f"a number of {len(str(value))} digits"
            return (f"{label} is {digits[:24]}{'…' if len(digits) > 24 else ''}, beyond the "
                    "64-bit whole numbers a results file holds")
        if isinstance(value, float) and not math.isfinite(value):
            return f"{label} is {value}, beyond any float a results file holds"
        if isinstance(value, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                return f"{label} is nested too deeply (more than {MAX_DEPTH} levels)"
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in items:
                name = (f"{at}.{k}" if at else str(k)) if isinstance(value, dict) else f"{at}[{k}]"
                stack.append((v, name, depth + 1))
    return None


def dumps(data: Any, **kwargs: Any) -> str:
    """``json.dumps`` of what ``loads`` reads back, else ``NotPlainJson`` before anything is written."""
    why = problem(data)
    if why:
        raise NotPlainJson(why)
    return json.dumps(data, allow_nan=False, **kwargs)


def too_deep(data: Any) -> bool:
    """Whether lists and objects in ``data`` nest deeper than ``MAX_DEPTH`` (checked without recursion)."""
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth >= MAX_DEPTH:
                return True
            items = value.values() if isinstance(value, dict) else value
            stack.extend((v, depth + 1) for v in items if isinstance(v, (dict, list)))
    return False


def check_names(record: Mapping[str, Any], where: str = "record") -> None:
    """``SchemaError`` where a name of ``record``'s cell or params passes ``MAX_NAME``."""
    named = [(f"{where}.{k}", record.get(k)) for k in _NAMES]
    params = record.get("params")
    if isinstance(params, Mapping):
        named += [(f"{where}.params", k) for k in params]
        named += [(f"{where}.params.{str(k)[:40]}", v) for k, v in params.items()]
    for field_name, value in named:
        if isinstance(value, str) and len(value) > MAX_NAME:
            raise SchemaError(f"{field_name}: a name of {len(value):,} characters, more than the "
                                     f"{MAX_NAME:,} a name may have")


@dataclass
class EnvironmentShape:
    """The containers of a run's environment the reports iterate over; other keys are free."""

    gpus: list[dict[str, Any]] = field(default_factory=list)
    libraries: dict[str, Any] = field(default_factory=dict)
    thread_env: dict[str, Any] = field(default_factory=dict)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    backends: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Multi-machine results: each machine's own environment.
    machines: dict[str, dict[str, Any]] = field(default_factory=dict)


def check_environment(env: Any, where: str = "environment") -> None:
    """``SchemaError`` naming the entry where ``env`` is not of the right shape (``None``
    counts as missing)."""
    if not isinstance(env, dict):
        raise SchemaError(f"{where}: expected an object, got {type(env).__name__}")
    present = {k: v for k, v in env.items() if v is not None}
    from_json(EnvironmentShape, present, where=where)
    for label, machine in (present.get("machines") or {}).items():
        check_environment({k: v for k, v in machine.items() if k != "machines"},
                          f"{where}.machines.{label}")

