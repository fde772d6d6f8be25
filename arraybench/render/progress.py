"""What the user sees while a run goes: a progress bar, a line per finished cell, or JSON lines."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import printable
from ..model.replicate import Replicate
from ..model.cell import Cell
from ..model.record import Record
from ..model.reporter import Reporter
from ..units import format_seconds
from .tables import ci_text
from .terminal import console as safe_console

if TYPE_CHECKING:
    from ..model.results import Results


class ConsoleReporter(Reporter):
    """A rich progress bar with ETA and one line per finished cell.

    The bar counts measurements (a cell in one replicate) for a smooth ETA, and shows the cells done
    out of ``cells`` when the caller knows how many there are.
    """

    def __init__(self, console: Console | None = None, cells: int | None = None,
                 cells_done: int = 0) -> None:
        self.console = console or safe_console(stderr=True)
        self.cells_total = cells
        self.cells_done = cells_done  # on --resume, the cells measured before
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("measurements"),
            TextColumn("{task.fields[cells]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[eta]}"),
            console=self.console,
            transient=True,
            refresh_per_second=2,  # the parent shares the cores with the operation being timed
        )
        self.task: Any = None
        #: Measurements made, and when the first began: the ETA is drawn from these alone.
        self.measured = 0
        self.started: float | None = None
        self.per_cell = 1.0

    def run_started(self, total: int) -> None:
        import time

        self.started = time.monotonic()
        if self.cells_total:
            self.per_cell = total / max(self.cells_total - self.cells_done, 1)
        self.progress.start()
        self.task = self.progress.add_task("measuring", total=max(total, 1), cells=self._cells_text(),
                                           eta="ETA …")

    def worker_started(self, backend: str, device: str, replicate: int, cells: int,
                       environment: str = "") -> None:
        if self.task is not None:
            self.progress.update(self.task, description=progress_text(backend, device, replicate, environment))

    def config_unavailable(self, backend: str, device: str, reason: str) -> None:
        self.progress.console.print(f"[dim]skip {backend}/{device}: {escape(reason)}[/]")

    def replicate_done(self, cell: Cell, index: int, replicate: Replicate) -> None:
        self.measured += 1
        if self.task is not None:
            self.progress.advance(self.task)
            self.progress.update(self.task, eta=self._eta())

    def more_wanted(self, cell: Cell, extra: int) -> None:
        if self.task is not None:  # adaptive replication: the total grows as cells ask for more
            self._add_to_total(extra)

    def _add_to_total(self, extra: float) -> None:
        task = self.progress.tasks[0] if self.progress.tasks else None
        total = task.total if task is not None else None
        done = task.completed if task is not None else 0
        self.progress.update(self.task, total=max(round((total or 0) + extra), done, 1), eta=self._eta())

    def _eta(self) -> str:
        """The time left at the pace of the measurements made so far (never a guess before one);
        a cell whose interval is still wide may add processes, and the total with them."""
        import time

        task = self.progress.tasks[0] if self.progress.tasks else None
        if task is None or self.started is None or not self.measured or task.total is None:
            return "ETA …"
        left = max(task.total - task.completed, 0)
        seconds = (time.monotonic() - self.started) / self.measured * left
        minutes, secs = divmod(int(round(seconds)), 60)
        return f"ETA {minutes}:{secs:02d}"

    def _cells_text(self) -> str:
        if self.cells_total is None:
            return ""
        return f"· {self.cells_done}/{self.cells_total} cells"

    def record_done(self, record: Record) -> None:
        unmeasured = record.status == "skipped" and not record.replicates
        if unmeasured and self.cells_total is not None:
            # A cell that will not run is no cell done: it leaves the count and the bar's total.
            self.cells_total -= 1
            if self.task is not None:
                self._add_to_total(-self.per_cell)
        else:
            self.cells_done += 1
        if self.task is not None:
            self.progress.update(self.task, cells=self._cells_text())
        if record.status == "skipped" and record.n_samples == 0 and record.reason and "not measured" not in record.reason:
            return  # the unavailable line already said it, once per backend
        self.progress.console.print(live_line(record))

    def run_finished(self, results: Results) -> None:
        self.progress.stop()

    def stopping(self, signum: int) -> None:
        """A stop signal arrived (runs inside the signal handler: print, nothing more)."""
        self.progress.console.print(
            "[yellow]stopping: keeping the measurements already made "
            "(press Ctrl-C again to stop at once)[/]")



def progress_text(backend: str, device: str, replicate: int, environment: str = "") -> str:
    """What the bar says while a worker measures: ``numpy/cpu [np126] process 2`` (a label is
    letters, digits and ``_.+-/``: nothing rich would read as markup)."""
    where = f" [{environment}]" if environment else ""
    return f"{backend}/{device}{escape(where)} process {replicate + 1}"


def live_line(r: Record) -> str:
    """``matmul large  PyTorch CPU  12.3 ms ±0.8%`` with the status where it is not ok."""
    head = f"{r.workload} {r.size_label}  {r.config_label}"
    if r.status == "ok":
        n = len(r.warnings)
        warn = f" [yellow]({n} note{'s' if n != 1 else ''} under the table)[/]" if n else ""
        return f"[green]✓[/] {escape(head)}  {format_seconds(r.median_s)} {ci_text(r)}{warn}"
    colour = "red" if r.status in ("failed", "wrong") else "dim"
    return f"[{colour}]✗ {escape(printable(head))}  {r.status}: {escape(printable(r.reason))}[/]"


class QuietReporter(Reporter):
    """Nothing while running (``-q``)."""


class JsonLinesReporter(QuietReporter):
    """One JSON record per line on stdout as each cell is final (``--json``), for scripts."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.reader_left = False

    def record_done(self, record: Record) -> None:
        if self.reader_left:
            return
        try:
            self.stream.write(json.dumps(record.to_dict(), allow_nan=False) + "\n")
            self.stream.flush()
        except BrokenPipeError:
            # `arraybench run --json | head -1`: the reader is gone, but the run is not; keep
            # measuring and saving, and stop writing (also at exit, where Python flushes stdout).
            self.reader_left = True
            if self.stream is sys.stdout:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
