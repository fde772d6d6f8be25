"""The console the commands print to."""

from __future__ import annotations

import os

from rich.console import Console

#: The width a file or a pipe gets: wide enough for the results table's every column.
TABLE_WIDTH = 120


def stdout_console(width: int = TABLE_WIDTH) -> Console:
    """A console on stdout (see ``widened``)."""
    return widened(Console(), width)


def widened(console: Console, width: int = TABLE_WIDTH) -> Console:
    """``console``, or one on its file ``width`` columns wide (and without colour) when it writes
    to a file or a pipe, where rich would otherwise assume 80, unless $COLUMNS says how wide to
    be. A terminal keeps its own width: the tables fit it."""
    if console.is_terminal or console.width >= width or os.environ.get("COLUMNS", "").strip().isdigit():
        return console
    return Console(width=width, file=console.file, color_system=None)
