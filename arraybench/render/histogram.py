"""A cell's samples as a histogram, each process in its own mark: text bins for the terminal
(``arraybench show --histogram``) and small stacked bars for a cell of the HTML report.

The bins are ``analysis.histogram``'s; this module only draws them. In the terminal each process
is a character of its own (``1``, ``2``, … then ``a``, ``b``, …), so the processes stay apart
without colour (a pipe, a CI log); a terminal colours them too.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from rich.console import Console
from rich.text import Text

from ..analysis.grouping import grouped, is_valid, size_text
from ..analysis.histogram import Histogram, record_histogram
from ..model.record import Record
from ..units import format_seconds, time_unit
from .terminal import plain

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

