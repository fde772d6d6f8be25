"""The console the commands print to."""

from __future__ import annotations

from rich.console import Console

#: Wide enough for the results table's numbers, which never wrap.
TABLE_WIDTH = 120


def stdout_console(width: int = TABLE_WIDTH) -> Console:
    """A console on stdout, at least ``width`` columns (and without colour) when stdout is a file
    or a pipe, where rich would otherwise assume 80 and fold the tables' columns."""
    console = Console()
    if not console.is_terminal and console.width < width:
        console = Console(width=width, color_system=None)
    return console
