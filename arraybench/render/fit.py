"""Tables fitted to a width, by the run table's rule: numbers never wrap, names wrap between words
and a word too long for its column ends in "…" (never split), and where even that is too wide the
least needed columns go, a line saying which. ``compare``, ``history`` and ``store list`` use it."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from rich.cells import cell_len
from rich.console import RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from .terminal import console as safe_console

#: A name column keeps this much at the least, so that names wrap into lines of a few words.
TEXT_MIN_WIDTH = 13


@dataclass(frozen=True)
class Column:
    """A column: ``numeric`` ones are right-aligned and never wrap, ``whole`` ones (an id, a time
    to copy) left-aligned and never wrap or shorten; ``drop``: higher goes first when the table
    does not fit, 0 never goes."""

    name: str
    numeric: bool = False
    drop: int = 0
    whole: bool = False


@dataclass
class Row:
    cells: Sequence[RenderableType]
    style: str | None = None
    end_section: bool = False


def fitted_table(title: RenderableType, columns: Sequence[Column], rows: Sequence[Row],
                 width: int | None, fits: Callable[[Table, int], bool] | None = None) -> tuple[Table, list[str]]:
    """The table within ``width`` columns (None: as wide as it wants), and the names of the
    columns left out to fit. ``fits(table, width)`` says when it fits (default: drawn whole)."""
    kept = list(range(len(columns)))
    table = build_table(title, columns, rows, kept)
    dropped: list[str] = []
    if width is not None:
        for i in sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: -columns[i].drop):
            if (fits or _fits)(table, width):
                break
            kept.remove(i)
            dropped.append(columns[i].name)
            table = build_table(title, columns, rows, kept)
    return table, dropped


def hidden_line(dropped: Sequence[str], width: int) -> Text | None:
    """The line under a table that left columns out, or None."""
    if not dropped:
        return None
    return Text(f"Hidden to fit {width} columns: {', '.join(dropped)} (a wider terminal, or "
                "COLUMNS=160, shows them; --json gives everything).", style="dim")


def build_table(title: RenderableType, columns: Sequence[Column], rows: Sequence[Row],
                kept: Sequence[int]) -> Table:
    """The table of ``rows`` with the columns ``kept`` (indices into ``columns``), unfitted."""
    table = Table(title=title, header_style="bold", pad_edge=False, title_justify="left")
    for i in kept:
        c = columns[i]
        # The widest cell as rich counts it (the header's longest word for a text column).
        widest = max((cell_len(line) for r in rows for line in str(r.cells[i]).splitlines()), default=0)
        if c.numeric or c.whole:  # never wrap or shorten: the column is as wide as its cells
            table.add_column(c.name, justify="right" if c.numeric else "left", no_wrap=True,
                             min_width=max(widest, len(c.name)))
        else:  # names wrap between words, in a column kept wide enough for a short name on one
            # line; a word too long for the column ends in "…", never splits
            longest_word = max((len(w) for w in c.name.split()), default=1)
            table.add_column(c.name, justify="left", overflow="ellipsis",
                             min_width=max(longest_word, min(widest, TEXT_MIN_WIDTH)))
    for r in rows:
        table.add_row(*(r.cells[i] for i in kept), style=r.style, end_section=r.end_section)
    return table


def _fits(table: Table, width: int) -> bool:
    """Whether ``table`` shows whole at ``width``: rich's measure can be a column short, and a
    table wider than its console loses its right edge, so the table is drawn and its top border
    looked at."""
    if measure(table).minimum > width:
        return False
    console = safe_console(width=width, color_system=None, record=True, file=io.StringIO())
    console.print(table)
    top = next((ln for ln in console.export_text().splitlines() if ln.startswith(("┏", "┌"))), "")
    return top.rstrip().endswith(("┓", "┐"))


def measure(table: Any) -> Measurement:
    """The table's least and natural widths; measured on a wide console, so that the widths
    found are the table's own."""
    console = safe_console(width=10_000, color_system=None, file=io.StringIO())
    return Measurement.get(console, console.options, table)
