"""Loading users' workload files: each is imported as a module, and its ``@workload`` functions register.

A file that cannot be imported is reported with its own error line; the other files and the
built-in workloads still run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from pathlib import Path

from .errors import UsageError
from .workloads.api import REGISTRY


class WorkloadFileError(UsageError):
    """A workload file that is missing or does not import."""


def _module_name(path: Path) -> str:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    return f"arraybench_user_{path.stem}_{digest}"


def import_workload_file(path: str | Path) -> list[str]:
    """Import one file; return the names of the workloads it defined.

    Raises ``WorkloadFileError`` with the file's own line on a syntax error or an exception at
    import time.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise WorkloadFileError(f"workload file {path}: no such file")
    name = _module_name(path)
    if name in sys.modules:
        return list(getattr(sys.modules[name], "__arraybench_workloads__", []))
    before = dict(REGISTRY)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise WorkloadFileError(f"workload file {path}: cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[name]
        REGISTRY.clear()
        REGISTRY.update(before)
        raise WorkloadFileError(
            f"workload file {exc.filename}:{exc.lineno}: SyntaxError: {exc.msg}"
        ) from None
    except Exception as exc:
        del sys.modules[name]
        REGISTRY.clear()
        REGISTRY.update(before)
        where = _file_frame(exc, path)
        raise WorkloadFileError(
            f"workload file {where}: {type(exc).__name__}: {exc}"
        ) from None
    added = [n for n, wl in REGISTRY.items() if before.get(n) is not wl]
    for n in added:
        if n in before and before[n].source == "builtin":
            REGISTRY[n] = before[n]
            del sys.modules[name]
            raise WorkloadFileError(
                f"workload file {path}: defines {n!r}, which is a built-in workload; rename it"
            )
    if not added:
        raise WorkloadFileError(f"workload file {path}: defines no @arraybench.workload function")
    module.__arraybench_workloads__ = added  # type: ignore[attr-defined]
    return added


def _file_frame(exc: BaseException, path: Path) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    if not frames:
        return str(path)
    f = frames[-1]
    return f"{f.filename}:{f.lineno}"


def load_workload_files(paths: list[str]) -> dict[str, str]:
    """Import files inside a worker; return {file: error} for those that fail (already reported)."""
    errors: dict[str, str] = {}
    for p in paths:
        try:
            import_workload_file(p)
        except WorkloadFileError as exc:
            errors[str(p)] = str(exc)
    return errors
