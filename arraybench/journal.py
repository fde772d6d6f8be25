"""The journal: every measurement appended to disk the moment it exists, so none is ever lost.

``DIR/journal.jsonl`` starts with a header (the options and the plan) and then holds one line per
event: a shard (one process's measurement of one cell), a worker's self-report, an unavailable
backend. ``results.json`` is derived from it; ``--resume`` reads it back to run only what is missing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .errors import UsageError
from .plan import Cell, RunOptions

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

    def worker(self, backend: str, device: str, process: int, info: dict[str, Any]) -> None:
        self._write({"type": "worker", "backend": backend, "device": device, "process": process,
                     "info": info})

    def close(self) -> None:
        self._stream.close()


def read(out_dir: Path) -> JournalState:
    """Read a journal back; ``UsageError`` if there is none or it is not one."""
    path = out_dir / JOURNAL_NAME
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UsageError(f"{out_dir}: no {JOURNAL_NAME} to resume from (was it an arraybench output folder?)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read ({exc})") from None
    entries = []
    for i, line in enumerate(lines):
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break  # a torn last line from a kill mid-write: everything before it stands
            raise UsageError(f"{path}: line {i + 1} is not JSON; the journal is damaged") from None
    if not entries or entries[0].get("type") != "header" or entries[0].get("tool") != "arraybench":
        raise UsageError(f"{path}: not an arraybench journal")
    if entries[0].get("version") != JOURNAL_VERSION:
        raise UsageError(f"{path}: journal version {entries[0].get('version')!r}, expected {JOURNAL_VERSION}")
    head = entries[0]
    state = JournalState(
        options=RunOptions.from_dict(head["options"]),
        cells=[Cell.from_dict(c) for c in head["cells"]],
        environment=head.get("environment", {}),
    )
    for e in entries[1:]:
        kind = e.get("type")
        if kind == "shard":
            state.shards.setdefault(e["key"], {})[int(e["process"])] = e["shard"]
        elif kind == "unavailable":
            state.unavailable[(e["backend"], e["device"])] = e["reason"]
        elif kind == "worker":
            state.worker_info[(e["backend"], e["device"])] = e["info"]
    return state
