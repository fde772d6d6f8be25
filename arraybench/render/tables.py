"""The terminal's tables: the results table and its findings, histograms and the workloads catalog;
and a record's peak memory and energy in words, for every format.

The results table fits its width: numbers never wrap, names wrap between words, and the least needed
columns go (a line says which). A histogram marks each process with a character of its own.
"""

from __future__ import annotations

import io
import math
import textwrap
from typing import Any, Iterable, Mapping, Sequence

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .notes import (RANGES_LEGEND, ci_legend, NoteBook, case_lines, ci_text, error_text, everywhere_mark,
                    note_texts, notebook, speedup_text, unavailable)
from .terminal import (Column, Row as TableRow, build_table, fitted_table, measure, console as safe_console,
                       plain)
from ..analysis.grouping import baselines, decided_winner, grouped, is_valid, library_label, size_text
from ..analysis.aggregate import Histogram, record_histogram
from ..analysis.memory import FLOOR_BYTES, MemoryGap, allocator_reserve, times_output
from ..analysis.roofline import ceilings, share
from ..errors import printable
from ..model.results import Pairs
from ..model.record import Record
from ..units import (PAGE_BYTES, format_peak, format_rate, format_ratio, format_seconds, format_share, format_size,
                     time_unit)
from ..workloads import GROUPS


#: What a record written before peak memory or energy was measured says in place of its own reason.
_NOT_MEASURED = "{} not measured (results written before arraybench measured it)"


def peak_text(r: Record) -> str:
    """The peak memory per call ("24 MB"), or "—" where there is none."""
    return format_peak(r.peak_bytes) if is_valid(r) and r.peak_bytes is not None else "—"


def peak_sub(r: Record) -> list[str]:
    """What goes under a peak: "2.1× the output", the caching allocator's reserve, or why none."""
    if not is_valid(r):
        return []
    if r.peak_bytes is None:
        return [r.peak_note or _NOT_MEASURED.format("peak memory")]
    return peak_details(r)


def peak_details(r: Record) -> list[str]:
    """What to read beside a peak: "2.1× the output", "64 MB reserved by the caching allocator"."""
    out = []
    multiple = times_output(r)
    if multiple is not None and (r.peak_bytes or 0) >= PAGE_BYTES:
        out.append(f"{format_ratio(multiple)} the output")
    reserve = allocator_reserve(r)
    if reserve is not None:
        out.append(f"{format_size(reserve)} reserved by the caching allocator")
    return out


def gap_sentence(gap: MemoryGap) -> str:
    """"JAX CPU needs 2.0× the memory of PyTorch CPU for fft large (n = ...): 48 MB against 24 MB"."""
    more, less = gap.more, gap.less
    where = f"{more.workload} {size_text(more)}" + (f" on {more.machine}" if more.machine else "")
    if (less.peak_bytes or 0) < FLOOR_BYTES:
        text = (f"{library_label(more)} needs {format_size(more.peak_bytes)} per call for {where}, "
                f"{library_label(less)} under {format_size(FLOOR_BYTES)}")
    else:
        text = (f"{library_label(more)} needs {format_ratio(gap.ratio)} the memory of "
                f"{library_label(less)} for {where}: {format_size(more.peak_bytes)} against "
                f"{format_size(less.peak_bytes)}")
    said = [f"{library_label(r)}'s peak is {'; '.join(peak_details(r))}" for r in (more, less) if peak_details(r)]
    return text + (f" ({'; '.join(said)})" if said else "") + "."


def format_energy(joules: float | None) -> str:
    """Joules in three figures and a fitting unit: ``0.0123`` -> ``"12.3 mJ"``; None -> "—"."""
    if joules is None:
        return "—"
    scale, unit = next(((s, u) for s, u in ((1.0, "J"), (1e-3, "mJ")) if joules >= s * 0.9995), (1e-6, "µJ"))
    return f"{joules / scale:.3g} {unit}"


def energy_why(r: Record) -> str:
    """Why a record has no energy figure (its own words), or "" where it has one."""
    return "" if r.energy_j is not None else (r.energy_note or _NOT_MEASURED.format("energy"))


def energy_measured(records: Iterable[Record]) -> bool:
    """Whether any valid record has an energy figure (a column is worth its room)."""
    return any(is_valid(r) and r.energy_j is not None for r in records)


def energy_absent(records: Iterable[Record]) -> list[str]:
    """Where no column shows energy: one line per reason, naming the configurations it holds for."""
    why: dict[str, dict[str, None]] = {}  # each reason's labels, in order, once
    for r in records:
        if is_valid(r) and r.energy_j is None:
            why.setdefault(energy_why(r), {})[r.config_label] = None
    return [f"Energy per call not measured for {', '.join(labels)}: {reason}" for reason, labels in why.items()]


_STATUS_STYLE = {"ok": "green", "wrong": "bold red", "failed": "red", "skipped": "dim"}


#: The results table's columns: higher ``drop`` goes first when the table does not fit; 0 never goes.
_COLUMNS = (Column("case"), Column("library / device"), Column("machine"),
            Column("median", True), Column("device", True, 4), Column("95% CI", True, 3),
            Column("vs NumPy", True, 2), Column("first call", True, 6), Column("rel. error", True, 5),
            Column("of peak", True, 7), Column("peak mem", True, 8), Column("status"))


def results_table(records: Iterable[Record], width: int | None = None, pairs: Pairs = Pairs(),
                  target: float | None = None) -> Group:
    """One row per record, grouped by case, the winner in bold green; fitted to ``width`` (None: every
    column); ``target``: the run's interval target, which the legend names."""
    records = list(records)
    roof = ceilings(records)
    not_run, shown = unavailable(records)
    groups = grouped(shown)
    book = notebook(groups)
    present = {"machine": any(r.machine for r in records),  # results of several machines
               "device": any(r.device_median_s is not None for r in records),  # CUDA events
               "of peak": bool(roof),  # ceilings measured (--roofline)
               "peak mem": any(r.peak_bytes is not None for r in records)}
    columns = [c for c in _COLUMNS if present.get(c.name, True)]

    rows: list[TableRow] = []
    for n, ((workload, _label), group) in enumerate(groups.items()):
        best = decided_winner(group, pairs) if sum(1 for g in group if is_valid(g)) > 1 else None
        bases = baselines(group)
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
                                 "bold green" if r is best else None,
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
        footer.append(Text(ci_legend(target) + ".", style="dim"))
    if book.notes:
        if book.ranged:
            footer.append(Text(RANGES_LEGEND + ".", style="dim"))
        footer.append(notes_grid(book))
    for reason, labels in not_run.items():
        footer.append(Text(f"not run: {', '.join(labels)}: {printable(reason)}", style="dim"))
    return Group(table, *footer)


def notes_grid(book: NoteBook) -> Group:
    """The notes under the table: those of every row first, then the numbered ones."""
    texts = note_texts(book, brief=True)  # the terminal: each pattern once
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


#: The most lines of findings a terminal gets; the rest are in findings.md and ``report --verbose``.
FINDINGS_LINES = 12


def print_findings(findings: Iterable[str], console: Console, *, limit: int | None = FINDINGS_LINES) -> None:
    """The findings, a plain sentence each, in at most ``limit`` lines (None: all), then where the rest are."""
    found = list(findings)
    if not found:
        return
    console.print("\n[bold]Findings[/]")
    used = 0
    for n, f in enumerate(found):
        lines = len(textwrap.wrap(f, width=max(console.width - 2, 18), break_long_words=False)) or 1
        if limit is not None and used + lines > limit - (1 if n < len(found) - 1 else 0):
            rest = len(found) - n
            console.print(f"… {rest} more in findings.md (all: arraybench report RUN --verbose)",
                          style="dim", markup=False, highlight=False)
            return
        bullet = Table.grid()  # a wrapped finding's lines hang under its first word, not the dash
        bullet.add_column(width=2, no_wrap=True)
        bullet.add_column()
        bullet.add_row("-", plain(f))
        console.print(bullet)
        used += lines


def table_text(records: Iterable[Record], width: int = 120, pairs: Pairs = Pairs(),
               target: float | None = None) -> str:
    """The table as plain text (no colour), fitted to ``width`` characters."""
    console = safe_console(width=width, color_system=None, record=True, file=io.StringIO(), force_jupyter=False)
    console.print(results_table(records, width=width, pairs=pairs, target=target))
    return console.export_text().rstrip("\n")


#: A character per process, in the record's order; past these, every further process is ``*``.
MARKS = "123456789abcdefghijklmnopqrstuvwxyz"
_STYLES = ("cyan", "magenta", "yellow", "green", "blue", "red")
#: The report's colours per process (matplotlib's tab10, as the plots), named for the tooltip.
PALETTE = (("#1f77b4", "blue"), ("#ff7f0e", "orange"), ("#2ca02c", "green"), ("#d62728", "red"),
           ("#9467bd", "purple"), ("#8c564b", "brown"), ("#e377c2", "pink"), ("#7f7f7f", "grey"),
           ("#bcbd22", "olive"), ("#17becf", "cyan"))
#: The least room the bars get, whatever the terminal's width.
MIN_BAR = 10


def mark(process: int) -> str:
    """The character that stands for process ``process`` (0-based) in a text histogram."""
    return MARKS[process] if process < len(MARKS) else "*"


def histogram_lines(record: Record, hist: Histogram, width: int) -> list[Text]:
    """One cell's histogram as lines at most ``width`` wide: a line per bin, then each process's median."""
    # The bins' edges in one unit, with as many decimals as tell two adjacent edges apart.
    scale, unit = time_unit(max(hist.edges))
    step = (hist.edges[-1] - hist.edges[0]) / hist.bins / scale
    decimals = 3 if step <= 0 else max(0, min(6, 1 - math.floor(math.log10(step))))
    edges = [f"{e / scale:.{decimals}f}" for e in hist.edges]
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
    lines += [Text.assemble("  ", (mark(p), _STYLES[p % len(_STYLES)]), f" = process {p + 1}: {sum(counts)} "
                            f"samples, median {format_seconds(hist.medians[p], 4)}")
              for p, counts in enumerate(hist.counts)]
    if per_sample < 1:
        lines.append(plain(f"  (a mark is {1 / per_sample:.3g} samples)"))
    return lines


def print_histograms(records: Iterable[Record], console: Console) -> int:
    """Print the histogram of every measured cell, in the table's order; return how many were printed."""
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
    """The report's histogram of a record (per bin, each process's share and colour) and its title, or None."""
    hist = record_histogram(record, bins) if is_valid(record) else None
    if hist is None:
        return None
    tallest = max(hist.totals)
    columns = [[{"h": f"{100 * c[i] / tallest:.1f}", "c": PALETTE[p % len(PALETTE)][0]}
                for p, c in enumerate(hist.counts) if c[i]] for i in range(hist.bins)]
    who = ", ".join(f"process {p + 1} {PALETTE[p % len(PALETTE)][1]} (median {format_seconds(m)})"
                    for p, m in enumerate(hist.medians))
    title = (f"{hist.samples} samples from {format_seconds(hist.edges[0])} to "
             f"{format_seconds(hist.edges[-1])} in {hist.bins} bins: {who}")
    return {"bins": columns, "title": title}


#: Narrower than this, ``list`` leaves out the work per call.
NARROW = 100


def print_catalog(entries: Sequence[Mapping[str, Any]], console: Console) -> None:
    """The table of workloads (the entries of ``commands.info.catalog``), then the groups."""
    table = Table(title="workloads", header_style="bold", title_justify="left", pad_edge=False)
    # Each column has a share of the width at most, so that one long workload wraps its own cell
    # instead of squeezing the others to nothing.
    names = [printable(e["name"]) for e in entries]
    # Under 100 columns the work per call goes (a line says so): five columns do not fit in 80.
    with_work = console.width >= NARROW
    room = max(console.width - (14 if with_work else 11), 40)  # less the borders and the padding
    # A name whole on one line where it can be (it is what --workloads takes), then the others.
    name_width = min(max(map(len, names), default=4), room * 2 // 5)
    table.add_column("name", style="bold", overflow="fold", min_width=name_width, max_width=name_width)
    room -= name_width
    shares = ((("what it measures", 0.35, 8), ("sizes (n)", 0.25, 8), ("work per call (float64)", 0.2, 8),
               ("checked as", 0.15, 11)) if with_work else
              (("what it measures", 0.45, 8), ("sizes (n)", 0.3, 8), ("checked as", 0.2, 11)))
    for name, share, least in shares:
        table.add_column(name, max_width=max(int(room * share), least))
    for e in entries:
        # A size's settings go on the lines under it, indented, each without spaces (``tsteps=20``)
        # so that lines break between settings.
        sizes = "\n".join(f"{k} {v:,}" + ("\n  " + ", ".join(f"{p}={x!r}" for p, x in e["params"][k].items())
                                          if k in e["params"] else "") for k, v in e["sizes"].items())
        work = "\n".join(
            f"{k}: {format_rate(w['flops'], 'FLOP')}, {format_rate(w['bytes'], 'B')}"
            for k, w in e["work_float64"].items()) or "—"
        check = e["check"] + (" (gradient)" if e["gradient"] else "")
        if e["mutates"]:
            check += f"\nin place: {', '.join(printable(m) for m in e['mutates'])}"
        # A workload file is anyone's text: its escape sequences must not reach the terminal.
        description = escape(printable(e["description"])) + (
            "" if e["source"] == "builtin" else f"\n[dim]{escape(printable(e['source']))}[/]")
        table.add_row(escape(printable(e["name"])), description, sizes, *([work] if with_work else []), check)
    console.print(table)
    if not with_work:
        console.print(f"[dim]The work per call (FLOP and bytes) shows at {NARROW} columns or wider, "
                      "and in arraybench list --json.[/]")
    groups = "; ".join(f"{g} = {', '.join(ws)}" for g, ws in GROUPS.items())
    console.print(f"[dim]Groups for --workloads: {groups}[/]")
    console.print("[dim]Run some: arraybench run --workloads NAME,NAME --sizes small  "
                  "(sizes: labels, element counts, or LO:HI[:STEPS])[/]")
