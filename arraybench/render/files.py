"""The files a run writes beside its report: CSV, JSON documents, exports, the manifest, plot names;
and the numerical agreement table (``arraybench numerics``), in the terminal and as Markdown.

A CSV text cell a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``, tab, CR) gets a
leading ``'`` (OWASP). The manifest lists plain plot names only: it is the user's file too, and one
edited by hand must not make ``--overwrite`` remove anything else. Plot names never collide.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from rich.table import Table
from rich.text import Text

from .comparison import series_rows
from ..analysis.compare import Comparison
from ..analysis.grouping import config_sort_key, is_valid
from ..analysis.history import History
from ..files import write_atomic
from ..model.cell import config_label
from ..model.record import COLUMNS, Record
from ..model.results import Results
from ..model.schema import read_regular, to_json
from ..units import format_change


CSV_NAME = "results.csv"


def csv_text(results: Results) -> str:
    """The CSV document: a header (``key``, ``config``, each field but the replicates), a ``Record.to_row()`` each."""
    return rows_text(["key", "config", *COLUMNS], (r.to_row() for r in results.records))


def rows_text(columns: Sequence[str], rows: Iterable[Mapping[str, object]]) -> str:
    """A CSV document of ``rows`` under a header of ``columns``, every cell made ``neutral``."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: neutral(row.get(k)) for k in columns})
    return buffer.getvalue()


#: The columns of ``history --csv``: a row per run of a series, as its table shows them.
HISTORY_COLUMNS = ("workload", "size_label", "size", "config", "machine_id", "run_id", "started_at",
                   "status", "median_s", "ci_low_s", "ci_high_s", "vs_previous", "note")


def history_csv(history: History, last: int) -> str:
    """The history table as CSV: times in seconds, ``vs_previous`` a ratio (above 1: slower than the run before)."""
    rows = ((s.workload, s.size_label, s.size, s.label, s.machine_id, p.run.run_id, p.run.started_at,
             p.entry.status, *((p.median_s, p.entry.ci_low_s, p.entry.ci_high_s) if p.valid else (None,) * 3),
             p.median_s / previous.median_s if p.valid and previous else None, note)
            for s, rows in series_rows(history, last) for p, previous, (*_, note) in rows)
    return rows_text(HISTORY_COLUMNS, (dict(zip(HISTORY_COLUMNS, row)) for row in rows))


#: What makes a spreadsheet read a cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutral(value: object) -> object:
    """A CSV cell's value: empty for None, formula-like text prefixed with ``'``, anything else as it is."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return value
    if value.startswith(FORMULA_STARTS):
        value = "'" + value
    # The writer quotes a cell holding "\n" (the line terminator) but not a bare "\r", which a
    # reader would take for the end of the row: as "\n", it stays inside its quoted cell.
    return value.replace("\r\n", "\n").replace("\r", "\n")


FOOTNOTE = ("† judged against its own, looser tolerance: finite differences lose about sqrt(eps) "
            "times the loss's scale. ✗ / red: over tolerance, marked wrong (or skipped: a known "
            "limitation of the library, its reason in the run's table).")


def _grid(records: Iterable[Record]) -> tuple[list[str], list[tuple[list[str], list[tuple | None]]]]:
    """The header, and per row (workload, size, dtype, output) its leading cells and each configuration's
    (error, mark, over tolerance); a column per library, device and mode (NumPy's finite-difference
    gradient included, under its library's name)."""
    recs = [r for r in records if r.max_rel_error is not None or r.status == "wrong"]
    configs: dict[tuple, Record] = {}
    for r in recs:
        configs.setdefault(config_sort_key(r), r)
    ordered = [configs[k] for k in sorted(configs)]

    def column(r: Record) -> tuple:
        return r.backend, r.device, r.mode, r.transfer, r.environment

    cells: dict[tuple[str, str, str, str], dict[tuple, Record]] = {}
    for r in sorted(recs, key=lambda r: (r.workload, r.size, r.dtype)):
        for out in r.output_names or [""]:
            cells.setdefault((r.workload, r.size_label, r.dtype, out), {})[column(r)] = r
    grid = []
    for row, found in cells.items():
        mine = [found.get(column(c)) for c in ordered]
        # The tolerance most cells of a row are judged by: the strictest one present.
        tolerance = min((r.tolerance for r in mine if r is not None and r.tolerance is not None), default=None)
        grid.append(([*row, "—" if tolerance is None else f"{tolerance:.1e}"],
                     [None if r is None else _cell(r, row[3], tolerance) for r in mine]))
    head = [config_label(c.backend, c.device, c.mode, transfer=c.transfer, machine=c.machine,
                         environment=c.environment) for c in ordered]
    return ["workload", "size", "dtype", "output", "tolerance", *head], grid


def _cell(r: Record, output: str, tolerance: float | None) -> tuple[float | None, str, bool]:
    """``r``'s error on ``output`` (or overall), "†" where its own tolerance is looser than the row's, and
    whether it is over tolerance: wrong, or skipped for a known limitation with the error over its own."""
    err = r.max_rel_error
    if output and r.output_names and output in r.output_names:
        i = r.output_names.index(output)
        err = r.output_errors[i] if i < len(r.output_errors) else err
    own = "†" if r.tolerance is not None and tolerance is not None and r.tolerance > tolerance else ""
    over = r.status == "wrong" or (r.status == "skipped" and err is not None and r.tolerance is not None
                                   and err > r.tolerance)
    return err, own, over


def numerics_table(records: Iterable[Record]) -> Table:
    """Rows: workload, size, dtype (and output); columns: library/device; cells: max relative error."""
    head, grid = _grid(records)
    table = Table(title="error against the NumPy float64 reference (max relative error; red: over tolerance)",
                  header_style="bold", title_justify="left")
    for i, name in enumerate(head):
        table.add_column(name, **({"no_wrap": True} if i < 5 else {"justify": "right"}))
    for lead, found in grid:
        table.add_row(*lead, *(Text("—", style="dim") if c is None else
                               Text(("—" if c[0] is None else f"{c[0]:.1e}") + c[1], style="bold red" if c[2] else "")
                               for c in found))
    return table


def numerics_markdown(records: Iterable[Record]) -> str:
    """The same table as Markdown."""
    head, grid = _grid(records)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for lead, found in grid:
        vals = ["—" if c is None or c[0] is None else f"{c[0]:.1e}{c[1]}{' ✗' if c[2] else ''}" for c in found]
        lines.append("| " + " | ".join([*lead, *vals]) + " |")
    return "\n".join(lines) + "\n\n" + FOOTNOTE + "\n"


FORMATS = ("github", "bencher")
_NS = 1e9


def benchmark_name(r: "Record") -> str:
    """``matmul/large/PyTorch CPU`` (``/float32`` appended for float32)."""
    name = f"{r.workload}/{r.size_label}/{r.config_label}"
    return name if r.dtype == "float64" else f"{name}/{r.dtype}"


def github_action_benchmark(results: "Results") -> list[dict[str, Any]]:
    """github-action-benchmark ``customSmallerIsBetter`` entries."""
    libs = results.environment.get("libraries") or {}
    out = []
    for r in results.records:
        if not is_valid(r):
            continue
        entry: dict[str, Any] = {"name": benchmark_name(r), "unit": "ns/call", "value": r.median_s * _NS}
        extra = [f"n = {r.size:,}", f"{r.n_replicates} processes, {r.n_samples} samples"]
        if r.ci_low_s is not None and r.ci_high_s is not None:
            entry["range"] = f"± {(r.ci_high_s - r.ci_low_s) / 2 * _NS:.4g}"
            extra.append(f"95% CI {r.ci_low_s * _NS:.4g}–{r.ci_high_s * _NS:.4g} ns")
        version = libs.get(r.backend)
        if version:
            extra.append(f"{r.backend} {version}")
        entry["extra"] = "\n".join(extra)
        out.append(entry)
    return out


def bencher_metric_format(results: "Results") -> dict[str, Any]:
    """Bencher Metric Format: each valid record's ``latency`` in nanoseconds."""
    return {benchmark_name(r): {"latency": {"value": r.median_s * _NS, **(
                {"lower_value": r.ci_low_s * _NS, "upper_value": r.ci_high_s * _NS}
                if r.ci_low_s is not None and r.ci_high_s is not None else {})}}
            for r in results.records if is_valid(r)}


def export_text(results: "Results", fmt: str) -> str:
    """The results in ``fmt`` (one of ``FORMATS``, which ``export --format`` takes) as JSON text."""
    data: Any = github_action_benchmark(results) if fmt == "github" else bencher_metric_format(results)
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def comparison_json(comparison: Comparison, *, failures: list[str] | None = None,
                    runs: Mapping[str, Any] | None = None, undecided: Sequence[str] = ()) -> str:
    """The comparison: which ``runs``, its counts, geometric mean, every cell's row, and (with a gate) why
    it fails and what it could not decide."""
    g = comparison.geometric_mean
    doc = {**(runs or {}), "summary": comparison.summary(), "counts": comparison.counts(),
           "geometric_mean": g, "change": format_change(g) if g is not None else None,
           "threshold": comparison.threshold, "alpha": comparison.alpha, "cells": comparison.rows()}
    if failures is not None:
        doc["gate"] = {"passed": not failures, "failures": failures}
    if undecided:
        doc["undecided"] = list(undecided)
    return json.dumps(to_json(doc), allow_nan=False)  # NaN and infinity (JSON has neither) as null


def history_json(found: History, *, regressions: list[str] | None = None) -> str:
    """The history: every series with its points (oldest first), and the steps called."""
    series = [{"machine_id": s.machine_id, "machine": s.machine, "cell": s.cell, "label": s.label,
               "workload": s.workload, "size_label": s.size_label, "size": s.size,
               "points": [{"run_id": p.run.run_id, "started_at": p.run.started_at,
                           "status": p.entry.status, "median_s": p.entry.median_s,
                           "ci_low_s": p.entry.ci_low_s, "ci_high_s": p.entry.ci_high_s,
                           "processes": p.processes, "context": p.run.context} for p in s.points]}
              for s in found.series]
    steps = [{"cell": st.series.cell, "machine_id": st.series.machine_id, "label": st.series.label,
              "before_run": st.before.run.run_id, "after_run": st.after.run.run_id,
              "ratio": st.ratio, "change": format_change(st.ratio), "p_value": st.p_value,
              "causes": list(st.causes)} for st in found.steps]
    doc: dict[str, Any] = {"threshold": found.threshold, "alpha": found.fdr, "series": series, "steps": steps}
    if regressions is not None:
        doc["gate"] = {"passed": not regressions, "failures": regressions}
    return json.dumps(to_json(doc), allow_nan=False)


MANIFEST_NAME = ".arraybench-files"
#: The kinds of file a manifest may name.
LISTED_SUFFIXES = (".svg", ".png")


def manifest(out: Path) -> list[str]:
    """The plot names the manifest in ``out`` lists; any other line is ignored (the file is the user's too)."""
    try:
        text = read_regular(out / MANIFEST_NAME, follow_links=False).decode("utf-8", "replace")
    except OSError:  # none yet, or not a file we wrote: it lists nothing
        return []
    return [name for name in text.splitlines() if _listable(name)]


def _listable(name: str) -> bool:
    return (bool(name) and name == os.path.basename(name) and "\\" not in name and "\0" not in name
            and not name.startswith(".") and name.endswith(LISTED_SUFFIXES))


def remember(out: Path, written: list[Path]) -> None:
    """Add the plots just written in ``out`` to its manifest (with those it listed already)."""
    names = [p.name for p in written if p.parent == out and _listable(p.name)]
    listed = manifest(out)
    if not names or set(names) <= set(listed):
        return
    write_atomic(out / MANIFEST_NAME, "".join(f"{n}\n" for n in dict.fromkeys([*listed, *names])))


#: Longest file name stem we write: file systems refuse names over 255 bytes.
MAX_STEM = 120
#: Beginnings that only the run-wide plots' names have (and the escape itself).
_RESERVED = ("summary_", "sweep_", "case_")


def plot_file_name(workload: str, size_label: str) -> str:
    """The SVG file of one workload at one size: ``matmul_large.svg``."""
    stem = f"{safe(workload)}_{safe(size_label)}"
    if stem.startswith(_RESERVED):
        stem = f"case_{stem}"
    return f"{stem}.svg"


def safe(text: str) -> str:
    """``text`` as a file-name part: letters, digits, ``-_.`` kept, anything else ``_``."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:MAX_STEM]


def run_plot_name(kind: str, name: str) -> str:
    """A run-wide plot's file: ``summary_large.svg``, ``sweep_matmul.svg``, ``history_matmul.svg``."""
    return f"{kind}_{safe(name)}.svg"
