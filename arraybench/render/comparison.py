"""A comparison of two runs for people: in the terminal the table, then what differs, what only
one run has and what both skipped, then the summary; in a notebook the same as an HTML table
(``DisplayedComparison``, what ``Results.compare`` and ``arraybench.compare`` return)."""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass, fields
from typing import Sequence

from jinja2 import Environment, PackageLoader, StrictUndefined
from rich.console import Console, Group
from rich.markup import escape

from ..analysis.compare import CANNOT_TELL, FASTER, SLOWER, Comparison
from ..analysis.memory import memory_changes
from ..units import format_change, format_seconds
from .fit import Column, Row, fitted_table, hidden_line
from .terminal import console as safe_console, plain

_TEMPLATES = Environment(loader=PackageLoader("arraybench.render", "templates"), autoescape=True,
                         undefined=StrictUndefined)
_COLOURS = {FASTER: "#2a7d2a", SLOWER: "#c0392b", CANNOT_TELL: "#a06a00"}


@dataclass(repr=False)
class DisplayedComparison(Comparison):
    """A ``Comparison`` that shows itself: a table in a notebook (``_repr_html_``), the terminal's
    table as text (``table()``, ``str()``), one line as its ``repr``, and ``to_dataframe()``.

    >>> c = new.compare(base)        # doctest: +SKIP
    >>> c                            # doctest: +SKIP
    """

    @classmethod
    def of(cls, comparison: Comparison) -> "DisplayedComparison":
        return cls(**{f.name: getattr(comparison, f.name) for f in fields(Comparison)})

    def table(self, width: int = 120) -> str:
        """Everything ``arraybench compare`` prints, as plain text ``width`` characters wide."""
        console = safe_console(width=width, color_system=None, record=True, file=io.StringIO(),
                          force_jupyter=False)
        print_comparison(self, console)
        return console.export_text().rstrip("\n")

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        return comparison_html(self)


def comparison_html(comparison: Comparison) -> str:
    """The comparison as an HTML fragment: a row per cell (those skipped in both runs said in one
    line each), what differs between the runs, and the summary."""
    rows = [{"case": f"{c.new.workload} {c.new.size_label}", "config": c.new.config_label,
             "base": format_seconds(c.base.median_s), "new": format_seconds(c.new.median_s),
             "ratio": "—" if c.ratio is None else f"{c.ratio:.3f}",
             "change": "—" if c.ratio is None else format_change(c.ratio),
             "verdict": c.verdict, "note": c.note, "colour": _COLOURS.get(c.verdict, "")}
            for c in comparison.shown]
    lines = [f"differs: {what}: {a} → {b}" for what, a, b in comparison.environment_differences]
    lines += [f"only in {side}: {r.workload} {r.size_label} {r.config_label} ({r.status})"
              for side, recs in (("base", comparison.only_base), ("new", comparison.only_new))
              for r in recs]
    lines += skipped_lines(comparison)
    return _TEMPLATES.get_template("comparison.html").render(
        title="arraybench compare: time per call, new vs base", rows=rows, lines=lines,
        summary=comparison.summary())


def print_comparison(comparison: Comparison, console: Console,
                     across: Sequence[tuple[str, str]] = ()) -> None:
    """Everything ``arraybench compare`` prints; ``across`` names the machines of a cross-machine
    comparison (base, new), which is said first."""
    for a, b in across:
        console.print(f"[bold yellow]across machines (--cross-machine):[/] base on {escape(a)}, "
                      f"new on {escape(b)}: differences are the machines' as much as the code's")
    console.print(comparison_table(comparison, console.width))
    for what, a, b in comparison.environment_differences:
        console.print(f"[yellow]differs:[/] {escape(what)}: {escape(a)} → {escape(b)}")
    for side, recs in (("base", comparison.only_base), ("new", comparison.only_new)):
        for r in recs:
            console.print(f"[yellow]only in {side}:[/] {escape(r.workload)} {escape(r.size_label)} "
                          f"{escape(r.config_label)} ({r.status})")
    for text in skipped_lines(comparison):
        console.print(f"[dim]{escape(text)}[/]")
    for m in memory_changes(comparison):
        console.print(f"[{'bold red' if m.grew else 'green'}]peak memory per call:[/] {escape(m.text())}")
    console.print(escape(comparison.summary()))


def skipped_lines(comparison: Comparison) -> list[str]:
    """Cells skipped in both runs, one line per library/device and reason."""
    groups = Counter((c.new.config_label, c.new.reason or c.base.reason) for c in comparison.skipped_in_both)
    return [f"skipped in both runs: {label} ({n} cell{'s' if n != 1 else ''}): {reason}"
            for (label, reason), n in groups.items()]


def comparison_table(comparison: Comparison, width: int | None = None) -> Group:
    """The comparison as a rich table, slower in red and faster in green, fitted to ``width``
    (``fit``: the run table's rule)."""
    columns = (Column("case"), Column("library / device"), Column("base", True), Column("new", True),
               Column("new/base", True, 4), Column("change", True), Column("p", True, 2),
               Column("q (BH)", True, 3), Column("verdict"))
    style = {FASTER: "green", SLOWER: "bold red", CANNOT_TELL: "yellow"}
    rows = []
    for c in comparison.shown:
        r = c.new
        verdict = c.verdict + (f" ({c.note})" if c.note else "")
        rows.append(Row([
            plain(f"{r.workload} {r.size_label}"), plain(r.config_label),
            format_seconds(c.base.median_s), format_seconds(r.median_s),
            "—" if c.ratio is None else f"{c.ratio:.3f}",
            "—" if c.ratio is None else format_change(c.ratio),
            "—" if c.p_value is None else f"{c.p_value:.2g}",
            "—" if c.q_value is None else f"{c.q_value:.2g}",
            plain(verdict)], style=style.get(c.verdict)))
    table, dropped = fitted_table("arraybench compare: time per call, new vs base", columns, rows, width)
    line = hidden_line(dropped, width or 0)
    return Group(table, *([line] if line is not None else []))
