"""The one facade a run is shown through (table, findings, HTML, Markdown, files, plots), and Markdown.

``Results`` methods, the commands and the API all come here, so a run looks the same wherever it is
shown; findings are computed once per run and handed to every format.
"""

from __future__ import annotations

import html
import re
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from jinja2 import Environment, PackageLoader, StrictUndefined
from rich.console import Console
from rich.markup import escape

from .comparison import (DisplayedComparison, change_cells, history_cells, one_process_line, step_sentence, summary)
from .files import CSV_NAME, csv_text, remember
from .findings import findings as compute_findings, self_check_lines
from .terminal import widened
from .html import REPORT_NAME, render_html, results_table_html as table_html  # noqa: F401  (Results.table_html)
from .notes import (RANGES_LEGEND, ci_legend, interval_target, ci_text, error_text, everywhere_mark, note_texts, notebook,
                    speedup_text, unavailable)
from .tables import (FINDINGS_LINES, energy_absent, energy_measured, energy_why, format_energy, peak_sub, peak_text,
                     print_findings, results_table, table_text)
from ..analysis.compare import Comparison, compare as compare_runs
from ..analysis.grouping import baselines, decided_winner, grouped, is_valid, size_text
from ..analysis.history import History
from ..analysis.memory import memory_changes
from ..backends import SPECS
from ..errors import one_line
from ..files import write_atomic
from ..model.runs import check_same_machine
from ..model.results import Pairs, Results
from ..model.record import Record
from ..units import format_seconds

if TYPE_CHECKING:
    from matplotlib.figure import Figure


FINDINGS_NAME = "findings.md"

# A run's findings by its Results' identity, reused by every format; keyed also by its records',
# pairs' and environment's identities, so that records added or replaced since give new findings.
_FOUND: dict[int, tuple[tuple[int, ...], list[str]]] = {}


class Findings(list):
    """The findings of a run (``Results.findings()``): a list of sentences that shows as them."""

    def __str__(self) -> str:
        return "\n".join(f"- {sentence}" for sentence in self) if self else "(no findings)"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        if not self:
            return "<p><i>no findings</i></p>"
        items = "".join(f"<li>{html.escape(str(sentence))}</li>" for sentence in self)
        return f"<ul class='arraybench-findings'>{items}</ul>"


def findings(results: Results) -> Findings:
    """The run's findings, computed once per run."""
    key = (id(results.environment), *map(id, results.records), *map(id, results.pairs))
    kept = _FOUND.get(id(results))
    if kept is None or kept[0] != key:
        if kept is None:
            weakref.finalize(results, _FOUND.pop, id(results), None)
        # A sentence quotes labels from outside (a --variant's variables, a version string): its
        # control characters are escaped once, here, for every format.
        kept = _FOUND[id(results)] = (key, [one_line(f) for f in self_check_lines(results)
                                            + compute_findings(results.records, results.environment,
                                                               Pairs(results.pairs))])
    return Findings(kept[1])


def table(results: Results, width: int = 120) -> str:
    """The results table as plain text, as ``arraybench run`` prints it."""
    return table_text(results.records, width=width, pairs=Pairs(results.pairs), target=interval_target(results))


def show(results: Results, console: Console, *, errors: bool = False, with_findings: bool = True,
         verbose: bool = False) -> None:
    """Print the table, the errors (with ``errors``) and the findings: a screenful, all with ``verbose``."""
    for line in self_check_lines(results):
        console.print(escape(line), style="bold red" if "unreliable" in line else None, soft_wrap=True)
    wide = widened(console)  # the table fitted to the console's width
    wide.print(results_table(results.records, wide.width, Pairs(results.pairs), interval_target(results)))
    if errors:
        for e in results.errors:
            console.print(f"[red]not run:[/] {escape(e['error'])}", soft_wrap=True)
    if with_findings:
        print_findings(findings(results), console, limit=None if verbose else FINDINGS_LINES)


def write_report(results: Results, out_dir: str | Path, *, plots: bool = True,
                 history: "History | None" = None) -> list[Path]:
    """Write the plots, report.html, results.md, results.csv and findings.md; return the files written."""
    found = findings(results)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if plots:
        # matplotlib only when plots are wanted: the tables and the HTML never need it.
        from .mpl import write_history_plots
        from .plots import write_plots

        written += write_plots(results.records, out_dir, Pairs(results.pairs))
        if history is not None:
            written += write_history_plots(history, out_dir)
    written += [write_atomic(out_dir / REPORT_NAME,
                             render_html(results, plots=list(written), findings=found, history=history)),
                write_atomic(out_dir / MARKDOWN_NAME, markdown_report(results, found)),
                write_atomic(out_dir / CSV_NAME, csv_text(results)),
                write_atomic(out_dir / FINDINGS_NAME, "".join(f"- {f}\n" for f in found))]
    # The plots' names, for --overwrite to remove before another run starts here (outdir).
    remember(out_dir, written)
    return written


def plot(results: Results, kind: str = "summary", *, workload: str | None = None,
         size: str | None = None) -> "Figure":
    """A matplotlib figure of the run: ``summary``, ``case``, ``sweep`` or ``roofline``."""
    from .plots import figure

    return figure(results.records, kind, workload=workload, size=size, pairs=Pairs(results.pairs))


def compare(base: Results, new: Results, *, threshold: float | None = None, alpha: float | None = None,
            cross_machine: bool = False) -> Comparison:
    """``base`` against ``new``, per cell; runs of two machines raise unless ``cross_machine``."""
    check_same_machine(base, new, cross_machine)
    return DisplayedComparison.of(compare_runs(base, new, **{
        k: v for k, v in (("threshold", threshold), ("alpha", alpha)) if v is not None}))


MARKDOWN_NAME = "results.md"

# Characters that Markdown (or the HTML GitHub allows in it) would read as markup.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def environment_line(results: Results) -> str:
    """One line naming the machine and the libraries used: ``CPU (2 cores) · Python 3.11 · NumPy 2.4 …``."""
    env, libs = results.environment, results.environment.get("libraries") or {}
    used = {r.backend for r in results.records}
    gpus = [g.get("name") for g in env.get("gpus") or [] if g.get("name")]
    versions = [f"{SPECS[n].label} {libs[n]}" for n in SPECS if n in used and libs.get(n)]
    parts = [f"{env['cpu_model']} ({env.get('cpu_count', '?')} cores)" if env.get("cpu_model") else "",
             ", ".join(gpus), f"Python {env['python']}" if env.get("python") else "", ", ".join(versions),
             f"BLAS {env['blas']}" if env.get("blas") else "", str(results.settings.get("dtype") or ""),
             str(env["timestamp"])[:10] if env.get("timestamp") else ""]
    return " · ".join(part for part in parts if part)


def md(value: Any) -> str:
    """Text escaped for a Markdown table cell: markup and pipes escaped, on one line, control characters shown."""
    return _SPECIAL.sub(r"\\\1", one_line(" ".join(str(value).split())))


# Markdown, not HTML: the templates escape nothing themselves; ``md`` escapes every text from data.
_MARKDOWN = Environment(loader=PackageLoader("arraybench.render", "templates"), trim_blocks=True,
                        lstrip_blocks=True, undefined=StrictUndefined)
_MARKDOWN.filters["md"] = md


def markdown_report(results: Results, findings: Sequence[str] | None = None) -> str:
    """A heading, the environment line, findings, the table and its notes, as GitHub Markdown."""
    return _markdown("results.md", title="arraybench results", findings=findings or [], complete=results.complete,
                     environment=environment_line(results),
                     table="\n".join(markdown_table(results.records, Pairs(results.pairs), interval_target(results))))


def markdown_table(records: Iterable[Record], pairs: Pairs = Pairs(), target: float | None = None) -> list[str]:
    """The table and its notes as lines of Markdown."""
    not_run, shown = unavailable(records)
    groups = grouped(shown)
    book = notebook(groups)
    peak = any(r.peak_bytes is not None for r in shown)
    energy = energy_measured(shown)  # without a figure anywhere, lines under the table say why
    rows = []
    for (workload, _label), group in groups.items():
        best = decided_winner(group, pairs) if sum(1 for r in group if is_valid(r)) > 1 else None
        bases = baselines(group)
        for i, r in enumerate(group):
            label, median = md(r.config_label), format_seconds(r.median_s) if is_valid(r) else "—"
            if r is best:
                label, median = f"**{label}**", f"**{median}**"
            refs = book.refs(r.key)
            cells = [md(f"{workload} {size_text(r)}" if i == 0 else ""), label, median,
                     md(ci_text(r) if is_valid(r) else "—"), md(speedup_text(r, bases.get(r.machine), pairs))]
            if peak:  # "24 MB (2.1× the output)", or "—" and why not
                cells.append(md(" ".join([peak_text(r)] + [f"({x})" for x in peak_sub(r)])))
            if energy:
                why = energy_why(r) if is_valid(r) else ""
                cells.append(md(format_energy(r.energy_j) + (f" ({why})" if why else "")))
            rows.append(cells + [md(error_text(r)), r.status + (f" \\[{','.join(map(str, refs))}\\]" if refs else "")])
    return _markdown("table.md", rows=rows, peak=peak, energy=energy, legend=ci_legend(target), ranges=RANGES_LEGEND,
                     ranged=book.ranged, notes=note_texts(book), everywhere=everywhere_mark(book).capitalize(),
                     energy_absent=[] if energy else energy_absent(shown), not_run=not_run,
                     ).splitlines()


def history_markdown(history: "History", where: str, last: int) -> str:
    """``arraybench history``'s table as Markdown, steps in bold and each called in a sentence."""
    rows = [[md(c) for c in cells] for series in history_cells(history, last) for cells in series]
    for row in rows:
        if row[-1].startswith("STEP"):
            row[4:] = [f"**{c}**" if c else c for c in row[4:]]
    return _markdown("history.md", summary=f"{summary(history)}; store {where}", rows=rows,
                     one_process=history.one_process and one_process_line(history),
                     steps=[step_sentence(st) for st in history.steps])


def comparison_markdown(comparison: "Comparison") -> str:
    """A comparison of two runs as Markdown: the summary, the table, one-sided cells."""
    rows = [[md(c.new.workload + " " + size_text(c.new)), md(c.new.config_label), *map(md, change_cells(c)),
             (f"**{c.verdict}**" if c.verdict in ("faster", "slower") else c.verdict)
             + (f" ({md(c.note)})" if c.note else "")] for c in comparison.shown]
    return _markdown("comparison.md", c=comparison, rows=rows, moved=memory_changes(comparison),
                     size_text=size_text)


def _markdown(template: str, **values: Any) -> str:
    """A Markdown template rendered, ending in one newline."""
    return _MARKDOWN.get_template(template).render(**values).rstrip() + "\n"
