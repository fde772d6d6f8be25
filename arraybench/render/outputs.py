"""Every file a run leaves for people: plots, ``report.html``, ``results.md``, ``results.csv``,
``findings.md``.

``arraybench run`` writes them at its end and ``arraybench report`` rebuilds them from a saved
``results.json``; both call ``write_reports``, so the two can never drift apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..analysis.findings import findings as compute_findings
from ..files import write_atomic
from .csvout import write_csv
from .html import write_html
from .markdown import write_markdown

if TYPE_CHECKING:
    from ..analysis.history import History
    from ..model.results import Results


def write_reports(results: Results, out_dir: Path, *, plots: bool = True,
                  findings: Sequence[str] | None = None, history: "History | None" = None) -> list[Path]:
    """Write the plots (unless ``plots`` is False), the HTML report, Markdown, CSV and the findings
    into ``out_dir``; return the files written. ``findings`` default to those computed from the
    records. ``history`` (the store's, for this run's cells) adds ``history_<workload>.svg`` and
    a section of the report."""
    if findings is None:
        findings = compute_findings(results.records, results.environment)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if plots:
        from .plots import write_plots

        written += write_plots(results.records, out_dir)
        if history is not None:
            from .history_plot import write_history_plots

            written += write_history_plots(history, out_dir)
    written.append(write_html(results, out_dir, plots=list(written), findings=findings, history=history))
    written.append(write_markdown(results, out_dir, findings=findings))
    written.append(write_csv(results, out_dir))
    written.append(write_atomic(out_dir / "findings.md", "".join(f"- {f}\n" for f in findings)))
    return written
