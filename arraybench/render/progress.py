"""A run's progress as it measures: a bar, lines or JSON lines in the terminal; a line in a notebook.

Without a terminal (a CI log, a pipe) a bar cannot be drawn and a silent log looks hung: the run says
what it starts, a line per cell, and a heartbeat while nothing else was said.
"""

from __future__ import annotations

import contextlib
import html
import json
import sys
import threading
import time
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .notes import ci_text
from .terminal import console as safe_console
from ..errors import printable
from ..files import discard
from ..model.cell import Cell, config_label
from ..model.record import Record
from ..model.results import Results
from ..model.replicate import Replicate
from ..model.journal import Reporter
from ..units import format_seconds


#: Seconds without a line after which a run with no terminal says what it is still measuring.
HEARTBEAT_S = 30.0


class _Counting(Reporter):
    """Measurements made of how many, and cells done of how many: a cell that will not run is no cell
    done, and takes its share off the measurements still to come."""

    def __init__(self, cells: int | None = None, cells_done: int = 0) -> None:
        self.cells_total = cells
        self.cells_done = cells_done  # on --resume, the cells measured before
        self.total = self.measured = 0
        self.per_cell = 0.0
        self.started = time.monotonic()

    def run_started(self, total: int) -> None:
        self.started, self.total = time.monotonic(), max(total, 1)
        if self.cells_total:
            self.per_cell = total / max(self.cells_total - self.cells_done, 1)

    def replicate_done(self, cell: Cell, index: int, replicate: Replicate) -> None:
        self.measured += 1

    def more_wanted(self, cell: Cell, extra: int) -> None:
        self.total += extra  # adaptive replication: the total grows as cells ask for more

    def record_done(self, record: Record) -> None:
        if record.status == "skipped" and not record.replicates:
            self.total = max(round(self.total - self.per_cell), self.measured, 1)
            if self.cells_total is not None:
                self.cells_total -= 1
        else:
            self.cells_done += 1


class ConsoleReporter(_Counting):
    """A rich progress bar with ETA and one line per finished cell."""

    def __init__(self, console: Console | None = None, cells: int | None = None,
                 cells_done: int = 0, heartbeat_s: float = HEARTBEAT_S) -> None:
        super().__init__(cells, cells_done)
        self.console = console or safe_console(stderr=True)
        #: No terminal: lines only (a log keeps every line; a bar's frames would be noise).
        self.plain = not self.console.is_terminal or self.console.is_dumb_terminal
        self.heartbeat_s = heartbeat_s
        #: What a heartbeat names: the worker under way, and processes finished per cell.
        self.under_way = ""
        self.processes: dict[str, tuple[str, int]] = {}
        self.last_cell = ""
        self.said_at = time.monotonic()
        self._quiet_now = threading.Event()
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

    def run_started(self, total: int) -> None:
        super().run_started(total)
        self.task = self.progress.add_task("measuring", total=self.total, cells=self._cells_text(), eta="ETA …")
        if not self.plain:
            self.progress.start()
            return
        left = (self.cells_total or 0) - self.cells_done
        cells = f"{left} cell{'s' if left != 1 else ''}, " if self.cells_total else ""
        self._say(f"measuring {cells}{total} measurement{'s' if total != 1 else ''} planned "
                  f"(a line per cell as it finishes)")
        if self.heartbeat_s > 0:
            threading.Thread(target=self._heartbeats, name="arraybench-heartbeat", daemon=True).start()

    def worker_started(self, backend: str, device: str, replicate: int, cells: int,
                       environment: str = "") -> None:
        where = f" [{environment}]" if environment else ""
        self.under_way = f"{backend}/{device}{where} process {replicate + 1}"
        if self.task is not None:
            self.progress.update(self.task, description=progress_text(backend, device, replicate, environment))

    def config_unavailable(self, backend: str, device: str, reason: str) -> None:
        self._say(f"[dim]skip {backend}/{device}: {escape(reason)}[/]")

    def replicate_done(self, cell: Cell, index: int, replicate: Replicate) -> None:
        super().replicate_done(cell, index, replicate)
        config = config_label(cell.backend, cell.device, cell.mode, transfer=cell.transfer, machine=cell.machine,
                              environment=cell.environment)
        self.processes[cell.key] = (f"{cell.workload} {cell.size_label} {config}",
                                    self.processes.get(cell.key, ("", 0))[1] + 1)
        self.last_cell = cell.key
        self._update()

    def more_wanted(self, cell: Cell, extra: int) -> None:
        super().more_wanted(cell, extra)
        self._update()

    def _update(self) -> None:
        if self.task is not None:
            self.progress.update(self.task, total=self.total, completed=self.measured, cells=self._cells_text(),
                                 eta=self._eta())

    def _eta(self) -> str:
        """The time left at the pace of the measurements made so far (never a guess before one)."""
        if not self.measured:
            return "ETA …"
        seconds = (time.monotonic() - self.started) / self.measured * max(self.total - self.measured, 0)
        minutes, secs = divmod(int(round(seconds)), 60)
        return f"ETA {minutes}:{secs:02d}"

    def _cells_text(self) -> str:
        return "" if self.cells_total is None else f"· {self.cells_done}/{self.cells_total} cells"

    def record_done(self, record: Record) -> None:
        super().record_done(record)
        self._update()
        if record.status == "skipped" and record.n_samples == 0 and record.reason and "not measured" not in record.reason:
            return  # the unavailable line already said it, once per backend
        self._say(live_line(record))

    def run_finished(self, results: Results) -> None:
        self._quiet_now.set()
        self.progress.stop()

    def heartbeat_line(self, now: float) -> str | None:
        """What a run with no terminal says when nothing was said for ``heartbeat_s`` by ``now``, or None."""
        if now - self.said_at < self.heartbeat_s:
            return None
        minutes, secs = divmod(int(now - self.started), 60)
        counts = f"{self.measured}/{self.total or '?'} measurements"
        if self.cells_total is not None:
            counts += f", {self.cells_done}/{self.cells_total} cells done"
        line = f"still measuring after {minutes}:{secs:02d}: {self.under_way or 'starting workers'}; {counts}"
        if self.last_cell in self.processes:
            label, n = self.processes[self.last_cell]
            line += f"; {label}: {n} process{'es' if n != 1 else ''} so far"
        return line

    def _heartbeats(self) -> None:
        # Wakes a few times a heartbeat: the parent shares the cores with what is being timed.
        while not self._quiet_now.wait(self.heartbeat_s / 3):
            line = self.heartbeat_line(time.monotonic())
            if line is not None:
                self._say(line, markup=False)

    def _say(self, line: str, markup: bool = True) -> None:
        """Print a line above the bar (or alone), flushed at once so that a log shows it as it happens."""
        self.progress.console.print(line, markup=markup, soft_wrap=self.plain)
        self.said_at = time.monotonic()
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream: the run goes on
            self.progress.console.file.flush()

    def stopping(self, signum: int) -> None:
        """A stop signal arrived (runs inside the signal handler: print, nothing more)."""
        self.progress.console.print(
            "[yellow]stopping: keeping the measurements already made "
            "(press Ctrl-C again to stop at once)[/]")


def progress_text(backend: str, device: str, replicate: int, environment: str = "") -> str:
    """What the bar says while a worker measures: ``numpy/cpu [np126] process 2``."""
    where = f" [{environment}]" if environment else ""
    return f"{backend}/{device}{escape(where)} process {replicate + 1}"


def live_line(r: Record) -> str:
    """``matmul large  PyTorch CPU  12.3 ms ±0.8%, 3 processes`` with the status where it is not ok."""
    head = f"{r.workload} {r.size_label}  {r.config_label}"
    if r.status == "ok":
        n = len(r.warnings)
        warn = f" [yellow]({n} note{'s' if n != 1 else ''} under the table)[/]" if n else ""
        p = len(r.replicates)
        processes = f", {p} process{'es' if p != 1 else ''}" if p else ""
        return f"[green]✓[/] {escape(head)}  {format_seconds(r.median_s)} {ci_text(r)}{processes}{warn}"
    colour = "red" if r.status in ("failed", "wrong") else "dim"
    return f"[{colour}]✗ {escape(printable(head))}  {r.status}: {escape(printable(r.reason))}[/]"


class JsonLinesReporter(Reporter):
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
                discard(sys.stdout)


#: Seconds between two updates of the line, at least.
MIN_INTERVAL = 0.5


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython is never imported for the question's sake)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class NotebookProgress(_Counting):
    """The run's progress in one line of the running cell, updated in place."""

    def __init__(self, cells: int | None = None) -> None:
        super().__init__(cells)
        self.last = ""
        self.skipped: list[str] = []
        self.shown = 0.0
        self.handle: Any = None

    def run_started(self, total: int) -> None:
        from IPython.display import display

        super().run_started(total)
        self.handle = display(self._data("starting"), raw=True, display_id=True)
        self.shown = self.started

    def config_unavailable(self, backend: str, device: str, reason: str) -> None:
        self.skipped.append(f"{backend}/{device}")
        self._show()

    def replicate_done(self, cell: "Cell", index: int, replicate: "Replicate") -> None:
        super().replicate_done(cell, index, replicate)
        self._show()

    def record_done(self, record: "Record") -> None:
        super().record_done(record)
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
        parts = [f"{self.measured}/{self.total} measurements", f"{self.cells_done} cells done",
                 f"{elapsed:.0f} s"]
        if self.last:
            parts.append(f"last: {self.last}")
        if self.skipped:
            parts.append(f"not available here: {', '.join(self.skipped)}")
        text = f"arraybench {state}: " + " · ".join(parts)
        bar = f"<progress value='{self.measured}' max='{self.total}' style='width: 12em'></progress> "
        return {"text/plain": text, "text/html": f"<div>{bar}{html.escape(text)}</div>"}
