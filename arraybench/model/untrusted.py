"""Files read back from disk, taken as untrusted input: ``results.json``, the journal.

A results file travels (mailed, committed, downloaded from CI), so a path must be a regular file
(a named pipe would block forever), the JSON plain (shallow, 64-bit whole numbers, no NaN), the
environment of the shape the reports read, and a cell's names of a length a person can read.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Mapping

from . import schema

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
        if isinstance(value, bool) or value is None or isinstance(value, str):
            continue
        if isinstance(value, int):
            if abs(value) >= _INT_LIMIT:
                digits = str(value) if value.bit_length() < 200 else f"a number of {len(str(value))} digits"
                return (f"{label} is {digits[:24]}{'…' if len(digits) > 24 else ''}, beyond the "
                        "64-bit whole numbers a results file holds")
        elif isinstance(value, float):
            if not math.isfinite(value):
                return f"{label} is {value}, beyond any float a results file holds"
        elif isinstance(value, (dict, list, tuple)):
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


def too_deep(data: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists and objects in ``data`` nest deeper than ``limit`` (checked without recursion)."""
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth >= limit:
                return True
            items = value.values() if isinstance(value, dict) else value
            stack.extend((v, depth + 1) for v in items if isinstance(v, (dict, list)))
    return False


def check_names(record: Mapping[str, Any], where: str = "record") -> None:
    """``schema.SchemaError`` where a name of ``record``'s cell or params passes ``MAX_NAME``."""
    named = [(f"{where}.{k}", record.get(k)) for k in _NAMES]
    params = record.get("params")
    if isinstance(params, Mapping):
        named += [(f"{where}.params", k) for k in params]
        named += [(f"{where}.params.{str(k)[:40]}", v) for k, v in params.items()]
    for field_name, value in named:
        if isinstance(value, str) and len(value) > MAX_NAME:
            raise schema.SchemaError(f"{field_name}: a name of {len(value):,} characters, more than the "
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
    """``schema.SchemaError`` naming the entry where ``env`` is not of the right shape (``None``
    counts as missing)."""
    if not isinstance(env, dict):
        raise schema.SchemaError(f"{where}: expected an object, got {type(env).__name__}")
    present = {k: v for k, v in env.items() if v is not None}
    schema.from_json(EnvironmentShape, present, where=where)
    for label, machine in (present.get("machines") or {}).items():
        check_environment({k: v for k, v in machine.items() if k != "machines"},
                          f"{where}.machines.{label}")

