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
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from ..files import write_atomic
from ..model.summary import COLUMNS

if TYPE_CHECKING:
    from ..analysis.compare import Comparison
    from ..analysis.history import History
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


def rows_text(columns: Sequence[str], rows: Iterable[Mapping[str, object]]) -> str:
    """A CSV document of ``rows`` under a header of ``columns``, every cell made ``neutral``."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: neutral(row.get(k)) for k in columns})
    return buffer.getvalue()


def comparison_csv(comparison: Comparison) -> str:
    """A comparison as CSV: ``Comparison.rows()``, a row per cell (in both runs, then in one only),
    both medians in seconds, new/base, the verdict, p and q."""
    from ..analysis.compare import ROW_COLUMNS

    return rows_text(ROW_COLUMNS, comparison.rows())


#: The columns of ``history --csv``: a row per run of a series, as its table shows them.
HISTORY_COLUMNS = ("workload", "size_label", "size", "config", "machine_id", "run_id", "started_at",
                   "status", "median_s", "ci_low_s", "ci_high_s", "vs_previous", "note")


def history_csv(history: History, last: int) -> str:
    """The history table as CSV: the latest ``last`` runs of every series it shows, the times in
    seconds and ``vs_previous`` as a ratio (above 1: slower than the run before)."""
    from .history import latest_points

    rows = []
    for s, points in latest_points(history, last):
        for p, previous, note in points:
            rows.append({"workload": s.workload, "size_label": s.size_label, "size": s.size,
                         "config": s.label, "machine_id": s.machine_id, "run_id": p.run.run_id,
                         "started_at": p.run.started_at, "status": p.entry.status,
                         "median_s": p.median_s if p.valid else None,
                         "ci_low_s": p.entry.ci_low_s if p.valid else None,
                         "ci_high_s": p.entry.ci_high_s if p.valid else None,
                         "vs_previous": p.median_s / previous.median_s if p.valid and previous else None,
                         "note": note})
    return rows_text(HISTORY_COLUMNS, rows)


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
