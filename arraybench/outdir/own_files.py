"""A run's own files in its output folder (report files, the plots its manifest lists, shipped
workloads, logs): checked to be plain files before a run starts, and removed by name, only those,
when ``--overwrite`` starts afresh."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path

from ..errors import UsageError, one_line
from ..files import kind
from ..model.journal import JOURNAL_NAME
from ..render.files import MANIFEST_NAME, manifest

LOGS_NAME = "logs"
#: Files a run replaces by a rename (never written through): each must not be a folder.
REPLACED = ("results.json", "report.html", "results.md", "results.csv", "findings.md")
#: Other files a run writes under fixed names: its shipped workloads and a cluster run's shard log.
OTHER_OWN = ("workloads.pickle", "cluster.jsonl")
#: The name of a worker's log in ``logs/``: ``BACKEND-DEVICE[-ENVIRONMENT]-pINDEX[-STATE].log``.
WORKER_LOG = re.compile(r"[^/]+-p[0-9]+(?:-(?:fresh|reused))?\.log")


def check_writable(out: Path, what: str = "") -> None:
    """Create ``out`` if needed and write a uniquely named file in it; ``UsageError`` if that cannot be done."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".arraybench-write-test-", dir=out)
        try:
            os.write(fd, b"ok")
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{what}{out}: cannot write there ({reason(exc)})") from None


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
            raise UsageError(f"{logs}: cannot be read to clear the earlier run's logs ({reason(exc)})") from None
        for entry in entries:
            # Only the names a worker's log has (``numpy-cpu-p0.log``): a user's app.log stays.
            if WORKER_LOG.fullmatch(entry.name) and _remove_file(Path(entry.path)):
                removed.append(f"{LOGS_NAME}/{entry.name}")
    return removed


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _remove_file(path: Path) -> bool:
    """Unlink ``path`` if it is a file or a link (never a folder, a pipe or a device)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise UsageError(f"{path}: cannot be examined to clear the earlier run ({reason(exc)})") from None
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        return False
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise UsageError(f"{path}: the earlier run's file cannot be removed ({reason(exc)}); remove it, "
                         "or choose another folder") from None
    return True


def reason(exc: OSError) -> str:
    """What the system said of a failed file operation, in words."""
    return exc.strerror or str(exc)
