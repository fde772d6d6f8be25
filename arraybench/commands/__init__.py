"""The commands: one module each (a few hold two close ones), ``register(subparsers)`` setting
``handler``; ``main`` is the entry point and imports none of them until it parses.

Here: ``--csv PATH`` and ``--markdown PATH``, a command's table written to a file as well (as
hyperfine's ``--export-csv``). A path that cannot be written is refused before the command
measures or reads anything, so a long run never loses its table to a typo in a folder name.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path
from typing import Callable

from ..errors import UsageError, one_line


def wanted(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(option, path) of each table file the command line asks for."""
    from ..options import option as declared

    dests = {"--" + name: declared(name).dest for name in ("csv", "markdown")}
    return [(flag, getattr(args, dest)) for flag, dest in dests.items() if getattr(args, dest, None)]


def check_targets(args: argparse.Namespace) -> None:
    """``UsageError`` for a ``--csv``/``--markdown`` path that cannot be written, or one given to
    both (the second would replace the first)."""
    given = wanted(args)
    if len(given) == 2 and os.path.abspath(given[0][1]) == os.path.abspath(given[1][1]):
        raise UsageError(f"--csv and --markdown both name {given[0][1]}; give each its own file")
    for option, path in given:
        why = unwritable(path)
        if why is not None:
            raise UsageError(f"{option} {one_line(path)}: {why}")


def unwritable(path: str) -> str | None:
    """Why ``path`` cannot be written (a folder there, no such folder, no permission), or None.

    A file is written as a new file renamed into place (``write_atomic``), so it is its folder that
    must be writable; a device or a pipe the user names (``/dev/stdout``) is written to."""
    target = Path(os.path.realpath(path))  # a link is written through, into its target's folder
    try:
        mode: int | None = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:  # a file where a folder of the path should be (ENOTDIR), a loop
        return f"cannot write there ({exc.strerror or exc})"
    if mode is not None and stat.S_ISDIR(mode):
        return "is a folder; give a file name"
    if mode is not None and not stat.S_ISREG(mode):
        return None if os.access(target, os.W_OK) else "cannot write there (permission denied)"
    folder = target.parent
    given = os.path.dirname(path) or "."
    # The folder as the user typed it, unless a link made it another one.
    shown = one_line(given if os.path.realpath(given) == str(folder) else str(folder))
    if not folder.is_dir():
        return f"cannot write there (no folder {shown})"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot write there (the folder {shown} is not writable)"
    return None


def write_tables(args: argparse.Namespace, render: dict[str, Callable[[], str]]) -> list[str]:
    """Write each asked-for table (``render``: its text by option, made only when asked for);
    return the paths written. ``UsageError`` names the one that could not be written."""
    from ..files import write_atomic

    written = []
    for option, path in wanted(args):
        try:
            # The user named this file: a device, pipe or link there is written through.
            write_atomic(path, render[option](), through=True)
        except OSError as exc:
            raise UsageError(f"{option} {one_line(path)}: cannot write there ({exc.strerror or exc})") from None
        written.append(path)
    return written


def say_written(args: argparse.Namespace, written: list[str]) -> None:
    """``wrote PATH`` on stderr (stdout may be JSON), unless the command is quiet."""
    if written and not getattr(args, "quiet", False):
        print("wrote " + ", ".join(written), file=sys.stderr)
