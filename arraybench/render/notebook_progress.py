"""Progress in a Jupyter cell: one line, updated in place, while a run measures.

It goes through IPython's own display handle (``display(..., display_id=True)`` and ``update``),
so it needs no widget library; a plain-text version goes with the HTML for front ends that show
no HTML. Updates come at most twice a second: the parent shares the cores with what is timed.
"""

from __future__ import annotations

import html
import sys
import time
from typing import TYPE_CHECKING, Any

from ..errors import printable
from ..model.reporter import Reporter
from ..units import format_seconds

if TYPE_CHECKING:
    from ..model.record import Record
    from ..model.replicate import Replicate
    from ..model.results import Results
    from ..model.cell import Cell

#: Seconds between two updates of the line, at least.
MIN_INTERVAL = 0.5


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (where IPython is already loaded: never imported
    here for the question's sake)."""
    if "IPython" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class NotebookProgress(Reporter):
    """The measurements made out of those planned, the cells done, the time so far and the last
    cell finished, in one line of the running cell (``arraybench.run(progress=False)`` for none)."""

    def __init__(self, cells: int | None = None) -> None:
        #: The cells planned, when known: a cell that will not run takes its share off the total.
        self.planned = cells
        self.per_cell = 0.0
        self.total = 0
        self.done = 0
        self.cells = 0
        self.last = ""
        self.skipped: list[str] = []
        self.started = time.monotonic()
        self.shown = 0.0
        self.handle: Any = None

    def run_started(self, total: int) -> None:
        from IPython.display import display

        self.total, self.started = max(total, 1), time.monotonic()
        self.per_cell = total / self.planned if self.planned else 0.0
        self.handle = display(self._data("starting"), raw=True, display_id=True)
        self.shown = self.started

    def config_unavailable(self, backend: str, device: str, reason: str) -> None:
        self.skipped.append(f"{backend}/{device}")
        self._show()

    def replicate_done(self, cell: "Cell", index: int, replicate: "Replicate") -> None:
        self.done += 1
        self._show()

    def more_wanted(self, cell: "Cell", extra: int) -> None:
        self.total += extra

    def record_done(self, record: "Record") -> None:
        if record.status == "skipped" and not record.replicates:
            # A cell that will not run is no cell done, and no measurement still to come.
            self.total = max(self.done, round(self.total - self.per_cell), 1)
        else:
            self.cells += 1
        time_text = f" {format_seconds(record.median_s)}" if record.status == "ok" else f" {record.status}"
        self.last = printable(f"{record.workload} {record.size_label} {record.config_label}{time_text}")
        self._show()

    def run_finished(self, results: "Results") -> None:
        self._show("done", force=True)

    def _show(self, state: str = "measuring", force: bool = False) -> None:
        now = time.monotonic()
        if self.handle is None or (not force and now - self.shown < MIN_INTERVAL):
            return
        self.shown = now
        self.handle.update(self._data(state), raw=True)

    def _data(self, state: str) -> dict[str, str]:
        elapsed = time.monotonic() - self.started
        parts = [f"{self.done}/{self.total} measurements", f"{self.cells} cells done",
                 f"{elapsed:.0f} s"]
        if self.last:
            parts.append(f"last: {self.last}")
        if self.skipped:
            parts.append(f"not available here: {', '.join(self.skipped)}")
        text = f"arraybench {state}: " + " · ".join(parts)
        bar = f"<progress value='{self.done}' max='{self.total}' style='width: 12em'></progress> "
        return {"text/plain": text, "text/html": f"<div>{bar}{html.escape(text)}</div>"}
