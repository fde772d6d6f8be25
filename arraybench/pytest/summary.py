"""The end of a pytest session that measured: the session's table, its comparison, the verdict
and where the run went, through arraybench's rendering (as ``arraybench run`` and ``compare``
print them). The table's and the comparison's rendering is imported where it is shown: a session
under ``--arraybench-disable`` prints one line, and pays for neither."""

from __future__ import annotations

import io
from collections import Counter
from typing import Any

from rich.markup import escape

from ..errors import pytest_session
from ..options import PYTEST_NAMES
from ..render.terminal import TABLE_WIDTH, console as safe_console
from .suite import Outcome


def summary_text(outcome: Outcome, *, width: int, colour: bool) -> str:
    """The summary as text for pytest's terminal (ANSI colours with ``colour``)."""
    buffer = io.StringIO()
    if not colour:  # a file or a pipe (CI's log): as wide as `arraybench run` prints there
        width = max(width, TABLE_WIDTH)
    console = safe_console(file=buffer, width=width, force_terminal=colour,
                      color_system="standard" if colour else None, highlight=False,
                      soft_wrap=False)
    assert outcome.results is not None
    with pytest_session(PYTEST_NAMES):  # notes name the plugin's options (--arraybench-processes=2)
        _show(outcome, console)
    return buffer.getvalue()


def _show(outcome: Outcome, console: Any) -> None:
    assert outcome.results is not None
    if outcome.disabled:  # checks only: times taken this way are not worth showing
        counts = Counter(r.status for r in outcome.results.records)
        console.print(f"{len(outcome.results.records)} cells checked, not timed (--arraybench-disable): "
                      + ", ".join(f"{n} {status}" for status, n in counts.items()))
    else:
        from ..render import report

        report.show(outcome.results, console, errors=True, with_findings=False)
    if outcome.compared:
        console.print(escape(outcome.compared), soft_wrap=True)
    if outcome.comparison is not None:
        from ..render.comparison import print_comparison

        print_comparison(outcome.comparison, console)
    for line in outcome.failures:
        console.print(f"[bold red]arraybench:[/] {escape(line)}", soft_wrap=True)
    if outcome.stored:
        console.print(escape(outcome.stored), soft_wrap=True)
