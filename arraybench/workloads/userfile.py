"""The user's own code: loading their workload files, and pointing an error at their line.

``--workload-files my_bench.py`` is imported in the parent, to plan, and again in every worker. A
missing file is a mistake on the command line (exit 2); a file that does not load is reported with
its own line while the other files and the built-ins still run (``results.json``'s ``errors``).
Importing a file must not change the run around it: the working folder is put back, what it prints
goes to standard error (standard output carries ``--json``), and the threads it starts are remembered.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import sysconfig
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ..backends.cpu import stdout_to
from ..errors import UsageError
from .registry import REGISTRY


#: Folders whose code is not the user's: arraybench itself, the standard library, installed packages.
_LIBRARY_ROOTS = tuple(root + os.sep for root in {
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # the arraybench package
    *(os.path.abspath(path) for key, path in sysconfig.get_paths().items()
      if key in ("stdlib", "platstdlib", "purelib", "platlib"))})


def is_user_file(path: str) -> bool:
    """Whether a traceback frame's file is the user's own code (not arraybench, Python or a library)."""
    if not path or path.startswith("<"):
        return False
    full = os.path.abspath(path)
    if "site-packages" in full or "dist-packages" in full:
        return False
    return not full.startswith(_LIBRARY_ROOTS)


def describe_exception(exc: BaseException, fallback: str = "") -> str:
    """``TypeError: message`` on one line, with the user's frame, or ``fallback`` (where their
    workload is defined) when no frame of theirs is on the traceback (PyTorch's backward pass)."""
    text = str(exc).strip().splitlines()
    head = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    # The innermost traceback line outside arraybench and the libraries: the user's own code.
    ours = [fr for fr in traceback.extract_tb(exc.__traceback__) if is_user_file(fr.filename)]
    if ours:
        return f"{head} [at {ours[-1].filename}:{ours[-1].lineno}: {(ours[-1].line or '').strip()}]"
    return f"{head} [in {fallback}]" if fallback else head


class WorkloadFileError(UsageError):
    """A workload file that is missing or does not load; the message is one line with its own line."""


@dataclass
class LoadedFiles:
    """What a set of workload files gave: the workloads of each, and the files that did not load."""

    workloads: dict[str, list[str]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def names(self) -> list[str]:
        """Every workload the files defined, in file order."""
        return [n for names in self.workloads.values() for n in names]

    def error_entries(self) -> list[dict[str, str]]:
        """The load errors as ``results.json`` records them."""
        return [{"kind": "workload file", "source": f, "error": e} for f, e in self.errors.items()]


def resolve(path: str | Path) -> Path:
    """The absolute path of a workload file; ``WorkloadFileError`` if there is no such file."""
    p = Path(path).expanduser().resolve()
    if not p.exists():
        raise WorkloadFileError(f"workload file {p}: no such file")
    if not p.is_file():
        raise WorkloadFileError(f"workload file {p}: is not a file")
    return p


def import_workload_file(path: str | Path) -> list[str]:
    """Import one file; return the names of the workloads it defined. ``WorkloadFileError`` (the
    registry left as it was) with the file's own line where it fails, defines no workload, or
    reuses a name already taken."""
    path = resolve(path)
    name = f"arraybench_user_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
    if name in sys.modules:
        return list(getattr(sys.modules[name], "__arraybench_workloads__", []))
    before = dict(REGISTRY)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise WorkloadFileError(f"workload file {path}: cannot be imported as Python (name it *.py)")
    module = importlib.util.module_from_spec(spec)
    # Like `python my_bench.py`: helpers next to the file import. Appended, so nothing is shadowed.
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    sys.modules[name] = module

    def fail(message: str) -> WorkloadFileError:
        sys.modules.pop(name, None)
        REGISTRY.clear()
        REGISTRY.update(before)
        return WorkloadFileError(f"workload file {path}: {message}")

    try:
        with _importing(path):
            spec.loader.exec_module(module)
    except _ExitAtImport as exc:
        raise fail(f"called {exc} at import, which would end arraybench itself; guard script "
                   "code with `if __name__ == '__main__':`") from None
    except SyntaxError as exc:
        where = f"{exc.filename}:{exc.lineno}: {(exc.text or '').strip()}"
        raise fail(f"SyntaxError: {exc.msg} [at {where}]") from None
    except Exception as exc:
        raise fail(describe_exception(exc)) from None
    except SystemExit as exc:  # a script's `sys.exit()` or argparse at import
        raise fail(f"exited at import (SystemExit: {exc.code}); guard script code with "
                   "`if __name__ == '__main__':`") from None
    added = [n for n, wl in REGISTRY.items() if before.get(n) is not wl]
    for n, previous in ((n, before[n]) for n in added if n in before):
        if previous.source == "builtin":
            raise fail(f"defines {n!r}, which is a built-in workload; rename it (name=...)")
        if previous.source != REGISTRY[n].source:
            raise fail(f"defines {n!r}, already defined in {previous.source}; rename one (name=...)")
    if not added:
        raise fail("defines no workload (decorate a function of (xp, *arrays) with "
                   "@arraybench.workload)")
    module.__arraybench_workloads__ = added  # type: ignore[attr-defined]
    return added


#: The threads each workload file started as it was imported, by file.
_STARTED: dict[str, list[threading.Thread]] = {}


def threads_left() -> list[tuple[str, str]]:
    """(file, thread name) for each thread a workload file started at import that is still
    running and that Python would wait for at exit (not a daemon thread)."""
    return [(f, t.name) for f, threads in _STARTED.items() for t in threads
            if t.is_alive() and not t.daemon]


class _ExitAtImport(BaseException):
    """``os._exit`` or ``os.abort`` called by a workload file as it was imported."""


@contextmanager
def _importing(path: Path) -> Iterator[None]:
    """While the workload file ``path`` is imported: the threads it starts are remembered;
    ``os._exit`` and ``os.abort`` raise instead of ending the run without a word (a child the file
    forks still exits); no bytecode is cached beside the file; the working folder is put back
    afterwards; and what it prints (Python or C) goes to standard error: standard output carries
    ``--json``'s one document."""
    streams = contextlib.ExitStack()
    with contextlib.suppress(OSError):  # no descriptor 1 or 2 (closed by the caller): Python's streams only
        streams.enter_context(stdout_to(2))
    streams.enter_context(contextlib.redirect_stdout(sys.stderr))
    importer = os.getpid()
    threads_before = set(threading.enumerate())
    real_exit, real_abort = os._exit, os.abort
    try:
        # O_PATH: a folder the user may enter but not list is returned to all the same.
        cwd: int | None = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        cwd = None
    writes_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True

    def raising(real: Callable[..., Any], call: str) -> Callable[..., Any]:
        def stop(*args: Any) -> Any:
            if os.getpid() != importer:
                real(*args)
            raise _ExitAtImport(call.format(*map(repr, args)))

        return stop

    os._exit, os.abort = raising(real_exit, "os._exit({})"), raising(real_abort, "os.abort()")
    try:
        yield
    finally:  # a file that fails to load may have started threads all the same
        _STARTED[str(path)] = [t for t in threading.enumerate() if t not in threads_before]
        os._exit, os.abort = real_exit, real_abort  # type: ignore[assignment]
        sys.dont_write_bytecode = writes_bytecode
        streams.close()
        if cwd is not None:
            with contextlib.suppress(OSError):
                os.fchdir(cwd)
            os.close(cwd)


def load_files(paths: list[str], *, missing_ok: bool = False) -> LoadedFiles:
    """Import every file, in order: a missing one raises ``WorkloadFileError`` (unless ``missing_ok``:
    it is one more error), one that does not load is recorded in ``errors`` and the others still load."""
    loaded = LoadedFiles()
    for p in paths if missing_ok else [resolve(p) for p in paths]:
        try:
            loaded.workloads[str(p)] = import_workload_file(p)
        except WorkloadFileError as exc:
            loaded.errors[str(p)] = str(exc)
    return loaded


def missing_workload_reason(name: str, errors: dict[str, str]) -> str:
    """Why a planned workload is not defined in a worker: the files that did not load there."""
    if not errors:
        return f"workload {name!r} is not defined"
    return f"workload {name!r} is not defined here; " + "; ".join(errors.values())
