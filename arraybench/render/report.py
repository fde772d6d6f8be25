"""The one facade through which a run is shown: its table, findings, HTML, Markdown, files and plots.

``Results`` methods (``table``, ``findings``, ``write_report``, ``plot``, ``compare``, the notebook
and terminal reprs), the commands and the API all come here, so a run looks the same wherever it is
shown. Findings are computed once per run and handed down to every format that shows them.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from ..analysis.compare import Comparison
from ..analysis.compare import compare as compare_runs
from .findings import findings as compute_findings, self_check_lines
from ..errors import one_line
from ..files import write_atomic
from .manifest import remember
from ..model.machines import check_same_machine
from ..model.pair import Pairs
from .csvout import write_csv
from .html import results_table_html, write_html
from .markdown import write_markdown
from .sentences import Findings
from .tables import FINDINGS_LINES, print_findings, print_table, table_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..analysis.history import History
    from ..model.results import Results

FINDINGS_NAME = "findings.md"

# A run's findings, by the identity of its Results: computed by the first format that shows them,
# reused by the others (the report files, then the terminal). The key holds the identity of every
# record and of the environment, so records added or replaced since give new findings; an entry
# goes when its Results does.
_FOUND: dict[int, tuple[tuple[int, ...], list[str]]] = {}


def findings(results: Results) -> Findings:
    """Plain sentences computed from the records: who wins, by how much, and why (once per run);
    a list that shows as sentences (``Findings``)."""
    key = (id(results.environment), *map(id, results.records), *map(id, results.pairs))
    kept = _FOUND.get(id(results))
    if kept is None or kept[0] != key:
        if kept is None:
            weakref.finalize(results, _FOUND.pop, id(results), None)
        # A sentence quotes labels from outside (a --variant's variables, a --context value, a
        # library's version string): its control characters are escaped once, here, for
        # findings.md, results.md and the report alike.
        kept = _FOUND[id(results)] = (key, [one_line(f) for f in self_check_lines(results)
                                            + compute_findings(results.records, results.environment,
                                                               Pairs(results.pairs))])
    return Findings(kept[1])


def table(results: Results, width: int = 120) -> str:
    """The results table as plain text, as ``arraybench run`` prints it."""
    return table_text(results.records, width=width, pairs=Pairs(results.pairs))


def table_html(results: Results) -> str:
    """The results tables as an HTML fragment for Jupyter."""
    return results_table_html(results)


def show(results: Results, console: Console, *, errors: bool = False, with_findings: bool = True,
         verbose: bool = False) -> None:
    """Print the table to ``console``; under it what failed before any cell (with ``errors``) and
    the findings (unless ``with_findings`` is False): a screenful at most, all with ``verbose``."""
    for line in self_check_lines(results):
        console.print(escape(line), style="bold red" if "unreliable" in line else None, soft_wrap=True)
    print_table(results.records, console, Pairs(results.pairs))
    if errors:
        for e in results.errors:
            console.print(f"[red]not run:[/] {escape(e['error'])}", soft_wrap=True)
    if with_findings:
        print_findings(findings(results), console, limit=None if verbose else FINDINGS_LINES)


def write_report(results: Results, out_dir: str | Path, *, plots: bool = True,
                 history: "History | None" = None) -> list[Path]:
    """Write the plots (unless ``plots`` is False), ``report.html``, ``results.md``,
    ``results.csv`` and ``findings.md`` into ``out_dir``; return the files written.

    ``arraybench run`` writes them at its end and ``arraybench report`` rebuilds them from a saved
    ``results.json``; both come here, so the two can never drift apart. ``history`` (the store's,
    for this run's cells) adds ``history_<workload>.svg`` and a section of the report.
    """
    found = findings(results)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if plots:
        # matplotlib only when plots are wanted: the tables and the HTML never need it.
        from .history_plot import write_history_plots
        from .plots import write_plots

        written += write_plots(results.records, out_dir, Pairs(results.pairs))
        if history is not None:
            written += write_history_plots(history, out_dir)
    written.append(write_html(results, out_dir, plots=list(written), findings=found, history=history))
    written.append(write_markdown(results, out_dir, findings=found))
    written.append(write_csv(results, out_dir))
    written.append(write_atomic(out_dir / FINDINGS_NAME, "".join(f"- {f}\n" for f in found)))
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
    """``base`` against ``new``, per cell: faster, slower or not significant. Runs from different
    machines raise ``CrossMachineError`` unless ``cross_machine``."""
    from .comparison import DisplayedComparison

    check_same_machine(base, new, cross_machine)
    return DisplayedComparison.of(compare_runs(base, new, **{
        k: v for k, v in (("threshold", threshold), ("alpha", alpha)) if v is not None}))
