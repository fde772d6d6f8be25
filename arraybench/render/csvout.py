"""The records as CSV, one row per record, for spreadsheets and scripts (no pandas needed).

A spreadsheet reads a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
as a formula (CSV injection): such text cells (a workload's name, an error message) get a leading
``'``, as OWASP advises. Numbers are written as numbers, a negative one included. A carriage
return inside a text cell is written as a line break, inside the cell's quotes.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import write_atomic
from ..model.record import COLUMNS

if TYPE_CHECKING:
    from ..model.results import Results

CSV_NAME = "results.csv"


def csv_columns() -> list[str]:
    """The columns, in order: ``key``, ``config``, then every field of a record but its replicates."""
    return ["key", "config", *COLUMNS]


def csv_text(results: Results) -> str:
    """The CSV document: a header row, then ``Record.to_row()`` of every record.

    Missing values are empty cells; times are seconds per call, as in ``results.json``.
    """
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=csv_columns(), lineterminator="\n")
    writer.writeheader()
    for r in results.records:
        writer.writerow({k: neutral(v) for k, v in r.to_row().items()})
    return buffer.getvalue()


#: What makes a spreadsheet read a cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutral(value: object) -> object:
    """A CSV cell's value: empty for None, text that a spreadsheet would run as a formula
    prefixed with ``'``, anything else as it is."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return value
    if value.startswith(FORMULA_STARTS):
        value = "'" + value
    # The writer quotes a cell holding "\n" (the line terminator) but not a bare "\r", which a
    # reader would take for the end of the row: as "\n", it stays inside its quoted cell.
    return value.replace("\r\n", "\n").replace("\r", "\n")


def write_csv(results: Results, out_dir: Path) -> Path:
    """Write ``out_dir/results.csv``."""
    return write_atomic(Path(out_dir) / CSV_NAME, csv_text(results))
