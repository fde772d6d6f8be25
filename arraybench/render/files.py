"""The files a run writes beside its report: CSV, JSON documents, the export formats, the manifest
of what was written, and the names its plots get.

The records as CSV, one row per record, for spreadsheets and scripts (no pandas needed).

A spreadsheet reads a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
as a formula (CSV injection): such text cells (a workload's name, an error message) get a leading
``'``, as OWASP advises. Numbers are written as numbers, a negative one included. A carriage
return inside a text cell is written as a line break, inside the cell's quotes.

Results in formats other tools read: github-action-benchmark and Bencher.

- ``github`` — github-action-benchmark's ``customSmallerIsBetter`` tool: a JSON list of
  ``{"name", "unit", "value", "range", "extra"}``, one per valid record.
- ``bencher`` — Bencher Metric Format (BMF): ``{name: {"latency": {"value", "lower_value",
  "upper_value"}}}``, Bencher's built-in ``latency`` measure, in nanoseconds.

Both name a record ``workload/size label/configuration`` (``matmul/large/PyTorch CPU``; the dtype
is appended when it is not float64, the machine is part of the configuration in results of several
machines), and both carry the median per call in nanoseconds with its 95% confidence interval.
Only valid records (status ``ok``) are exported: a wrong or failed cell has no time to chart.

What ``compare --json`` and ``history --json`` print: one JSON document, the numbers and the
verdicts as the tables show them, for scripts (times in seconds; ratios new/base).

The plots a report wrote into a folder, listed one name a line in ``.arraybench-files``: what
``--overwrite`` removes (``outdir/own_files``), with the report files it names itself, before a new
run starts there. Only plain plot names in the folder itself are listed or read back: the manifest
is the user's file too, and one edited by hand must not remove anything else.

The names of the files a run writes for people: one per plot, safe on every file system.

A case plot is ``WORKLOAD_SIZE.svg``; the plots of a whole run are ``summary_SIZE.svg``,
``sweep_WORKLOAD.svg`` and ``roofline.svg``. A workload may be called ``summary`` or ``sweep``
(they are users' names), so a case plot whose name would start like a run-wide plot's gets
``case_`` in front, as does one that already starts with ``case_``: no two kinds of plot can then
share a file name, and no plot overwrites another.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence, Any

from ..analysis.compare import Comparison
from ..analysis.grouping import is_valid
from ..analysis.history import History
from ..files import write_atomic
from ..model.record import COLUMNS
from ..model.untrusted import read_regular
from ..units import format_change

if TYPE_CHECKING:
    from ..model.results import Results
    from ..model.record import Record


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
    from .comparison import latest_points

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


FORMATS = ("github", "bencher")
_NS = 1e9


def benchmark_name(r: "Record") -> str:
    """``matmul/large/PyTorch CPU`` (``/float32`` appended for float32)."""
    name = f"{r.workload}/{r.size_label}/{r.config_label}"
    return name if r.dtype == "float64" else f"{name}/{r.dtype}"


def _ns(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * _NS


def github_action_benchmark(results: "Results") -> list[dict[str, Any]]:
    """github-action-benchmark ``customSmallerIsBetter`` entries."""
    libs = results.environment.get("libraries") or {}
    out = []
    for r in results.records:
        if not is_valid(r):
            continue
        entry: dict[str, Any] = {"name": benchmark_name(r), "unit": "ns/call", "value": _ns(r.median_s)}
        if r.ci_low_s is not None and r.ci_high_s is not None:
            entry["range"] = f"± {(r.ci_high_s - r.ci_low_s) / 2 * _NS:.4g}"
        extra = [f"n = {r.size:,}", f"{r.n_replicates} processes, {r.n_samples} samples"]
        if r.ci_low_s is not None and r.ci_high_s is not None:
            extra.append(f"95% CI {_ns(r.ci_low_s):.4g}–{_ns(r.ci_high_s):.4g} ns")
        version = libs.get(r.backend) if isinstance(libs, dict) else None
        if version:
            extra.append(f"{r.backend} {version}")
        entry["extra"] = "\n".join(extra)
        out.append(entry)
    return out


def bencher_metric_format(results: "Results") -> dict[str, Any]:
    """Bencher Metric Format: each valid record's ``latency`` in nanoseconds."""
    out: dict[str, Any] = {}
    for r in results.records:
        if not is_valid(r):
            continue
        metric: dict[str, float] = {"value": r.median_s * _NS}
        if r.ci_low_s is not None and r.ci_high_s is not None:
            metric["lower_value"] = r.ci_low_s * _NS
            metric["upper_value"] = r.ci_high_s * _NS
        out[benchmark_name(r)] = {"latency": metric}
    return out


def export_text(results: "Results", fmt: str) -> str:
    """The results in ``fmt`` (one of ``FORMATS``) as JSON text."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    data: Any = github_action_benchmark(results) if fmt == "github" else bencher_metric_format(results)
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _plain(value: Any) -> Any:
    """JSON has no NaN or infinity: they are null, as a missing value is."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def comparison_json(comparison: Comparison, *, failures: list[str] | None = None) -> str:
    """The comparison: its counts, geometric mean, every cell's row and (with a gate) why it fails."""
    g = comparison.geometric_mean
    doc = {"summary": comparison.summary(), "counts": comparison.counts(),
           "geometric_mean": _plain(g), "change": format_change(g) if g is not None else None,
           "threshold": comparison.threshold, "alpha": comparison.alpha,
           "cells": [{k: _plain(v) for k, v in row.items()} for row in comparison.rows()]}
    if failures is not None:
        doc["gate"] = {"passed": not failures, "failures": failures}
    return json.dumps(doc, allow_nan=False)


def history_json(found: History, *, regressions: list[str] | None = None) -> str:
    """The history: every series with its points (oldest first), and the steps called."""
    series = [{"machine_id": s.machine_id, "machine": s.machine, "cell": s.cell, "label": s.label,
               "workload": s.workload, "size_label": s.size_label, "size": s.size,
               "points": [{"run_id": p.run.run_id, "started_at": p.run.started_at,
                           "status": p.entry.status, "median_s": _plain(p.entry.median_s),
                           "ci_low_s": _plain(p.entry.ci_low_s), "ci_high_s": _plain(p.entry.ci_high_s),
                           "processes": p.processes, "context": p.run.context} for p in s.points]}
              for s in found.series]
    steps = [{"cell": st.series.cell, "machine_id": st.series.machine_id, "label": st.series.label,
              "before_run": st.before.run.run_id, "after_run": st.after.run.run_id,
              "ratio": _plain(st.ratio), "change": format_change(st.ratio), "p_value": _plain(st.p_value),
              "causes": list(st.causes)} for st in found.steps]
    doc: dict[str, Any] = {"threshold": found.threshold, "alpha": found.fdr, "series": series, "steps": steps}
    if regressions is not None:
        doc["gate"] = {"passed": not regressions, "failures": regressions}
    return json.dumps(doc, allow_nan=False)


MANIFEST_NAME = ".arraybench-files"
#: The kinds of file a manifest may name.
LISTED_SUFFIXES = (".svg", ".png")


def manifest(out: Path) -> list[str]:
    """The names the manifest in ``out`` lists, each a plot's plain name in ``out`` itself (a
    name that is not one is ignored: the manifest is the user's file too)."""
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


def summary_file_name(size_label: str) -> str:
    """The summary SVG of one size label: ``summary_large.svg``."""
    return f"summary_{safe(size_label)}.svg"


def sweep_file_name(workload: str) -> str:
    """The sweep SVG of one workload: ``sweep_matmul.svg``."""
    return f"sweep_{safe(workload)}.svg"


def safe(text: str) -> str:
    """``text`` as a file-name part: letters, digits, ``-_.`` kept, anything else ``_``."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:MAX_STEM]


def history_file_name(workload: str) -> str:
    """The history SVG of one workload: ``history_matmul.svg``."""
    return f"history_{safe(workload)}.svg"
