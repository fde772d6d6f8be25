"""History as people read it: a table in the terminal and a section of the HTML report.

Each series (one cell on one machine) lists its latest runs: when, the median and its 95% CI, the
change from the run before, and a note where a step was called (with its cause), library
versions changed, or a change over the threshold could not be judged because a side was measured
with one process (one line under the table counts those cells).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

from rich.console import Console, Group
from rich.text import Text

from ..errors import spell
from ..units import format_change, format_interval, format_seconds
from .fit import Column, Row, fitted_table, hidden_line
from .terminal import plain

if TYPE_CHECKING:
    from ..analysis.history import History, Point, Series, Step

#: Runs shown per series unless told otherwise; the plots show all of them.
DEFAULT_LAST = 10


def step_sentence(step: "Step") -> str:
    """A step called in a series, its times and what changed with it, in one sentence."""
    s = step.series
    causes = "; ".join(step.causes) if step.causes else "nothing recorded changed"
    return (f"{s.workload} {s.case}, {s.label} on {s.machine}: {format_change(step.ratio)} "
            f"({format_seconds(step.before.median_s)} → {format_seconds(step.after.median_s)}) "
            f"in the run of {step.after.run.started_at[:16].replace('T', ' ')}; changed: {causes}.")


def _ci(p: "Point") -> str:
    if p.entry.ci_low_s is None or p.entry.ci_high_s is None:
        return "—"
    return format_interval(p.low, p.median_s, p.high)


def series_rows(history: "History", s: "Series", last: int) -> list[tuple[str, ...]]:
    """(when, median, CI, vs previous, note) for the latest ``last`` runs of a series."""
    steps = {st.after.run.run_id: st for st in history.steps if st.series is s}
    untested = {u.after.run.run_id for u in history.one_process if u.series is s}
    versions = {(c.machine_id, c.run.run_id): c for c in history.version_changes}
    rows = []
    previous = None
    context: dict = {}
    for p in s.points:
        when = p.run.started_at[:16].replace("T", " ")
        if not p.valid:
            rows.append((when, "—", "—", "—", p.entry.status))
            continue
        vs = "—" if previous is None else format_change(p.median_s / previous.median_s)
        notes = []
        step = steps.get(p.run.run_id)
        if step is not None:
            notes.append(f"STEP {'slower' if step.slower else 'faster'}: "
                         + ("; ".join(step.causes) or "nothing recorded changed"))
        if (p.run.run_id in untested and previous is not None
                and abs(math.log(p.median_s / previous.median_s)) > math.log1p(history.threshold)):
            notes.append("one process: cannot tell")
        change = versions.get((s.machine_id, p.run.run_id))
        if change is not None and step is None:
            notes.append(change.text)
        if p.run.context and p.run.context != context and step is None:
            notes.append(", ".join(f"{k}={v}" for k, v in p.run.context.items()))
        context = p.run.context
        rows.append((when, format_seconds(p.median_s), _ci(p), vs, " · ".join(notes)))
        previous = p
    return rows[-last:]


def latest_points(history: "History", last: int = DEFAULT_LAST
                  ) -> list[tuple["Series", list[tuple["Point", "Point | None", str]]]]:
    """What the table shows, for the files that hold it (``history --csv``): each shown series
    with its latest ``last`` points, each with the valid point before it (None: the first) and
    its note."""
    out = []
    for s in shown_series(history):
        notes = [row[4] for row in series_rows(history, s, len(s.points))]
        previous: "Point | None" = None
        points = []
        for p, note in zip(s.points, notes):
            points.append((p, previous, note))
            if p.valid:
                previous = p
        out.append((s, points[-last:]))
    return out


def shown_series(history: "History") -> list["Series"]:
    """The series worth rows: those with a measured time in at least one run (a library that was
    never available on a machine is left out)."""
    return [s for s in history.series if any(p.valid for p in s.points)]


def print_history(history: "History", console: Console, where: str, last: int = DEFAULT_LAST) -> None:
    """What ``arraybench history`` prints: the table, a summary naming the store (``where``), and
    each step called, slower in red and faster in green."""
    console.print(history_table(history, last=last, width=console.width))
    console.print(summary(history) + f"; store {where}", markup=False, highlight=False)
    if history.one_process:
        console.print(f"[yellow]{one_process_line(history)}[/]", highlight=False)
    for step in history.steps:
        style = "bold red" if step.slower else "bold green"
        # One text, so that the line wraps between words at the console's width as a whole.
        console.print(Text.assemble(("step: ", style), plain(step_sentence(step))), highlight=False)


def history_table(history: "History", last: int = DEFAULT_LAST, width: int | None = None) -> Group:
    """Every series and its latest runs, steps in bold red (slower) or green (faster), fitted to
    ``width`` (``fit``: the run table's rule)."""
    columns = (Column("case"), Column("library / device"), Column("machine", False, 5), Column("run", whole=True),
               Column("median", True), Column("95% CI", True, 2), Column("vs previous", True),
               Column("note", False, 1))
    shown = shown_series(history)
    table_rows = []
    for n, s in enumerate(shown):
        rows = series_rows(history, s, last)
        for i, (when, median, ci, vs, note) in enumerate(rows):
            style = None
            if note.startswith("STEP"):
                style = "bold red" if "slower" in note[:12] else "bold green"
            cells = (f"{s.workload} {s.size_label}" if i == 0 else "", s.label if i == 0 else "",
                     s.machine_id if i == 0 else "", when, median, ci, vs, note)
            table_rows.append(Row([plain(c) for c in cells], style=style,
                                  end_section=(i == len(rows) - 1 and n < len(shown) - 1)))
    table, dropped = fitted_table("arraybench history: time per call (median) over the stored runs",
                                  columns, table_rows, width)
    line = hidden_line(dropped, width or 0)
    return Group(table, *([line] if line is not None else []))


def summary(history: "History") -> str:
    """One line: how many series and runs, how many pairs tested, how many steps called."""
    n_steps = len(history.steps)
    return (f"{len(shown_series(history))} series over {len(history.runs)} runs; {history.tested} consecutive "
            f"pairs tested, {n_steps} step{'s' if n_steps != 1 else ''} called (intervals apart, "
            f"false discovery rate {history.fdr:.0%} across all series, changes over "
            f"{history.threshold:.0%})")


def one_process_line(history: "History") -> str:
    """The series a single process left untested, in one line ("" when there are none)."""
    n = len(history.one_process_series)
    if not n:
        return ""
    return (f"{n} cell{'s' if n != 1 else ''} measured with one process: no step can be called; "
            f"use {spell('processes', 2)} or more")


def history_section(history: "History", figures: Sequence[tuple[str, str]],
                    last: int = DEFAULT_LAST) -> dict[str, Any]:
    """The report's History section as plain values for its template (``templates/history.html``):
    the summary, the steps, the plots, and the latest runs of every series."""
    rows = []
    for s in shown_series(history):
        for i, (when, median, ci, vs, note) in enumerate(series_rows(history, s, last)):
            rows.append({"case": f"{s.workload} {s.case}" if i == 0 else "", "library": s.label if i == 0 else "",
                         "when": when, "median": median, "ci": ci, "vs": vs, "note": note,
                         "step": note.startswith("STEP")})
    summary_line = ". ".join(filter(None, (summary(history), one_process_line(history))))
    return {"summary": summary_line, "steps": [(st.slower, step_sentence(st)) for st in history.steps],
            "figures": list(figures), "rows": rows}
