"""What a run tells a user interface as it goes (``arraybench.run(reporter=...)``). This base says
nothing: subclass what you need. Called between measurements, never while one is timed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .replicate import Replicate
    from .cell import Cell
    from .record import Record
    from .results import Results


class Reporter:
    """Progress events of a run; every method is optional."""

    def run_started(self, total: int) -> None:
        """``total`` measurements (cells times replicates) are about to be made."""

    def worker_started(self, backend: str, device: str, replicate: int, cells: int,
                       environment: str = "") -> None:
        """A worker process starts on ``cells`` cells, as their ``replicate``-th measurement;
        ``environment`` is passed only in a run that has some."""

    def config_unavailable(self, backend: str, device: str, reason: str) -> None:
        """A library or device cannot run here; its cells are skipped."""

    def replicate_done(self, cell: "Cell", index: int, replicate: "Replicate") -> None:
        """One process finished one cell."""

    def more_wanted(self, cell: "Cell", extra: int) -> None:
        """A cell wants ``extra`` more processes than counted so far (its interval is still wide)."""

    def record_done(self, record: "Record") -> None:
        """A cell's record is final (all its replicates are done, or it was skipped)."""

    def run_finished(self, results: "Results") -> None:
        """The run is over."""

    def stopping(self, signum: int) -> None:
        """A stop signal arrived; called inside the signal handler, so do nothing slow."""
