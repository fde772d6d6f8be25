"""The journal: every measurement appended to disk the moment it exists, so none is ever lost.

``DIR/journal.jsonl`` starts with a header (the options, the plan and the environment) and then
holds one line per event: a replicate (one process's measurement of one cell), a worker's
self-report, an unavailable backend. ``results.json`` is derived from it; ``--resume`` reads it back
to run only what is missing.

Each line is written whole, flushed and fsynced, so a kill (even SIGKILL, even a power cut after the
fsync) can leave at most a torn last line without its newline: the reader ignores it and ``reopen``
cuts it off. A write that fails (a full disk) is cut off at once and raises ``SaveError``: the
lines before it stay whole, and ``--resume`` goes on from them once the disk has room. The journal
is never opened through a symbolic link: a link planted under its name cannot make a run write,
or truncate, a file outside its folder. Anything else that does not read back as a journal entry
is damage, and the reader refuses it with the line number rather than resume from a guess. Every
entry is checked against the same types the worker and the aggregation use (``schema``), and the
file itself is read as untrusted input (``untrusted``).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..errors import SaveError, UsageError
from .replicate import Replicate
from .options import RunOptions
from .cell import Cell, Config
from .schema import SchemaError
from .untrusted import NotPlainJson, NotRegularFile, check_environment, dumps, loads, read_regular
from ..files import new_beside, private
from ..workloads import trust

try:
    import fcntl
except ImportError:  # Windows: O_APPEND is set at open there (no such file is made there anyway)
    fcntl = None  # type: ignore[assignment]

JOURNAL_NAME = "journal.jsonl"
JOURNAL_VERSION = 2


@dataclass
class JournalState:
    """What a journal holds, read back (what is still missing is ``session.RunState``'s to say)."""

    options: RunOptions
    cells: list[Cell]
    #: cell key -> replicate index -> what that replicate measured.
    replicates: dict[str, dict[int, Replicate]] = field(default_factory=dict)
    #: By configuration: (backend, device, environment); the environment "" in a run of one.
    unavailable: dict[tuple[str, str, str], str] = field(default_factory=dict)
    worker_info: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    #: Whether this user's arraybench wrote the header as it is (``workloads.trust``).
    sealed: bool = False
    #: SHA-256 of the run's ``workloads.pickle``, as the run recorded it.
    shipped_sha256: str | None = None
    #: workload name -> the fingerprint of its code when the run began (``workloads/trust``);
    #: empty in a journal written before fingerprints were kept.
    code: dict[str, str] = field(default_factory=dict)


#: Never through a link; appended at the end whatever the offset; not inherited by workers.
_FLAGS = os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _open(path: Path, flags: int) -> int:
    try:
        return os.open(path, _FLAGS | flags, 0o666)
    except OSError as exc:
        raise SaveError.from_os(exc, path) from None


class JournalSink(Protocol):
    """Where a session journals what happens: the ``Journal`` file here, or a queue the head drains
    on a cluster node (``executors.ray_agent``)."""

    def replicate(self, key: str, index: int, replicate: Replicate) -> None:
        """One replicate of the cell ``key``, as its ``index``-th."""

    def unavailable(self, backend: str, device: str, reason: str, environment: str = "") -> None:
        """A library or device that cannot run here (in ``environment``)."""

    def worker(self, backend: str, device: str, index: int, info: dict[str, Any],
               pid: int | None = None, environment: str = "") -> None:
        """A worker's report of what it sees (BLAS, threads, device)."""

    def close(self) -> None:
        """No more entries."""


class Journal:
    """Append-only, unbuffered, fsynced per line (a ``JournalSink``)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def create(cls, out_dir: Path, options: RunOptions, cells: list[Cell],
               environment: dict[str, Any], code: dict[str, str] | None = None) -> "Journal":
        """Start a new journal in ``out_dir`` (replacing one there) with its header; ``code``:
        each workload's fingerprint, which ``--resume`` compares."""
        path = out_dir / JOURNAL_NAME
        header: dict[str, Any] = {
            "type": "header", "tool": "arraybench", "version": JOURNAL_VERSION,
            "options": options.to_dict(), "cells": [c.to_dict() for c in cells],
            "environment": environment,
        }
        if code:
            header["code"] = dict(code)
        _encode(header, path)  # a header the reader would refuse: nothing is touched
        try:
            if options.shipped_workloads:  # --resume loads the pickle only if it is this one
                header["shipped_sha256"] = trust.digest(out_dir / trust.SHIPPED_NAME)
            # Said by this user's arraybench: --resume may run the code this header names.
            mark = trust.seal(header)
            if mark is not None:
                header["seal"] = mark
            line = _encode(header, path)
            # A new file renamed into place, never the old one truncated: a header that cannot
            # be written leaves a finished run's journal whole, and a hard-linked copy's other
            # name (cp -al) keeps its own. The descriptor goes on appending to the new file.
            fd = new_beside(path, line)
            if fcntl is not None:
                fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        except OSError as exc:
            raise SaveError.from_os(exc, path) from None
        return cls(path, fd)

    @classmethod
    def reopen(cls, out_dir: Path) -> "Journal":
        """Append to the journal in ``out_dir``, after cutting off a torn last line."""
        path = out_dir / JOURNAL_NAME
        try:
            private(path)  # appended to and cut here: never another name's file (cp -al)
        except OSError as exc:
            raise SaveError.from_os(exc, path) from None
        fd = _open(path, os.O_APPEND)
        try:  # drop a torn last line left by a kill mid-write
            data = read_regular(path, follow_links=False)
            if data and not data.endswith(b"\n"):
                os.ftruncate(fd, data.rfind(b"\n") + 1)
        except OSError as exc:
            os.close(fd)
            raise SaveError.from_os(exc, path) from None
        return cls(path, fd)

    def _write(self, entry: dict[str, Any]) -> None:
        if self._fd is None:
            raise SaveError(f"{self.path}: the journal is closed", self.path)
        data = _encode(entry, self.path)
        start = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
            os.fsync(self._fd)
        except OSError as exc:
            # Cut off what part of the line got written: the journal stays a journal, and the
            # lines before this one are what --resume goes on from.
            try:
                os.ftruncate(self._fd, start)
            except OSError:
                pass
            raise SaveError.from_os(exc, self.path) from None

    def replicate(self, key: str, index: int, replicate: Replicate) -> None:
        entry = {"type": "replicate", "key": key, "index": index, "replicate": replicate.to_dict()}
        try:
            dumps(entry)
        except (NotPlainJson, TypeError) as exc:
            # One value no reader would take must not end the run (nor every --resume of it):
            # the cell is journalled as failed, saying why, and the other cells go on.
            entry["replicate"] = Replicate.ended(
                "failed", f"its measurement holds a value no results file can hold ({exc})").to_dict()
        self._write(entry)

    def unavailable(self, backend: str, device: str, reason: str, environment: str = "") -> None:
        entry = {"type": "unavailable", "backend": backend, "device": device, "reason": reason}
        if environment:  # absent in a run of one environment: its journal is what it always was
            entry["environment"] = environment
        self._write(entry)

    def worker(self, backend: str, device: str, index: int, info: dict[str, Any],
               pid: int | None = None, environment: str = "") -> None:
        entry = {"type": "worker", "backend": backend, "device": device, "index": index,
                 "info": info}
        if pid is not None:
            entry["pid"] = pid
        if environment:
            entry["environment"] = environment
        self._write(entry)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _encode(entry: dict[str, Any], path: Path) -> bytes:
    """One journal line, by the reader's own rule (``untrusted.dumps``): a line ``read`` would
    refuse is never written (``SaveError``)."""
    try:
        return (dumps(entry) + "\n").encode("utf-8")
    except (NotPlainJson, TypeError) as exc:
        raise SaveError(f"could not write {path} ({exc})", path) from None


class JournalError(UsageError):
    """A journal that cannot be resumed from: missing, not a journal, or damaged."""


def _absent(out_dir: Path) -> JournalError:
    return JournalError(f"{out_dir}: no {JOURNAL_NAME} to resume from (was it an arraybench output folder?)")


def _not_a_file(path: Path, mode: int) -> JournalError:
    if stat.S_ISLNK(mode):
        return JournalError(f"{path}: is a symbolic link; arraybench reads and appends to a "
                            "journal only inside its output folder")
    if stat.S_ISDIR(mode):
        return JournalError(f"{path}: is a folder, not a journal")
    return JournalError(f"{path}: is not a regular file (a named pipe or a device), not a journal")


def check_present(out_dir: Path) -> None:
    """``JournalError`` unless ``out_dir`` holds a journal file, its content unread: the cheap
    check before a folder is locked for ``--resume`` (which then reads it once, under the lock)."""
    path = out_dir / JOURNAL_NAME
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        raise _absent(out_dir) from None
    except ValueError:  # a NUL byte: no file system has such a name
        raise _absent(out_dir) from None
    except OSError as exc:
        raise JournalError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        raise _not_a_file(path, mode)


def read(out_dir: Path) -> JournalState:
    """Read a journal back; ``JournalError`` (a ``UsageError``) if there is none or it is not one."""
    path = out_dir / JOURNAL_NAME
    fresh = "start afresh with --overwrite (the file stays until then)"
    try:
        data = read_regular(path, follow_links=False)
    except (FileNotFoundError, ValueError):  # ValueError: a NUL byte, a name no file can have
        raise _absent(out_dir) from None
    except IsADirectoryError:
        raise _not_a_file(path, stat.S_IFDIR) from None
    except NotRegularFile:
        raise _not_a_file(path, stat.S_IFIFO) from None
    except OSError as exc:
        if path.is_symlink():
            raise _not_a_file(path, stat.S_IFLNK) from None
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
            entry = loads(line)
        except NotPlainJson as exc:
            if i == 0:
                raise JournalError(f"{path}: not an arraybench journal (its first line {exc})") from None
            raise JournalError(f"{path}: line {i + 1} {exc}; the journal is damaged; {fresh}") from None
        except ValueError:
            entry = None
        if not isinstance(entry, dict):
            if i == 0:
                raise JournalError(f"{path}: not an arraybench journal (its first line is not a header)")
            raise JournalError(f"{path}: line {i + 1} is not a journal entry; the journal is damaged; {fresh}")
        entries.append(entry)
    if not entries or entries[0].get("type") != "header" or entries[0].get("tool") != "arraybench":
        raise JournalError(f"{path}: not an arraybench journal")
    if entries[0].get("version") != JOURNAL_VERSION:
        raise JournalError(f"{path}: journal version {entries[0].get('version')!r}, expected "
                           f"{JOURNAL_VERSION} (written by another arraybench; start afresh with --overwrite)")
    try:
        state = _header(entries[0])
    except (_Damage, SchemaError) as exc:
        raise JournalError(f"{path}: line 1 (the header) is damaged: {exc}; {fresh}") from None
    keys = {c.key for c in state.cells}
    for i, e in enumerate(entries[1:], start=2):
        try:
            _apply(e, state, keys)
        except (_Damage, SchemaError) as exc:
            raise JournalError(f"{path}: line {i} is damaged: {exc}; {fresh}") from None
    return state


class _Damage(Exception):
    pass


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise _Damage(what)


def _is_index(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _header(head: dict[str, Any]) -> JournalState:
    options, cells, env = head.get("options"), head.get("cells"), head.get("environment", {})
    _need(isinstance(cells, list) and len(cells) > 0, "no cells")
    _need(isinstance(env, dict), "environment is not an object")
    check_environment(env)
    parsed_options = RunOptions.from_dict(options)
    _need(parsed_options.processes >= 1, "option 'processes' is below 1")
    parsed = [Cell.from_dict(c, where=f"cell {i}") for i, c in enumerate(cells)]
    _need(len({c.key for c in parsed}) == len(parsed), "a cell appears twice")
    shipped = head.get("shipped_sha256")
    code = head.get("code", {})
    _need(isinstance(code, dict) and all(isinstance(k, str) and isinstance(v, str)
                                         for k, v in code.items()), "code is not names to fingerprints")
    return JournalState(options=parsed_options, cells=parsed, environment=env,
                        sealed=trust.sealed(head),
                        shipped_sha256=shipped if isinstance(shipped, str) else None, code=code)


def _apply(e: dict[str, Any], state: JournalState, keys: set[str]) -> None:
    kind = e.get("type")
    if kind == "replicate":
        key, index = e.get("key"), e.get("index")
        _need(isinstance(key, str) and key in keys, f"a replicate of a cell not in the plan ({key!r})")
        _need(_is_index(index), f"a replicate numbered {index!r}")
        state.replicates.setdefault(key, {})[index] = Replicate.from_dict(e.get("replicate"))
    elif kind == "unavailable":
        b, d, reason, env = e.get("backend"), e.get("device"), e.get("reason"), e.get("environment", "")
        _need(isinstance(b, str) and isinstance(d, str) and isinstance(reason, str) and isinstance(env, str),
              "an unavailable entry without backend, device and reason")
        state.unavailable[Config(b, d, env)] = reason
    elif kind == "worker":
        b, d, info, env = e.get("backend"), e.get("device"), e.get("info"), e.get("environment", "")
        _need(isinstance(b, str) and isinstance(d, str) and isinstance(info, dict) and isinstance(env, str),
              "a worker entry without backend, device and info")
        # What one worker of a configuration alone reports (``Job.describe``) outlives the rest.
        state.worker_info.setdefault(Config(b, d, env), {}).update(info)
    else:
        _need(False, f"unknown entry type {kind!r}")
