"""The journal: every measurement appended to disk the moment it exists, so none is ever lost.

``DIR/journal.jsonl`` starts with a header (the options and the plan) and then holds one line per
event: a shard (one process's measurement of one cell), a worker's self-report, an unavailable
backend. ``results.json`` is derived from it; ``--resume`` reads it back to run only what is missing.

Each line is written whole, flushed and fsynced, so a kill (even SIGKILL, even a power cut after the
fsync) can leave at most a torn last line without its newline: the reader ignores it and ``reopen``
cuts it off. Anything else that does not read back as a journal entry is damage, and the reader
refuses it with the line number rather than resume from a guess.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TextIO

from . import backends
from .errors import UsageError
from .plan import DTYPES, MODES, Cell, RunOptions
from .records import STATUSES

JOURNAL_NAME = "journal.jsonl"
JOURNAL_VERSION = 1


@dataclass
class JournalState:
    """What a journal holds, read back."""

    options: RunOptions
    cells: list[Cell]
    shards: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    unavailable: dict[tuple[str, str], str] = field(default_factory=dict)
    worker_info: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)


class Journal:
    """Append-only, line-buffered, flushed and fsynced per line."""

    def __init__(self, path: Path, stream: TextIO) -> None:
        self.path = path
        self._stream = stream

    @classmethod
    def create(cls, out_dir: Path, options: RunOptions, cells: list[Cell],
               environment: dict[str, Any]) -> "Journal":
        path = out_dir / JOURNAL_NAME
        stream = open(path, "w", encoding="utf-8")
        j = cls(path, stream)
        j._write({
            "type": "header", "tool": "arraybench", "version": JOURNAL_VERSION,
            "options": options.to_dict(), "cells": [c.to_dict() for c in cells],
            "environment": environment,
        })
        return j

    @classmethod
    def reopen(cls, out_dir: Path) -> "Journal":
        path = out_dir / JOURNAL_NAME
        with open(path, "rb+") as f:  # drop a torn last line left by a kill mid-write
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
        return cls(path, open(path, "a", encoding="utf-8"))

    def _write(self, entry: dict[str, Any]) -> None:
        self._stream.write(json.dumps(entry) + "\n")
        self._stream.flush()
        os.fsync(self._stream.fileno())

    def shard(self, key: str, process: int, shard: dict[str, Any]) -> None:
        self._write({"type": "shard", "key": key, "process": process, "shard": shard})

    def unavailable(self, backend: str, device: str, reason: str) -> None:
        self._write({"type": "unavailable", "backend": backend, "device": device, "reason": reason})

    def worker(self, backend: str, device: str, process: int, info: dict[str, Any],
               pid: int | None = None) -> None:
        entry = {"type": "worker", "backend": backend, "device": device, "process": process,
                 "info": info}
        if pid is not None:
            entry["pid"] = pid
        self._write(entry)

    def close(self) -> None:
        self._stream.close()


class JournalError(UsageError):
    """A journal that cannot be resumed from: missing, not a journal, or damaged."""


def read(out_dir: Path) -> JournalState:
    """Read a journal back; ``JournalError`` (a ``UsageError``) if there is none or it is not one."""
    path = out_dir / JOURNAL_NAME
    fresh = "start afresh with --overwrite (the file stays until then)"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise JournalError(f"{out_dir}: no {JOURNAL_NAME} to resume from (was it an arraybench output folder?)") from None
    except IsADirectoryError:
        raise JournalError(f"{path}: is a folder, not a journal") from None
    except OSError as exc:
        raise JournalError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]  # a torn last line from a kill mid-write
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise JournalError(f"{path}: not text; not an arraybench journal") from None
    entries: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            entry = None
        if not isinstance(entry, dict):
            if i == 0:
                raise JournalError(f"{path}: not an arraybench journal (its first line is not a header)")
            raise JournalError(f"{path}: line {i + 1} is not a journal entry; the journal is damaged; {fresh}")
        entries.append(entry)
    if not entries or entries[0].get("type") != "header" or entries[0].get("tool") != "arraybench":
        raise JournalError(f"{path}: not an arraybench journal")
    if entries[0].get("version") != JOURNAL_VERSION:
        raise JournalError(f"{path}: journal version {entries[0].get('version')!r}, expected {JOURNAL_VERSION}")
    try:
        state = _header(entries[0])
    except _Damage as exc:
        raise JournalError(f"{path}: line 1 (the header) is damaged: {exc}; {fresh}") from None
    keys = {c.key for c in state.cells}
    for i, e in enumerate(entries[1:], start=2):
        try:
            _apply(e, state, keys)
        except _Damage as exc:
            raise JournalError(f"{path}: line {i} is damaged: {exc}; {fresh}") from None
    return state


class _Damage(Exception):
    pass


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise _Damage(what)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _header(head: dict[str, Any]) -> JournalState:
    options, cells, env = head.get("options"), head.get("cells"), head.get("environment", {})
    _need(isinstance(options, dict), "no options")
    _need(isinstance(cells, list) and len(cells) > 0, "no cells")
    _need(isinstance(env, dict), "environment is not an object")
    _need(isinstance(env.get("backends", {}), dict), "environment's backends is not an object")
    _check_options(options)
    parsed = [_cell(c) for c in cells]
    _need(len({c.key for c in parsed}) == len(parsed), "a cell appears twice")
    return JournalState(options=RunOptions.from_dict(options), cells=parsed, environment=env)


def _check_options(options: dict[str, Any]) -> None:
    """Each saved option has the type of its default (options added later keep their defaults)."""
    defaults = RunOptions()
    for f in fields(RunOptions):
        if f.name not in options:
            continue
        value, default = options[f.name], getattr(defaults, f.name)
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, int):
            ok = _is_int(value)
        elif isinstance(default, float):
            ok = _is_num(value) and math.isfinite(value)
        elif isinstance(default, str):
            ok = isinstance(value, str)
        elif isinstance(default, list):
            ok = _is_str_list(value)
        else:  # None by default (threads): absent, or a whole number
            ok = value is None or _is_int(value)
        _need(ok, f"option {f.name!r} is {value!r}")
    _need(options.get("processes", 1) >= 1, "option 'processes' is below 1")


def _cell(data: Any) -> Cell:
    _need(isinstance(data, dict), "a cell is not an object")
    names = {f.name for f in fields(Cell)}
    _need(all(k in data for k in names - {"transfer"}), "a cell lacks a field")
    for k in ("workload", "size_label", "backend", "device", "dtype", "mode"):
        _need(isinstance(data[k], str), f"a cell's {k} is not text")
    _need(_is_int(data["size"]) and data["size"] > 0, "a cell's size is not a positive whole number")
    _need(isinstance(data.get("transfer", False), bool), "a cell's transfer is not true/false")
    _need(data["backend"] in backends.SPECS, f"unknown backend {data['backend']!r}")
    _need(data["device"] in backends.DEVICES, f"unknown device {data['device']!r}")
    _need(data["dtype"] in DTYPES, f"unknown dtype {data['dtype']!r}")
    _need(data["mode"] in MODES, f"unknown mode {data['mode']!r}")
    return Cell.from_dict(data)


def _apply(e: dict[str, Any], state: JournalState, keys: set[str]) -> None:
    kind = e.get("type")
    if kind == "shard":
        key, process = e.get("key"), e.get("process")
        _need(isinstance(key, str) and key in keys, f"a shard of a cell not in the plan ({key!r})")
        _need(_is_int(process) and 0 <= process < state.options.processes,
              f"a shard of process {process!r}")
        state.shards.setdefault(key, {})[process] = _shard(e.get("shard"))
    elif kind == "unavailable":
        b, d, reason = e.get("backend"), e.get("device"), e.get("reason")
        _need(isinstance(b, str) and isinstance(d, str) and isinstance(reason, str),
              "an unavailable entry without backend, device and reason")
        state.unavailable[(b, d)] = reason
    elif kind == "worker":
        b, d, info = e.get("backend"), e.get("device"), e.get("info")
        _need(isinstance(b, str) and isinstance(d, str) and isinstance(info, dict),
              "a worker entry without backend, device and info")
        state.worker_info[(b, d)] = info
    else:
        _need(False, f"unknown entry type {kind!r}")


#: What each field of a shard may hold; the aggregate and results.json rely on it.
_SHARD_FIELDS = {
    "reason": "str", "method": "str", "timer": "str", "stop_reason": "str", "warnings": "strs",
    "samples_s": "times", "device_samples_s": "times?", "first_call_s": "num?",
    "max_rel_error": "num?", "tolerance": "num?", "flops": "num?", "bytes": "num?",
    "elapsed_s": "num?", "number": "int?", "warmup_calls": "int?",
}


def _shard(shard: Any) -> dict[str, Any]:
    _need(isinstance(shard, dict), "a shard is not an object")
    _need(shard.get("status") in STATUSES, f"a shard has status {shard.get('status')!r}")
    for name, kind in _SHARD_FIELDS.items():
        if name not in shard:
            continue
        v = shard[name]
        ok = {
            "str": isinstance(v, str),
            "strs": _is_str_list(v),
            "num?": v is None or _is_num(v),
            "int?": v is None or (_is_int(v) and v >= 0),
            "times": isinstance(v, list) and all(_is_num(x) and math.isfinite(x) and x >= 0 for x in v),
            "times?": v is None or (isinstance(v, list) and all(
                _is_num(x) and math.isfinite(x) and x >= 0 for x in v)),
        }[kind]
        _need(ok, f"a shard's {name} is {type(v).__name__}")
    return shard
