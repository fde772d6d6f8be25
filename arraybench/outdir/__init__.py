"""The output folder of a run: created, proven writable, locked, and never clobbering a run, finished
or not, unless told to (``--overwrite``). A run holds the folder's lock (a ``flock``, dropped however
the process dies) from before it touches the journal until its report is written: two writers would
interleave journal lines."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
import warnings
from pathlib import Path
from typing import Callable

from ..errors import UsageError, one_line, option_name, spell, from_command_line
from ..files import kind, new_beside
from ..model.journal import JOURNAL_NAME, JournalError, read
from ..render.files import MANIFEST_NAME, manifest


def claim(path: str | Path, *, overwrite: bool = False, resume: bool = False,
          what: str = "--output-dir") -> FolderLock:
    """Create the output folder, prove it writable and lock it; ``UsageError`` (nothing changed) for one
    another run holds, an unfinished run's (unless ``overwrite`` or ``resume``), or odd files in it."""

    def refuse(out: Path) -> None:
        check_own_files(out)
        why = None if overwrite or resume else unfinished(out) or finished(out)
        if why:
            raise UsageError(why)

    def settle(out: Path) -> None:
        refuse(out)  # again: another run may have been writing till now
        if overwrite and not resume:
            clear_previous(out)  # under the lock: never another run's files
        check_writable(out / LOGS_NAME, f"{what} ")

    return _locked(path, what, refuse, settle)


def claim_for_report(path: str | Path) -> FolderLock:
    """Lock a folder for report files alone (``merge -o``): refused while a run holds it or where it holds a run's journal."""
    # Refused again under the lock: a run may have started meanwhile.
    return _locked(path, "--output-dir", _refuse_run, _refuse_run)


def _locked(path: str | Path, what: str, refuse: Callable[[Path], None],
            settle: Callable[[Path], None]) -> FolderLock:
    """The folder locked, ``refuse`` passed before the lock and ``settle`` under it."""
    out = _folder(path, what)
    # Checked first without the lock too, so that a refused run leaves no trace in the folder.
    FolderLock.check_free(out)
    refuse(out)
    check_writable(out, f"{what} ")
    lock = FolderLock.acquire(out)
    try:
        settle(out)
    except BaseException:
        lock.release()
        raise
    return lock


def _refuse_run(out: Path) -> None:
    check_own_files(out)
    journal = out / JOURNAL_NAME
    if journal.exists() and not _nothing_journalled(journal):
        state = "an unfinished run" if unfinished(out) else "a run"
        raise UsageError(f"{out} holds {state} ({JOURNAL_NAME}); its results.json and report are "
                         "its own, so write this elsewhere: choose another --output-dir")


def prepare(path: str | Path, *, overwrite: bool) -> Path:
    """Create a folder for report files, proven writable (no lock); an unfinished run there needs ``overwrite``."""
    out = _folder(path, "--output-dir")
    check_writable(out, "--output-dir ")
    why = None if overwrite else unfinished(out)
    if why:
        raise UsageError(why)
    return out


def _folder(path: str | Path, what: str) -> Path:
    if not str(path).strip():
        raise UsageError(f"{what} is empty; name a folder (default: benchmark_plots)")
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{what} {out}: exists and is not a folder")
    return out


def unfinished(out: Path) -> str | None:
    """Why ``out`` holds a run a fresh start would destroy, or None, judged from the journal alone."""
    from ..analysis.policy import RunState

    path = out / JOURNAL_NAME
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        state = read(out)
    except JournalError as exc:
        if _nothing_journalled(path):
            return None
        return (f"{out} holds a journal that --resume cannot continue ({exc}); "
                f"start afresh with {spell('overwrite')}")
    if RunState.of(state).missing():
        return (f"{out} holds an unfinished run; continue it with `{resume_command(out)}`, "
                f"or start afresh with {spell('overwrite')}")
    return None


def finished(out: Path) -> str | None:
    """Why ``out`` holds a finished run a plain run would replace (after ``unfinished``), or None."""
    journal = out / JOURNAL_NAME
    if not ((out / REPLACED[0]).is_file() or (_regular(journal) and not _nothing_journalled(journal))):
        return None
    return (f"{out} holds a finished run; keep it and give another {option_name('output_dir')}, "
            f"or replace it with {spell('overwrite')} (the files the run wrote there go first)")


def _nothing_journalled(path: Path) -> bool:
    """A journal cut short before its header was whole: it holds no measurement to protect."""
    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return False
        with open(path, "rb") as f:
            return b"\n" not in f.read(1 << 20)
    except OSError:
        return False


def resume_command(out: "str | os.PathLike[str]") -> str:
    """How the caller continues the run in ``out`` (command or API), with the trust an unsealed run needs."""
    why = _unsealed(out)
    if from_command_line():
        return f"arraybench run --resume {out}" + (f" --trust-folder {why}" if why else "")
    return f"arraybench.resume({str(out)!r}" + (f", trust_folder=True) {why}" if why else ")")


def _unsealed(out: str | os.PathLike[str]) -> str:
    """Where the run in ``out`` needs trust to resume but was not sealed as this user's, why; else ""."""
    from ..model.schema import loads
    from ..workloads.trust import key_path

    try:
        with open(os.path.join(out, JOURNAL_NAME), "rb") as f:
            header = loads(f.readline(1 << 22).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return ""
    if not isinstance(header, dict) or "seal" in header or not isinstance(header.get("options"), dict):
        return ""
    if not any(header["options"].get(k) for k in ("workload_files", "shipped_workloads", "pythons", "variants")):
        return ""
    try:
        where = str(key_path().parent)
    except (RuntimeError, OSError):
        where = "your data folder"
    return (f"(the run could not be sealed as yours: {where} cannot keep arraybench's key, so without it "
            "the code the run names is not run)")


LOCK_NAME = ".arraybench.lock"

try:
    import fcntl
except ImportError:  # not on Windows: runs there are not locked
    fcntl = None  # type: ignore[assignment]
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class FolderLock:
    """This process's claim on an output folder; ``release`` it, or let the process end."""

    def __init__(self, folder: Path, fd: int | None) -> None:
        self.folder = folder
        self._fd = fd

    @classmethod
    def acquire(cls, folder: Path) -> "FolderLock":
        """Lock ``folder`` or raise ``UsageError`` naming the run that holds it."""
        path = folder / LOCK_NAME
        while True:
            try:
                # O_NOFOLLOW: a link planted under the lock's name must not create a file elsewhere.
                fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o666)
            except OSError as exc:
                raise UsageError(f"{path}: cannot be opened to lock the folder ({exc.strerror or exc})") from None
            lock = cls._locked(folder, path, fd)
            held = os.fstat(fd)
            if held.st_nlink > 1:
                # A hard-linked copy's lock (cp -al) is the original's too: give this folder its
                # own (renamed in while the shared one is held) and lock that.
                try:
                    os.close(new_beside(path, b""))
                except OSError as exc:
                    lock.release()
                    raise UsageError(f"{path}: cannot be replaced by a lock of this folder's own "
                                     f"({exc.strerror or exc})") from None
            else:
                with contextlib.suppress(OSError):
                    named = os.lstat(path)
                    if (named.st_ino, named.st_dev) == (held.st_ino, held.st_dev):
                        break
            lock.release()  # replaced meanwhile (or by this folder's own): lock what the name now holds
        with contextlib.suppress(OSError):  # only said to a second run; a full disk must not stop this one
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return lock

    @classmethod
    def check_free(cls, folder: Path) -> None:
        """``UsageError`` if another run holds ``folder``; creates nothing."""
        path = folder / LOCK_NAME
        try:
            fd = os.open(path, os.O_RDWR | _NOFOLLOW | _CLOEXEC)
        except OSError:
            return  # no lock file yet (or not one we can open): acquire() says what is wrong
        with warnings.catch_warnings():  # an unlockable file system is said once, by acquire()
            warnings.simplefilter("ignore")
            cls._locked(folder, path, fd).release()

    @classmethod
    def _locked(cls, folder: Path, path: Path, fd: int) -> "FolderLock":
        """``fd`` (open on the lock file) locked, or ``UsageError`` (``fd`` closed)."""
        if fcntl is None:
            return cls(folder, fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            except OSError:
                holder = ""
            os.close(fd)
            who = f" (process {holder})" if holder.isdigit() else ""
            raise UsageError(f"{folder}: another arraybench run is writing there{who}; wait for it "
                             "to end, or choose another --output-dir") from None
        except OSError as exc:
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                os.close(fd)
                raise UsageError(f"{path}: cannot lock the folder ({exc.strerror or exc})") from None
            # A file system without locks (some network mounts): unlocked rather than not at all.
            warnings.warn(f"{folder}: this file system cannot lock the folder ({exc.strerror or exc}); "
                          "make sure no other run writes there at the same time", stacklevel=3)
        return cls(folder, fd)

    def release(self) -> None:
        """Give the folder back (closing the file drops the lock)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "FolderLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


LOGS_NAME = "logs"
#: Files a run replaces by a rename (never written through): each must not be a folder.
REPLACED = ("results.json", "report.html", "results.md", "results.csv", "findings.md")
#: Other files a run writes under fixed names: its shipped workloads and a cluster run's shard log.
OTHER_OWN = ("workloads.pickle", "cluster.jsonl")
#: The name of a worker's log in ``logs/``: ``BACKEND-DEVICE[-ENVIRONMENT]-pINDEX[-STATE].log``.
WORKER_LOG = re.compile(r"[^/]+-p[0-9]+(?:-(?:fresh|reused))?\.log")


def check_writable(out: Path, what: str = "") -> None:
    """Create ``out`` if needed and write a temporary file in it; ``UsageError`` if that cannot be done."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(buffering=0, prefix=".arraybench-write-test-", dir=out) as probe:
            probe.write(b"ok")
    except OSError as exc:
        raise UsageError(f"{what}{out}: cannot write there ({exc.strerror or exc})") from None


def check_own_files(out: Path) -> None:
    """The names a run writes must be what it expects: never followed out of the folder."""
    journal = out / JOURNAL_NAME
    if journal.is_symlink() or (journal.exists() and not journal.is_file()):
        raise UsageError(f"{journal}: is {_kind(journal)}, not a journal; arraybench writes only "
                         "files of its own in its output folder (remove it, or choose another folder)")
    for name in REPLACED:
        if (out / name).is_dir() and not (out / name).is_symlink():
            raise UsageError(f"{out / name}: is a folder; arraybench writes a file there "
                             "(remove or rename it, or choose another folder)")
        if (out / name).is_symlink() or (out / name).exists() and not (out / name).is_file():
            # Only a regular file is replaced (``files``): never a link, pipe or device.
            raise UsageError(f"{out / name}: is {_kind(out / name)}; arraybench writes its own "
                             "file there and replaces only regular files (remove it, or choose "
                             "another folder)")
    logs = out / LOGS_NAME
    if logs.is_symlink() or (logs.exists() and not logs.is_dir()):
        raise UsageError(f"{logs}: is {_kind(logs)}; arraybench keeps the workers' logs in a "
                         "folder of its own there (remove it, or choose another folder)")
    _check_logs(logs)


def _check_logs(logs: Path, depth: int = 2) -> None:
    """Refuse a file in ``logs/`` that is a pipe (a run would block on it), device, socket or link."""
    try:
        entries = list(os.scandir(logs))
    except OSError:
        return  # absent, or unreadable: check_writable says so
    for entry in entries:
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        path = logs / entry.name
        if stat.S_ISDIR(mode) and depth > 1:
            _check_logs(path, depth - 1)
        elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise UsageError(f"{path}: is {_kind(path)}, not a log; arraybench writes only files of "
                             "its own in its output folder (remove it, or choose another folder)")


def _kind(path: Path) -> str:
    if path.is_symlink():
        return f"a symbolic link (to {one_line(os.readlink(path))})"
    return kind(path.lstat().st_mode)


def clear_previous(out: Path) -> list[str]:
    """Remove, before ``--overwrite``, the files an earlier run wrote in ``out`` by name (only in a folder
    that held a run; never a folder, links removed not followed); the names removed. The journal stays
    for the new run to start over, so a run refused later still leaves one to ``--resume``."""
    removed: list[str] = []
    journal = _regular(out / JOURNAL_NAME)
    if not (journal or _regular(out / REPLACED[0])):
        return removed  # no run was ever here: every file in the folder is the user's
    # A run's own names: the report files; the plots and the shard log and pickle only where a
    # run's journal says a run was here (merge and report write no journal, pickle or logs).
    names = [*REPLACED, *manifest(out), MANIFEST_NAME] + ([*OTHER_OWN] if journal else [])
    for name in dict.fromkeys(names):
        if _remove_file(out / name):
            removed.append(name)
    logs = out / LOGS_NAME
    if journal and logs.is_dir() and not logs.is_symlink():
        try:
            entries = list(os.scandir(logs))
        except OSError as exc:
            raise UsageError(f"{logs}: cannot be read to clear the earlier run's logs "
                             f"({exc.strerror or exc})") from None
        for entry in entries:
            # Only the names a worker's log has (``numpy-cpu-p0.log``): a user's app.log stays.
            if WORKER_LOG.fullmatch(entry.name) and _remove_file(Path(entry.path)):
                removed.append(f"{LOGS_NAME}/{entry.name}")
    return removed


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _remove_file(path: Path) -> bool:
    """Unlink ``path`` if it is a file or a link (never a folder, a pipe or a device)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise UsageError(f"{path}: cannot be examined to clear the earlier run ({exc.strerror or exc})") from None
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        return False
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise UsageError(f"{path}: the earlier run's file cannot be removed ({exc.strerror or exc}); remove it, "
                         "or choose another folder") from None
    return True
