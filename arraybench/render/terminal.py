"""The console the commands print to."""

from __future__ import annotations

import os

from rich.console import Console

#: The width a file or a pipe gets: wide enough for the results table's every column.
TABLE_WIDTH = 120


def stdout_console(width: int = TABLE_WIDTH) -> Console:
    """A console on stdout. A terminal's own width; a file or a pipe gets ``width`` columns (and
    no colour), where rich would otherwise assume 80, unless $COLUMNS says how wide to be."""
    console = Console()
    if not console.is_terminal and console.width < width and not os.environ.get("COLUMNS", "").strip().isdigit():
        console = Console(width=width, color_system=None)
    return console
