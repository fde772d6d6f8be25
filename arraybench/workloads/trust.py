"""Which code a results folder may make arraybench run (``--resume``): the trust model.

A results folder is data: it may come from someone else (mailed, downloaded from CI), and its
journal's header names the workload files the run imported and whether ``workloads.pickle`` holds
workloads defined in Python, which unpickling would run. So ``--resume`` imports a workload file,
or loads the pickle, only when

- the user names it: ``--workload-file FILE`` (``workload_files=`` in the API) for a file; or
- the user trusts the whole folder: ``--trust-folder`` (``trust_folder=True``); or
- the folder is the user's own: its header carries a seal (an HMAC-SHA256) made with a key that
  only this user's arraybench holds (``folder.key`` in the user's data folder, private to them),
  so a folder written by this user's own ``arraybench run`` resumes as before, and a folder
  written elsewhere, or whose header was changed, is not vouched for.

And ``workloads.pickle`` is loaded only if its SHA-256 is the one its run recorded in the header
(the seal covers that too): a pickle swapped in afterwards is refused, unread.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

#: The workloads a run defined in Python, pickled into its output folder (``shipping``).
SHIPPED_NAME = "workloads.pickle"
KEY_NAME = "folder.key"
_KEY_BYTES = 32


def key_path() -> Path:
    import platformdirs  # the store's data folder (``store.location``), named without importing it

    return Path(platformdirs.user_data_dir("arraybench", appauthor=False)) / KEY_NAME


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        # Another user's (or a world-writable) key vouches for nothing.
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        data = os.read(fd, _KEY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) == _KEY_BYTES else None


def _key(create: bool) -> bytes | None:
    """This user's sealing key; made on first use when ``create``. None where there is no private
    data folder to keep it in (then nothing is sealed, and resuming asks to name the files)."""
    try:
        path = key_path()
    except (RuntimeError, OSError):  # no home folder
        return None
    key = _read_key(path)
    if key is not None or not create:
        return key
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".folder.key.", dir=path.parent)  # 0600
        try:
            os.write(fd, secrets.token_bytes(_KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never replaces: of runs starting together, the first key wins
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    except OSError:
        return None
    return _read_key(path)


def _canonical(header: dict[str, Any]) -> bytes:
    body = {k: v for k, v in header.items() if k != "seal"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def seal(header: dict[str, Any]) -> str | None:
    """The seal of a journal header written by this user's arraybench (None: no key here)."""
    key = _key(create=True)
    return None if key is None else hmac.new(key, _canonical(header), hashlib.sha256).hexdigest()


def sealed(header: dict[str, Any]) -> bool:
    """Whether ``header`` was written, as it is, by this user's arraybench."""
    given = header.get("seal")
    key = _key(create=False)
    if not isinstance(given, str) or key is None:
        return False
    try:
        return hmac.compare_digest(given, hmac.new(key, _canonical(header), hashlib.sha256).hexdigest())
    except (TypeError, ValueError):  # a header no JSON can hold: not ours
        return False


def digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a regular file's bytes, in hex (``OSError`` if it cannot be read as one)."""
    import errno
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    with open(os.open(path, flags), "rb") as f:  # O_NONBLOCK: a named pipe is refused, not waited on
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(errno.EINVAL, "is not a regular file", str(path))
        return hashlib.file_digest(f, "sha256").hexdigest()


def check_resume(out: Path, *, files: list[str], shipped: bool, shipped_sha256: str | None,
                 sealed: bool, named: list[str], trust_folder: bool, environments: bool = False) -> None:
    """``UsageError`` (one line, nothing run) unless every piece of code the run in ``out`` needs
    may run: each workload file sealed, named or trusted; the pickle sealed or trusted, and the
    very file its run recorded."""
    from ..errors import UsageError

    if not (sealed or trust_folder):
        if environments:
            # Interpreters (--python) and variables (--variant: LD_PRELOAD, PYTHONSTARTUP...) run code.
            raise UsageError(f"{out}: its journal names other interpreters or environment variables "
                             "(--python, --variant) to run workers with, and this folder was not "
                             "written by your arraybench (or its journal was changed), so none is "
                             "run; add --trust-folder (trust_folder=True) only if you trust where "
                             "the folder came from")
        unnamed = [f for f in files if str(Path(f)) not in {str(Path(n)) for n in named}]
        if unnamed:
            flags = " ".join(f"--workload-file {_quoted(f)}" for f in unnamed)
            raise UsageError(f"{out}: its journal names the workload file {unnamed[0]}, and this "
                             "folder was not written by your arraybench (or its journal was "
                             "changed), so nothing in it is run unless you name it: arraybench run "
                             f"--resume {_quoted(str(out))} {flags} (or add --trust-folder if you "
                             "trust where the folder came from)")
        if shipped:
            raise UsageError(f"{out}: its run's workloads were defined in Python and are pickled "
                             f"in {out / SHIPPED_NAME}, which loading would run, and this folder "
                             "was not written by your arraybench (or its journal was changed); "
                             "add --trust-folder (trust_folder=True) only if you trust where the "
                             "folder came from")
    if shipped:
        path = out / SHIPPED_NAME
        try:
            found = digest(path)
        except FileNotFoundError:
            raise UsageError(f"{path}: the workloads defined in Python are missing") from None
        except OSError as exc:
            raise UsageError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        if shipped_sha256 is None and not trust_folder:
            raise UsageError(f"{path}: its run recorded no SHA-256 of it, so it is not loaded; add "
                             "--trust-folder if you trust where the folder came from")
        if shipped_sha256 is not None and not hmac.compare_digest(found, shipped_sha256):
            raise UsageError(f"{path}: is not the file its run wrote (its SHA-256 differs from the "
                             "one in the journal); it is not loaded")


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)
