"""What a run tells as it goes: the journal ``--resume`` reads back, every measurement appended the
moment it exists, so none is ever lost; and the ``Reporter`` a user interface subclasses.

Each line is written whole and fsynced, so a kill leaves at most a torn last line, which the reader
ignores and ``reopen`` cuts off; a failed write is cut off too. Never opened through a link. Anything
else that does not read back is damage, refused with its line number rather than resumed from a guess.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import SaveError, UsageError
from .replicate import Replicate
from .options import RunOptions
from .cell import Cell, Config
from .schema import NotPlainJson, SchemaError, check_environment, dumps, loads, read_regular
from ..files import kind, new_beside, private
from ..workloads import trust

if TYPE_CHECKING:
    from .record import Record
    from .results import Results

try:
    import fcntl
except ImportError:  # Windows: O_APPEND is set at open there (no such file is made there anyway)
    fcntl = None  # type: ignore[assignment]

JOURNAL_NAME = "journal.jsonl"
JOURNAL_VERSION = 2


@dataclass
class JournalState:
    """What a journal holds, read back."""

    options: RunOptions
    cells: list[Cell]
    #: cell key -> replicate index -> what that replicate measured.
    replicates: dict[str, dict[int, Replicate]] = field(default_factory=dict)
    unavailable: dict[tuple[str, str, str], str] = field(default_factory=dict)
    worker_info: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    sealed: bool = False  # whether this user's arraybench wrote the header as it is
    shipped_sha256: str | None = None  # of the run's ``workloads.pickle``
    #: workload name -> the fingerprint of its code when the run began.
    code: dict[str, str] = field(default_factory=dict)


#: Never through a link; appended at the end whatever the offset; not inherited by workers.
_FLAGS = os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class JournalSink(Protocol):
    """Where a session journals: the ``Journal`` file, or a queue the head drains (``ray_agent``)."""

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
        each workload's fingerprint."""
        path = out_dir / JOURNAL_NAME
        header: dict[str, Any] = {
            "type": "header", "tool": "arraybench", "version": JOURNAL_VERSION,
            "options": options.to_dict(), "cells": [c.to_dict() for c in cells],
            "environment": environment, **({"code": dict(code)} if code else {}),
        }
        _encode(header, path)  # a header the reader would refuse: nothing is touched
        try:
            if options.shipped_workloads:  # --resume loads the pickle only if it is this one
                header["shipped_sha256"] = trust.digest(out_dir / trust.SHIPPED_NAME)
            # Said by this user's arraybench: --resume may run the code this header names.
            mark = trust.seal(header)
            if mark is not None:
                header["seal"] = mark
            line = _encode(header, path)
            # A new file renamed into place, never the old one truncated: a failed header leaves a
            # finished journal whole, and a hard-linked copy (cp -al) keeps its own.
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
            fd = os.open(path, _FLAGS | os.O_APPEND, 0o666)
        except OSError as exc:
            raise SaveError.from_os(exc, path) from None
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
            # Cut off what part of the line got written: the lines before it stay a journal.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start)
            raise SaveError.from_os(exc, self.path) from None

    def replicate(self, key: str, index: int, replicate: Replicate) -> None:
        entry = {"type": "replicate", "key": key, "index": index, "replicate": replicate.to_dict()}
        try:
            dumps(entry)
        except (NotPlainJson, TypeError) as exc:
            # One value no reader would take must not end the run: the cell fails, saying why.
            entry["replicate"] = Replicate.ended(
                "failed", f"its measurement holds a value no results file can hold ({exc})").to_dict()
        self._write(entry)

    def unavailable(self, backend: str, device: str, reason: str, environment: str = "") -> None:
        # The environment is absent in a run of one: its journal is what it always was.
        self._write({"type": "unavailable", "backend": backend, "device": device, "reason": reason,
                     **({"environment": environment} if environment else {})})

    def worker(self, backend: str, device: str, index: int, info: dict[str, Any],
               pid: int | None = None, environment: str = "") -> None:
        self._write({"type": "worker", "backend": backend, "device": device, "index": index,
                     "info": info, **({"pid": pid} if pid is not None else {}),
                     **({"environment": environment} if environment else {})})

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _encode(entry: dict[str, Any], path: Path) -> bytes:
    """One journal line; one the reader would refuse is never written (``SaveError``)."""
    try:
        return (dumps(entry) + "\n").encode("utf-8")
    except (NotPlainJson, TypeError) as exc:
        raise SaveError(f"could not write {path} ({exc})", path) from None


class JournalError(UsageError):
    """A journal that cannot be resumed from: missing, not a journal, or damaged."""


def check_present(out_dir: Path) -> None:
    """``JournalError`` unless ``out_dir`` holds a journal file, unread: the check before locking."""
    path = out_dir / JOURNAL_NAME
    try:
        mode = path.lstat().st_mode
    except (FileNotFoundError, ValueError):  # ValueError: a NUL byte, a name no file can have
        raise JournalError(f"{out_dir}: no {JOURNAL_NAME} to resume from (was it an arraybench "
                           "output folder?)") from None
    except OSError as exc:
        raise JournalError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        raise JournalError(f"{path}: is {kind(mode)}" + ("; arraybench reads and appends to a journal "
                           "only inside its output folder" if stat.S_ISLNK(mode) else ", not a journal"))


def read(out_dir: Path) -> JournalState:
    """Read a journal back; ``JournalError`` (a ``UsageError``) if there is none or it is not one."""
    path = out_dir / JOURNAL_NAME
    fresh = "start afresh with --overwrite (the file stays until then)"
    check_present(out_dir)  # each kind of file that is no journal, in its own words
    try:
        data = read_regular(path, follow_links=False)
    except OSError as exc:
        raise JournalError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:  # up to the last newline: a torn last line from a kill mid-write is not read
        lines = data[: data.rfind(b"\n") + 1].decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise JournalError(f"{path}: not text; not an arraybench journal") from None
    entries: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        why = "is not a header" if i == 0 else "is not a journal entry"
        try:
            entry = loads(line)
        except NotPlainJson as exc:
            entry, why = None, str(exc)
        except ValueError:
            entry = None
        if not isinstance(entry, dict):
            if i == 0:
                raise JournalError(f"{path}: not an arraybench journal (its first line {why})")
            raise JournalError(f"{path}: line {i + 1} {why}; the journal is damaged; {fresh}")
        entries.append(entry)
    if not entries or entries[0].get("type") != "header" or entries[0].get("tool") != "arraybench":
        raise JournalError(f"{path}: not an arraybench journal")
    if entries[0].get("version") != JOURNAL_VERSION:
        raise JournalError(f"{path}: journal version {entries[0].get('version')!r}, expected "
                           f"{JOURNAL_VERSION} (written by another arraybench; start afresh with --overwrite)")
    try:
        state = _header(entries[0])
    except SchemaError as exc:
        raise JournalError(f"{path}: line 1 (the header) is damaged: {exc}; {fresh}") from None
    keys = {c.key for c in state.cells}
    for i, e in enumerate(entries[1:], start=2):
        try:
            _apply(e, state, keys)
        except SchemaError as exc:
            raise JournalError(f"{path}: line {i} is damaged: {exc}; {fresh}") from None
    return state


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise SchemaError(what)


def _header(head: dict[str, Any]) -> JournalState:
    options, cells, env = head.get("options"), head.get("cells"), head.get("environment", {})
    _need(isinstance(cells, list) and len(cells) > 0, "no cells")
    check_environment(env)
    parsed_options = RunOptions.from_dict(options)
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
        _need(isinstance(index, int) and not isinstance(index, bool) and index >= 0,
              f"a replicate numbered {index!r}")
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


class Reporter:
    """Progress events of a run; every method is optional."""

    def run_started(self, total: int) -> None:
        """``total`` measurements (cells times replicates) are about to be made."""

    def worker_started(self, backend: str, device: str, replicate: int, cells: int,
                       environment: str = "") -> None:
        """A worker process starts on ``cells`` cells, as their ``replicate``-th measurement;
        ``environment`` is passed only in a run that has some."""

    def config_unavailable(self, backend: str, device: str, reason: str) -> None:
        """A library or device cannot run here; its cells are skipped."""

    def replicate_done(self, cell: "Cell", index: int, replicate: "Replicate") -> None:
        """One process finished one cell."""

    def more_wanted(self, cell: "Cell", extra: int) -> None:
        """A cell wants ``extra`` more processes than counted so far (its interval is still wide)."""

    def record_done(self, record: "Record") -> None:
        """A cell's record is final (all its replicates are done, or it was skipped)."""

    def run_finished(self, results: "Results") -> None:
        """The run is over."""

    def stopping(self, signum: int) -> None:
        """A stop signal arrived; called inside the signal handler, so do nothing slow."""
