"""Where an error happened in the user's own code: the line people need, without a traceback.

A workload's exception crosses libraries and arraybench before it reaches the user; the line worth
showing is the innermost one of *their* code (``file:line: code``), found here.
"""

from __future__ import annotations

import os
import sysconfig
import traceback


def _library_roots() -> tuple[str, ...]:
    """Folders whose code is not the user's: arraybench itself, the standard library, installed packages."""
    roots = {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}  # the arraybench package
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            roots.add(os.path.abspath(sysconfig.get_paths()[key]))
        except KeyError:
            pass
    return tuple(r + os.sep for r in roots)


_LIBRARY_ROOTS = _library_roots()


def is_user_file(path: str) -> bool:
    """Whether a traceback frame's file is the user's own code (not arraybench, Python or a library)."""
    if not path or path.startswith("<"):
        return False
    full = os.path.abspath(path)
    if "site-packages" in full or "dist-packages" in full:
        return False
    return not full.startswith(_LIBRARY_ROOTS)


def user_frame(exc: BaseException) -> str:
    """The innermost traceback line outside arraybench and the libraries: the user's own code."""
    chosen = None
    for fr in traceback.extract_tb(exc.__traceback__):
        if is_user_file(fr.filename):
            chosen = fr
    if chosen is None:
        return ""
    return f"{chosen.filename}:{chosen.lineno}: {(chosen.line or '').strip()}"


def describe_exception(exc: BaseException, fallback: str = "") -> str:
    """``TypeError: message`` on one line, with the user's frame where there is one.

    ``fallback`` (e.g. where the user's workload is defined) is shown when no frame of the user's
    own code is on the traceback, as when PyTorch's backward pass raises from C++.
    """
    text = str(exc).strip().splitlines()
    head = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    where = user_frame(exc)
    if where:
        return f"{head} [at {where}]"
    return f"{head} [in {fallback}]" if fallback else head
