"""A comparison of two runs in the terminal: the table, then what differs, what only one run has
and what both skipped, then the summary."""

from __future__ import annotations

from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..analysis.compare import CANNOT_TELL, FASTER, SLOWER, Comparison, change_text
from ..units import format_seconds


def print_comparison(comparison: Comparison, console: Console,
                     across: Sequence[tuple[str, str]] = ()) -> None:
    """Everything ``arraybench compare`` prints; ``across`` names the machines of a cross-machine
    comparison (base, new), which is said first."""
    for a, b in across:
        console.print(f"[bold yellow]across machines (--cross-machine):[/] base on {escape(a)}, "
                      f"new on {escape(b)}: differences are the machines' as much as the code's")
    console.print(comparison_table(comparison))
    for what, a, b in comparison.environment_differences:
        console.print(f"[yellow]differs:[/] {escape(what)}: {escape(a)} → {escape(b)}")
    for side, recs in (("base", comparison.only_base), ("new", comparison.only_new)):
        for r in recs:
            console.print(f"[yellow]only in {side}:[/] {escape(r.workload)} {escape(r.size_label)} "
                          f"{escape(r.config_label)} ({r.status})")
    for text in skipped_lines(comparison):
        console.print(f"[dim]{escape(text)}[/]")
    console.print(escape(comparison.summary()))


def skipped_lines(comparison: Comparison) -> list[str]:
    """Cells skipped in both runs, one line per library/device and reason."""
    groups: dict[tuple[str, str], int] = {}
    for c in comparison.skipped_in_both:
        key = (c.new.config_label, c.new.reason or c.base.reason)
        groups[key] = groups.get(key, 0) + 1
    return [f"skipped in both runs: {label} ({n} cell{'s' if n != 1 else ''}): {reason}"
            for (label, reason), n in groups.items()]


def comparison_table(comparison: Comparison) -> Table:
    """The comparison as a rich table, slower in red and faster in green."""
    table = Table(title="arraybench compare: time per call, new vs base", header_style="bold",
                  title_justify="left", pad_edge=False)
    for name, numeric in (("case", False), ("library / device", False), ("base", True), ("new", True),
                          ("new/base", True), ("change", True), ("p", True), ("q (BH)", True),
                          ("verdict", False)):
        if numeric:
            table.add_column(name, justify="right", no_wrap=True)
        else:
            table.add_column(name, overflow="fold")
    style = {FASTER: "green", SLOWER: "bold red", CANNOT_TELL: "yellow"}
    for c in comparison.shown:
        r = c.new
        verdict = c.verdict + (f" ({c.note})" if c.note else "")
        table.add_row(
            f"{r.workload} {r.size_label}", r.config_label,
            format_seconds(c.base.median_s), format_seconds(r.median_s),
            "—" if c.ratio is None else f"{c.ratio:.3f}",
            "—" if c.ratio is None else change_text(c.ratio),
            "—" if c.p_value is None else f"{c.p_value:.2g}",
            "—" if c.q_value is None else f"{c.q_value:.2g}",
            verdict, style=style.get(c.verdict),
        )
    return table
