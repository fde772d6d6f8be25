"""A run's tables in the terminal and the notebook: the results table with its findings, and a
cell's samples as a histogram.

The results table in the terminal (rich), coloured by winner, with its notes said once.

The table fits the terminal: numbers never wrap, names wrap between words (never inside one), and
when the columns still do not fit, the least needed ones go (``_COLUMNS``' ``drop`` order: of peak,
first call, rel. error, device time, 95% CI, vs NumPy), with a line under the table that says which
and how wide a terminal shows them all. The notes are built in ``notes`` for every format.

A cell's samples as a histogram, each process in its own mark: text bins for the terminal
(``arraybench show --histogram``) and small stacked bars for a cell of the HTML report.

The bins are ``analysis.modes``'s; this module only draws them. In the terminal each process
is a character of its own (``1``, ``2``, … then ``a``, ``b``, …), so the processes stay apart
without colour (a pipe, a CI log); a terminal colours them too.
"""

from __future__ import annotations

import io
import math
from typing import Iterable, Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from .notes import RANGES_LEGEND, NoteBook, Row, everywhere_mark, note_texts
from .terminal import (Column, Row as TableRow, build_table, fitted_table, measure, console as safe_console,
                       plain)
from ..analysis.grouping import (baselines, comparison, decided_winner, grouped, is_valid, library_label,
                                 size_detail, size_text)
from ..analysis.modes import Histogram, record_histogram
from ..analysis.roofline import achieved
from ..analysis.roofline import ceilings, share
from ..errors import printable
from ..model.cell import config_label
from ..model.pair import Pairs
from ..model.record import Record
from ..units import (format_interval, format_peak, format_rate, format_seconds, format_share, format_speedup,
                     time_unit)


_STATUS_STYLE = {"ok": "green", "wrong": "bold red", "failed": "red", "skipped": "dim"}

#: What the interval column holds, said under every table that has one.
CI_LEGEND = ("95% CI: ± half the width of the median's 95% confidence interval, as a share of the "
             "median (the same measure as the ±2% target)")


def ci_text(r: Record) -> str:
    """The 95% CI of the median as ± a share of the median (``±1.2%``; see ``CI_LEGEND``)."""
    return format_interval(r.ci_low_s, r.median_s, r.ci_high_s)


def speedup(r: Record, base: Record | None) -> float | None:
    """How many times faster than NumPy on the CPU (below 1: slower)."""
    if base is None or not is_valid(r):
        return None
    return base.median_s / r.median_s


def speedup_text(r: Record, base: Record | None, pairs: Pairs = Pairs()) -> str:
    """Against NumPy, with the verdict of their pair (one of the run's ``pairs``): ``3.8× faster``,
    ``16× slower``, ``level``, ``undecided``, ``baseline``, ``—``. A ratio is said faster or slower
    only where the verdict is; otherwise the word says what the run could tell."""
    if base is None or not is_valid(r) or not is_valid(base):
        return "—"
    if r is base:
        return "baseline"
    said, ratio = comparison(r, base, pairs)
    if said == "level":
        return "level (±5%)"
    if said == "undecided":
        return "undecided"
    return format_speedup(ratio)  # the verdict is "faster" or "slower": the ratio says which


def achieved_text(r: Record) -> str:
    """``"12.3 GFLOP/s · 1.2 GB/s"``, or ``"—"``."""
    flops, moved = achieved(r)
    parts = []
    if flops is not None:
        parts.append(format_rate(flops, "FLOP/s"))
    if moved is not None:
        parts.append(format_rate(moved, "B/s"))
    return " · ".join(parts) or "—"


def error_text(r: Record) -> str:
    return "—" if r.max_rel_error is None else f"{r.max_rel_error:.1e}"


def row_notes(r: Record) -> list[str]:
    """What a row's notes say: why it is not ``ok``, or its warnings."""
    return [r.reason] if r.status != "ok" and r.reason else list(r.warnings)


def case_lines(workload: str, group: list[Record]) -> list[str]:
    """The case column of a group of rows, one line per row: the workload, its size label, then
    ``n = …`` and the settings; a group shorter than that holds the rest in its last row."""
    first = group[0]
    lines = [workload, first.size_label, size_detail(first)] if first.size_label != str(first.size) \
        else [workload, size_text(first)]
    lines = [line for line in lines if line]
    out = lines[:len(group) - 1] + ["\n".join(lines[len(group) - 1:])]
    return out + [""] * (len(group) - len(out))


def notebook(groups: dict[tuple[str, str], list[Record]], *,
             workload: bool = True) -> tuple[NoteBook, list[Row]]:
    """The notes of a table's rows (each row keyed by its record's key), and every row. A table
    of one workload names its cases by size alone (``workload=False``)."""
    book = NoteBook()
    rows = []
    for (name, label), group in groups.items():
        for r in group:
            row = Row(f"{name} {label}" if workload else label, r.config_label)
            rows.append(row)
            book.add(r.key, row, row_notes(r), measured=r.status == "ok")
    return book, rows


#: The results table's columns: higher ``drop`` goes first when the table does not fit; 0 never goes.
_COLUMNS = (Column("case"), Column("library / device"), Column("machine"),
            Column("median", True), Column("device", True, 4), Column("95% CI", True, 3),
            Column("vs NumPy", True, 2), Column("first call", True, 6), Column("rel. error", True, 5),
            Column("of peak", True, 7), Column("peak mem", True, 8), Column("status"))


def results_table(records: Iterable[Record], width: int | None = None, pairs: Pairs = Pairs()) -> Group:
    """One row per record, grouped by workload and size; the winner of each group (by the run's
    ``pairs``) in bold green.

    ``width``: the columns to fit in (the least needed go first, and a line says which); ``None``
    keeps every column.
    """
    records = list(records)
    roof = ceilings(records)
    unavailable = unavailable_configs(records)
    shown = [r for r in records if (r.backend, r.device, r.environment) not in unavailable]
    groups = grouped(shown)
    book, every = notebook(groups)
    present = {"machine": any(r.machine for r in records),  # results of several machines
               "device": any(r.device_median_s is not None for r in records),  # CUDA events
               "of peak": bool(roof),  # ceilings measured (--roofline)
               "peak mem": any(r.peak_bytes is not None for r in records)}
    columns = [c for c in _COLUMNS if present.get(c.name, True)]

    rows: list[TableRow] = []
    for n, ((workload, _label), group) in enumerate(groups.items()):
        best = decided_winner(group, pairs)
        bases = baselines(group)
        contenders = sum(1 for g in group if is_valid(g))
        cases = case_lines(workload, group)
        for i, r in enumerate(group):
            status = Text(r.status, style=_STATUS_STYLE.get(r.status, ""))
            refs = book.refs(r.key)
            if refs:
                status.append(f" [{','.join(map(str, refs))}]", style="" if r.status != "ok" else "yellow")
            # A wrong or failed row shows no time, as README promises: it measured nothing worth one.
            timed = is_valid(r) or r.status == "skipped"
            cells = {"case": plain(cases[i]),  # names from a results file: shown, never read as markup
                     "library / device": plain(library_label(r) if present["machine"] else r.config_label),
                     "machine": plain(r.machine), "median": format_seconds(r.median_s) if timed else "—",
                     "device": format_seconds(r.device_median_s) if timed else "—",
                     "95% CI": ci_text(r) if timed else "—",
                     "vs NumPy": speedup_text(r, bases.get(r.machine), pairs), "first call": format_seconds(r.first_call_s),
                     "rel. error": error_text(r), "of peak": format_share(share(r, roof)),
                     "peak mem": format_peak(r.peak_bytes), "status": status}
            rows.append(TableRow([cells[c.name] for c in columns],
                                 "bold green" if (r is best and contenders > 1) else None,
                                 i == len(group) - 1 and n < len(groups) - 1))

    title = "arraybench: time per call (median; lower is better)"
    # It fits where the narrowest it goes, names wrapped between words (never inside one), does.
    table, dropped = fitted_table(title, columns, rows, width, fits=lambda t, w: measure(t).minimum <= w)
    footer: list[RenderableType] = []
    if dropped:
        full = measure(build_table(title, columns, rows, range(len(columns)))).maximum  # nothing wraps
        footer.append(Text(f"Hidden to fit {width} columns: {', '.join(dropped)}. A terminal {full} columns "
                           f"wide shows them (or COLUMNS={full}), as do results.md and report.html.",
                           style="dim"))
    if any(c.name == "95% CI" and c.name not in dropped for c in columns):
        footer.append(Text(CI_LEGEND + ".", style="dim"))
    if len(book):
        notes = notes_grid(book, every)
        if book.ranged:
            footer.append(Text(RANGES_LEGEND + ".", style="dim"))
        footer.append(notes)
    for reason, labels in not_run(unavailable).items():
        footer.append(Text(f"not run: {', '.join(labels)}: {printable(reason)}", style="dim"))
    return Group(table, *footer)


def not_run(unavailable: dict[tuple[str, str, str], str]) -> dict[str, list[str]]:
    """The configurations unavailable here, by reason: ``no GPU: PyTorch GPU, JAX GPU`` said once."""
    out: dict[str, list[str]] = {}
    for (backend, device, environment), reason in unavailable.items():
        out.setdefault(reason, []).append(config_label(backend, device, environment=environment))
    return out


def notes_grid(book: NoteBook, every: list[Row]) -> Group:
    """The notes under the table: those of every row first, under one line that says so, then the
    numbered ones; each wrapped under its own mark."""
    texts = note_texts(book, every, brief=True)  # the terminal: each pattern once
    parts: list[RenderableType] = []
    for everywhere in (True, False):
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True, style="dim")
        grid.add_column(style="dim", overflow="fold")
        for note in texts:
            if (note.number is None) != everywhere:
                continue
            grid.add_row("•" if everywhere else f"[{note.number}]", Text(printable(note.text)))
            for sub in note.subs:
                grid.add_row("", Text("· " + printable(sub)))
        if grid.row_count:
            if everywhere:
                parts.append(Text(everywhere_mark(book).capitalize(), style="dim"))
            parts.append(grid)
    return Group(*parts)


def unavailable_configs(records: Iterable[Record]) -> dict[tuple[str, str, str], str]:
    """Library/device/environment configurations skipped in every cell for one reason:
    unavailable here, said once."""
    by_config: dict[tuple[str, str, str], list[Record]] = {}
    for r in records:
        by_config.setdefault((r.backend, r.device, r.environment), []).append(r)
    out = {}
    for config, recs in by_config.items():
        reasons = {r.reason for r in recs}
        if all(r.status == "skipped" for r in recs) and len(reasons) == 1:
            out[config] = reasons.pop()
    return out


def print_table(records: Iterable[Record], console: Console | None = None, pairs: Pairs = Pairs()) -> None:
    """Print the table, fitted to the console's width (120 columns for a file or a pipe, unless
    $COLUMNS says otherwise: ``terminal.widened``)."""
    from .terminal import widened

    console = widened(console or safe_console())
    console.print(results_table(records, width=console.width, pairs=pairs))


#: The most lines of findings a terminal gets (as hyperfine's whole answer): the first findings
#: say who wins and why; the rest are in findings.md and ``arraybench report --verbose``.
FINDINGS_LINES = 12


def print_findings(findings: Iterable[str], console: Console, *, limit: int | None = FINDINGS_LINES) -> None:
    """The findings under the table, one plain sentence each (no markup read from them), in at
    most ``limit`` lines at the console's width (None: all of them), then where the rest are."""
    import textwrap

    found = list(findings)
    if not found:
        return
    console.print("\n[bold]Findings[/]")
    used = 0
    for n, f in enumerate(found):
        lines = len(textwrap.wrap(f"- {f}", width=max(console.width, 20), break_long_words=False)) or 1
        if limit is not None and used + lines > limit - (1 if n < len(found) - 1 else 0):
            rest = len(found) - n
            console.print(f"… {rest} more in findings.md (all: arraybench report RUN --verbose)",
                          style="dim", markup=False, highlight=False)
            return
        console.print(f"- {f}", markup=False, highlight=False)
        used += lines


def table_text(records: Iterable[Record], width: int = 120, pairs: Pairs = Pairs()) -> str:
    """The table as plain text (no colour), fitted to ``width`` characters."""
    console = safe_console(width=width, color_system=None, record=True, file=io.StringIO(), force_jupyter=False)
    console.print(results_table(records, width=width, pairs=pairs))
    return console.export_text().rstrip("\n")


#: A character per process, in the record's order; past these, every further process is ``*``.
MARKS = "123456789abcdefghijklmnopqrstuvwxyz"
_STYLES = ("cyan", "magenta", "yellow", "green", "blue", "red")
#: The report's colours per process (matplotlib's tab10, as the plots), with their names for the
#: tooltip that says which is which.
PALETTE = (("#1f77b4", "blue"), ("#ff7f0e", "orange"), ("#2ca02c", "green"), ("#d62728", "red"),
           ("#9467bd", "purple"), ("#8c564b", "brown"), ("#e377c2", "pink"), ("#7f7f7f", "grey"),
           ("#bcbd22", "olive"), ("#17becf", "cyan"))
#: The least room the bars get, whatever the terminal's width.
MIN_BAR = 10


def mark(process: int) -> str:
    """The character that stands for process ``process`` (0-based) in a text histogram."""
    return MARKS[process] if process < len(MARKS) else "*"


def edge_texts(hist: Histogram) -> tuple[list[str], str]:
    """The bins' lower edges as numbers in one unit, with as many decimals as tell two adjacent
    edges apart; and the unit."""
    scale, unit = time_unit(max(hist.edges))
    width = (hist.edges[-1] - hist.edges[0]) / hist.bins / scale
    decimals = 3 if width <= 0 else max(0, min(6, 1 - math.floor(math.log10(width))))
    return [f"{e / scale:.{decimals}f}" for e in hist.edges], unit


def histogram_lines(record: Record, hist: Histogram, width: int) -> list[Text]:
    """One cell's histogram as lines at most ``width`` wide: a heading, a line per bin (its range,
    its samples, a bar made of each process's mark), and each process's samples and median."""
    edges, unit = edge_texts(hist)
    totals = hist.totals
    label_width = max(len(e) for e in edges)
    count_width = len(str(max(totals)))
    head = (f"{record.workload} {size_text(record)} · {record.config_label}: {hist.samples} samples "
            f"from {hist.processes} process{'es' if hist.processes != 1 else ''}")
    lines = [plain(head)]
    prefix = 2 * label_width + len(unit) + count_width + 9  # "  LO – HI UNIT  N "
    room = max(MIN_BAR, width - prefix)
    per_sample = min(1.0, room / max(totals)) if max(totals) else 1.0
    for i, total in enumerate(totals):
        line = Text(f"  {edges[i]:>{label_width}} – {edges[i + 1]:>{label_width}} {unit}  {total:>{count_width}} ")
        done = 0
        for p, counts in enumerate(hist.counts):
            # Ends rounded from the running total, so the bar's length is the bin's total, scaled.
            end = round((done + counts[i]) * per_sample)
            start = round(done * per_sample)
            line.append(mark(p) * (end - start), style=_STYLES[p % len(_STYLES)])
            done += counts[i]
        line.rstrip()  # an empty bin ends at its count: no trailing space in a log
        lines.append(line)
    for p, counts in enumerate(hist.counts):
        lines.append(Text.assemble("  ", (mark(p), _STYLES[p % len(_STYLES)]),
                                   f" = process {p + 1}: {sum(counts)} samples, median "
                                   f"{format_seconds(hist.medians[p], 4)}"))
    if per_sample < 1:
        lines.append(plain(f"  (a mark is {1 / per_sample:.3g} samples)"))
    return lines


def print_histograms(records: Iterable[Record], console: Console) -> int:
    """Print the histogram of every measured cell among ``records``, cases in the table's order;
    return how many were printed."""
    shown = 0
    for _case, group in grouped(r for r in records if is_valid(r)).items():
        for r in group:
            hist = record_histogram(r)
            if hist is None:
                continue
            if shown:
                console.print()
            for line in histogram_lines(r, hist, console.width):
                console.print(line, soft_wrap=True, highlight=False)
            shown += 1
    return shown


def histogram_cell(record: Record, bins: int | None = 12) -> dict[str, Any] | None:
    """A record's histogram as the report draws it in its samples cell: per bin, each process's
    share of the tallest bin's height and its colour; and a sentence saying what is drawn
    (shown on hover and read by a screen reader). None for a cell without a time to show."""
    hist = record_histogram(record, bins) if is_valid(record) else None
    if hist is None:
        return None
    tallest = max(hist.totals)
    columns: list[list[dict[str, str]]] = []
    for i in range(hist.bins):
        columns.append([{"h": f"{100 * c[i] / tallest:.1f}", "c": PALETTE[p % len(PALETTE)][0]}
                        for p, c in enumerate(hist.counts) if c[i]])
    who = ", ".join(f"process {p + 1} {PALETTE[p % len(PALETTE)][1]} (median {format_seconds(m)})"
                    for p, m in enumerate(hist.medians))
    title = (f"{hist.samples} samples from {format_seconds(hist.edges[0])} to "
             f"{format_seconds(hist.edges[-1])} in {hist.bins} bins: {who}")
    return {"bins": columns, "title": title}
