"""Numerical agreement: each library's error against the float64 reference, per workload and dtype.

The seed's "why do NumPy and PyTorch give slightly different numbers?" answered with data: the
reference is NumPy in float64 on the very same inputs, so each number is that library's own
rounding (different summation orders, vectorised transcendental functions, FFT algorithms).
"""

from __future__ import annotations

from typing import Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..model.cell import config_label

from ..model.record import Record
from ..analysis.grouping import config_sort_key


def _rows(records: Iterable[Record]) -> tuple[list[tuple[str, str, str, str]], list[Record],
                                               dict[tuple[str, str, str, str, str], Record]]:
    """(workload, size, dtype, output) rows, the configurations, and the record of each cell."""
    recs = [r for r in records if r.max_rel_error is not None or r.status == "wrong"]
    configs: dict[tuple, Record] = {}
    for r in recs:
        configs.setdefault(config_sort_key(r), r)
    ordered = [configs[k] for k in sorted(configs)]
    rows: list[tuple[str, str, str, str]] = []
    cells: dict[tuple[str, str, str, str, str], Record] = {}
    for r in sorted(recs, key=lambda r: (r.workload, r.size, r.dtype)):
        outputs = r.output_names or [""]
        for out in outputs:
            row = (r.workload, r.size_label, r.dtype, out)
            if row not in rows:
                rows.append(row)
            cells[row + (_column(r),)] = r
    return rows, ordered, cells


def _column(r: Record) -> str:
    """One column per library, device and mode (NumPy's finite-difference gradient included)."""
    return "|".join((r.backend, r.device, r.mode, str(r.transfer), r.environment))


def _header(r: Record) -> str:
    # NumPy's finite-difference gradient shares its library's column: named without the method.
    return config_label(r.backend, r.device, r.mode, transfer=r.transfer, machine=r.machine,
                        environment=r.environment)


FOOTNOTE = ("† judged against its own, looser tolerance: finite differences lose about sqrt(eps) "
            "times the loss's scale. ✗ / red: over tolerance, marked wrong (or skipped: a known "
            "limitation of the library, its reason in the run's table).")


def _over(r: Record, err: float | None) -> bool:
    """Marked over tolerance: a wrong cell, or one skipped for a known limitation whose error
    (of this output) the check found over its tolerance (MLX's float64 sin on the CPU)."""
    if r.status == "wrong":
        return True
    return r.status == "skipped" and err is not None and r.tolerance is not None and err > r.tolerance


def row_tolerance(row: tuple, configs: list[Record], cells: dict) -> float | None:
    """The tolerance most cells of a row are judged by (the strictest one present)."""
    found = [cells[row + (_column(c),)].tolerance for c in configs if row + (_column(c),) in cells]
    found = [t for t in found if t is not None]
    return min(found) if found else None


def _own_tolerance_mark(r: Record, row_tol: float | None) -> str:
    return "†" if (r.tolerance is not None and row_tol is not None and r.tolerance > row_tol) else ""


def output_error(r: Record, output: str) -> float | None:
    """The error of one named output of a record (or its overall error)."""
    if output and r.output_names and output in r.output_names:
        i = r.output_names.index(output)
        if i < len(r.output_errors):
            return r.output_errors[i]
    return r.max_rel_error


def print_numerics(records: Iterable[Record], console: Console) -> None:
    """The table ``arraybench numerics`` prints, and the footnote that reads its marks."""
    console.print(numerics_table(records))
    console.print(f"[dim]{FOOTNOTE}[/]")


def numerics_table(records: Iterable[Record]) -> Table:
    """Rows: workload, size, dtype (and output); columns: library/device; cells: max relative error."""
    rows, configs, cells = _rows(records)
    table = Table(title="error against the NumPy float64 reference (max relative error; red: over tolerance)",
                  header_style="bold", title_justify="left")
    for name in ("workload", "size", "dtype", "output", "tolerance"):
        table.add_column(name, no_wrap=True)
    for cfg in configs:
        table.add_column(_header(cfg), justify="right")
    for row in rows:
        tolerance = row_tolerance(row, configs, cells)
        values = []
        for cfg in configs:
            r = cells.get(row + (_column(cfg),))
            if r is None:
                values.append(Text("—", style="dim"))
                continue
            err = output_error(r, row[3])
            text = ("—" if err is None else f"{err:.1e}") + _own_tolerance_mark(r, tolerance)
            values.append(Text(text, style="bold red" if _over(r, err) else ""))
        table.add_row(row[0], row[1], row[2], row[3], f"{tolerance:.1e}" if tolerance is not None else "—",
                      *values)
    return table


def numerics_markdown(records: Iterable[Record]) -> str:
    """The same table as Markdown."""
    rows, configs, cells = _rows(records)
    head = ["workload", "size", "dtype", "output", "tolerance"] + [_header(c) for c in configs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        tolerance = row_tolerance(row, configs, cells)
        vals = []
        for cfg in configs:
            r = cells.get(row + (_column(cfg),))
            err = output_error(r, row[3]) if r is not None else None
            mark = (_own_tolerance_mark(r, tolerance) + (" ✗" if _over(r, err) else "")) if r else ""
            vals.append("—" if err is None else f"{err:.1e}{mark}")
        lines.append("| " + " | ".join([*row, f"{tolerance:.1e}" if tolerance is not None else "—", *vals]) + " |")
    return "\n".join(lines) + "\n\n" + FOOTNOTE + "\n"
