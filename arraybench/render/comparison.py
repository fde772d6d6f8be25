"""A run set against others: a comparison of two runs, the reasons a gate fails it, and history."""

from __future__ import annotations

import io
import math
from collections import Counter
from dataclasses import dataclass, fields
from typing import Sequence, TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from rich.console import Console, Group
from rich.markup import escape
from rich.text import Text

from .terminal import Column, Row, fitted, console as safe_console, plain
from ..analysis.compare import CANNOT_TELL, FASTER, SLOWER, CellChange, Comparison
from ..analysis.gate import judge_gate
from ..analysis.memory import memory_changes
from ..errors import one_line, spell
from ..units import format_change, format_seconds, format_ratio, format_interval

if TYPE_CHECKING:
    from ..analysis.history import History, Point, Series, Step


# The HTML templates', autoescaped: a user (or a hostile results.json) controls the names shown.
HTML_TEMPLATES = Environment(loader=PackageLoader("arraybench.render", "templates"), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, undefined=StrictUndefined,
                             keep_trailing_newline=True)
_COLOURS = {FASTER: "#2a7d2a", SLOWER: "#c0392b", CANNOT_TELL: "#a06a00"}


@dataclass(repr=False)
class DisplayedComparison(Comparison):
    """A ``Comparison`` that shows itself: a table in a notebook (``_repr_html_``), the terminal's
    table as text (``table()``, ``str()``), one line as its ``repr``, and ``to_dataframe()``."""

    @classmethod
    def of(cls, comparison: Comparison) -> "DisplayedComparison":
        return cls(**{f.name: getattr(comparison, f.name) for f in fields(Comparison)})

    def table(self, width: int = 120) -> str:
        """Everything ``arraybench compare`` prints, as plain text ``width`` characters wide."""
        console = safe_console(width=width, color_system=None, record=True, file=io.StringIO(),
                          force_jupyter=False)
        print_comparison(self, console)
        return console.export_text().rstrip("\n")

    __str__ = table

    def _repr_html_(self) -> str:
        """An HTML fragment: a row per cell, what differs between the runs, and the summary."""
        rows = [{"case": f"{c.new.workload} {c.new.size_label}", "config": c.new.config_label,
                 **dict(zip(("base", "new", "ratio", "change"), change_cells(c))),
                 "verdict": c.verdict, "note": c.note, "colour": _COLOURS.get(c.verdict, "")}
                for c in self.shown]
        return HTML_TEMPLATES.get_template("comparison.html").render(
            title="arraybench compare: time per call, new vs base", rows=rows, lines=side_lines(self),
            summary=self.summary())


def print_comparison(comparison: Comparison, console: Console,
                     across: Sequence[tuple[str, str]] = ()) -> None:
    """Everything ``arraybench compare`` prints; ``across``: the machines (base, new) of a cross-machine one."""
    for a, b in across:
        console.print(f"[bold yellow]across machines (--cross-machine):[/] base on {escape(a)}, "
                      f"new on {escape(b)}: differences are the machines' as much as the code's")
    console.print(comparison_table(comparison, console.width))
    for line in side_lines(comparison):
        console.print(line, style="dim" if line.startswith("skipped") else "yellow", markup=False, highlight=False)
    for m in memory_changes(comparison):
        console.print(f"[{'bold red' if m.grew else 'green'}]peak memory per call:[/] {escape(m.text())}")
    console.print(escape(comparison.summary()))


def side_lines(comparison: Comparison) -> list[str]:
    """What differs between the runs, the cells only one has, and those skipped in both (a line per reason)."""
    skipped = Counter((c.new.config_label, c.new.reason or c.base.reason) for c in comparison.skipped_in_both)
    return ([f"differs: {what}: {a} → {b}" for what, a, b in comparison.environment_differences]
            + [f"only in {side}: {r.workload} {r.size_label} {r.config_label} ({r.status})"
               for side, recs in (("base", comparison.only_base), ("new", comparison.only_new)) for r in recs]
            + [f"skipped in both runs: {label} ({n} cell{'s' if n != 1 else ''}): {reason}"
               for (label, reason), n in skipped.items()])


def comparison_table(comparison: Comparison, width: int | None = None) -> Group:
    """The comparison as a rich table, slower in red and faster in green, fitted to ``width``."""
    columns = (Column("case"), Column("library / device"), Column("base", True), Column("new", True),
               Column("new/base", True, 4), Column("change", True), Column("p", True, 2),
               Column("q (BH)", True, 3), Column("verdict"))
    style = {FASTER: "green", SLOWER: "bold red", CANNOT_TELL: "yellow"}
    rows = [Row([plain(f"{c.new.workload} {c.new.size_label}"), plain(c.new.config_label), *change_cells(c),
                 plain(c.verdict + (f" ({c.note})" if c.note else ""))], style=style.get(c.verdict))
            for c in comparison.shown]
    return fitted("arraybench compare: time per call, new vs base", columns, rows, width)


def change_cells(c: CellChange) -> list[str]:
    """One compared cell's figures as text: base, new, new/base, change, p and q."""
    return [format_seconds(c.base.median_s), format_seconds(c.new.median_s),
            "—" if c.ratio is None else f"{c.ratio:.3f}", "—" if c.ratio is None else format_change(c.ratio),
            "—" if c.p_value is None else f"{c.p_value:.2g}", "—" if c.q_value is None else f"{c.q_value:.2g}"]


def said(items: Sequence[Any], text: str, name: Any = str, sep: str = ", ") -> list[str]:
    """``text`` for ``items`` (none: no line): ``{n}``, ``{names}`` (each named by ``name``, on one line),
    and ``{s}``, ``{was}``, ``{are}`` as their count wants them."""
    many = len(items) != 1
    return [text.format(n=len(items), names=one_line(sep.join(map(name, items))), s="s" if many else "",
                        was="were" if many else "was", are="are" if many else "is")] if items else []


def gate_failures(comparison: "Comparison", limit: float, *, fail_option: str = "--fail-above",
                  processes_option: str = "--processes", memory: bool = False) -> list[str]:
    """Why the new run must not pass a gate of ``limit``, one line per reason; none: it passes."""
    verdict = judge_gate(comparison, limit, memory=memory)
    unseen = f"; {fail_option} passes nothing unseen"

    def cell(detail: Any) -> Any:
        return lambda c: f"{c.new.workload} {c.new.size_label} {c.new.config_label}{detail(c)}"

    ratio = cell(lambda c: f" ({c.ratio:.3f})")
    return [*said(verdict.slower, f"{{n}} significant slowdown{{s}} above {limit:.0%}: {{names}}", ratio),
            *said(verdict.broken, "{n} cell{s} that {was} ok in the base run broke in the new run: {names}",
                  cell(lambda c: f" ({c.new.status})")),
            *said(verdict.unmeasured, "{n} cell{s} measured in the base run {was} not measured in the new run: "
                  "{names}" + unseen, cell(lambda c: f" ({c.new.reason})" if c.new.reason else "")),
            *said(verdict.missing, "{n} cell{s} measured in the base run {are} missing from the new run: {names}"
                  + unseen, lambda r: f"{r.workload} {r.size_label} {r.config_label}"),
            *said(verdict.incomparable, "{n} cell{s} measured in the base run could not be compared: {names}"
                  + unseen, cell(lambda c: f" ({c.note})" if c.note else "")),
            *([] if verdict.complete else
              [f"the new run is incomplete (interrupted before every cell was measured){unseen}"]),
            *said(verdict.unjudged, f"{{n}} cell{{s}} slower than {limit:.0%} could not be judged (one process on "
                  f"a side; measure with {processes_option} 2 or more): {{names}}{unseen}", ratio),
            *said(verdict.grown, f"{{n}} peak memory growth{{s}} above {limit:.0%}: {{names}}", lambda m: m.text()),
            *([] if verdict.comparable else [f"no cell could be compared (none was valid in both runs){unseen}"])]


def gate_notes(comparison: "Comparison", limit: float, *, against_option: str = "--against REF") -> list[str]:
    """What a gate of ``limit`` could not tell from the machine's drift between the runs (said, not failed)."""
    lines = []
    for u in judge_gate(comparison, limit).undecided:
        c = u.change
        why = (f"other processes used {u.others_cores:.1f} of {u.cpus} cores while one of the two runs "
               f"measured it, which can make a time up to {format_ratio(u.load_factor)} slower"
               if u.others_cores is not None else
               f"the {u.cells} cells compared moved by {format_ratio(u.drift or 1.0)} together: the machine "
               "between the two runs, or a change to all of them")
        lines.append(f"cannot decide whether {c.new.workload} {c.new.size_label} {c.new.config_label} is "
                     f"slower ({c.ratio:.3f}): {why}; measure both versions side by side in one session "
                     f"({against_option}) to decide it")
    return lines


#: Runs shown per series unless told otherwise; the plots show all of them.
DEFAULT_LAST = 10


def step_sentence(step: "Step") -> str:
    """A step called in a series, its times and what changed with it, in one sentence."""
    s = step.series
    causes = "; ".join(step.causes) if step.causes else "nothing recorded changed"
    return (f"{s.workload} {s.case}, {s.label} on {s.machine}: {format_change(step.ratio)} "
            f"({format_seconds(step.before.median_s)} → {format_seconds(step.after.median_s)}) "
            f"in the run of {step.after.run.started_at[:16].replace('T', ' ')}; changed: {causes}.")


_Row = tuple["Point", "Point | None", tuple[str, ...]]


def _walk(history: "History", s: "Series") -> list[_Row]:
    """Each point of a series, the valid point before it, and its row: (when, median, CI, vs previous, note)."""
    steps = {st.after.run.run_id: st for st in history.steps if st.series is s}
    untested = {u.after.run.run_id for u in history.one_process if u.series is s}
    versions = {(c.machine_id, c.run.run_id): c for c in history.version_changes}
    out = []
    previous = None
    context: dict = {}
    for p in s.points:
        when = p.run.started_at[:16].replace("T", " ")
        if not p.valid:
            out.append((p, previous, (when, "—", "—", "—", p.entry.status)))
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
        ci = format_interval(p.entry.ci_low_s, p.median_s, p.entry.ci_high_s)  # "—" without an interval
        out.append((p, previous, (when, format_seconds(p.median_s), ci, vs, " · ".join(notes))))
        previous = p
    return out


def series_rows(history: "History", last: int) -> list[tuple["Series", list[_Row]]]:
    """Each series with a measured time and its latest ``last`` points, as ``_walk`` gives them."""
    return [(s, _walk(history, s)[-last:]) for s in shown_series(history)]


def history_cells(history: "History", last: int) -> list[list[tuple[str, ...]]]:
    """Each series' rows as the tables show them: case, library and machine (on its first row), then the row."""
    return [[((f"{s.workload} {s.size_label}", s.label, s.machine_id) if i == 0 else ("", "", "")) + cells
             for i, (_, _, cells) in enumerate(rows)] for s, rows in series_rows(history, last)]


def shown_series(history: "History") -> list["Series"]:
    """The series with a measured time in at least one run."""
    return [s for s in history.series if any(p.valid for p in s.points)]


def print_history(history: "History", console: Console, where: str, last: int = DEFAULT_LAST) -> None:
    """What ``arraybench history`` prints: the table, a summary naming the store (``where``), each step called."""
    console.print(history_table(history, last=last, width=console.width))
    console.print(summary(history) + f"; store {where}", markup=False, highlight=False)
    if history.one_process:
        console.print(f"[yellow]{one_process_line(history)}[/]", highlight=False)
    for step in history.steps:
        style = "bold red" if step.slower else "bold green"
        # One text, so that the line wraps between words at the console's width as a whole.
        console.print(Text.assemble(("step: ", style), plain(step_sentence(step))), highlight=False)


def history_table(history: "History", last: int = DEFAULT_LAST, width: int | None = None) -> Group:
    """Every series and its latest runs, steps in bold red (slower) or green (faster), fitted to ``width``."""
    columns = (Column("case"), Column("library / device"), Column("machine", False, 5), Column("run", whole=True),
               Column("median", True), Column("95% CI", True, 2), Column("vs previous", True),
               Column("note", False, 1))
    shown = history_cells(history, last)
    table_rows = []
    for n, rows in enumerate(shown):
        for i, cells in enumerate(rows):
            note = cells[-1]
            style = ("bold red" if "slower" in note[:12] else "bold green") if note.startswith("STEP") else None
            table_rows.append(Row([plain(c) for c in cells], style=style,
                                  end_section=(i == len(rows) - 1 and n < len(shown) - 1)))
    return fitted("arraybench history: time per call (median) over the stored runs", columns, table_rows,
                  width)


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


def history_section(history: "History", figures: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The report's History section as plain values for ``templates/history.html``."""
    rows = [{"case": f"{s.workload} {s.case}" if i == 0 else "", "library": s.label if i == 0 else "",
             "when": when, "median": median, "ci": ci, "vs": vs, "note": note, "step": note.startswith("STEP")}
            for s, rows in series_rows(history, DEFAULT_LAST) for i, (_, _, (when, median, ci, vs, note)) in enumerate(rows)]
    summary_line = ". ".join(filter(None, (summary(history), one_process_line(history))))
    return {"summary": summary_line, "steps": [(st.slower, step_sentence(st)) for st in history.steps],
            "figures": list(figures), "rows": rows}
