"""What an executor is, and all it sees of a run: the narrow interface between the two.

The API picks the executor (``local.LocalExecutor`` or the cluster's ``ray.RayExecutor``) and
hands it to the session, which calls ``Executor.run`` with itself as the ``RunHandle``. An
executor asks the handle what is left and tells it what came home; it never measures, never
writes a file of the run's own, and never reaches past this interface into the session.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..model.replicate import Replicate
    from ..model.options import RunOptions
    from ..model.cell import Cell

from ..model.cell import Config


class RunHandle(Protocol):
    """A run in progress, as an executor sees it (``session.Session`` implements it)."""

    @property
    def cells(self) -> list[Cell]:
        """The plan's cells, in plan order."""

    @property
    def environment(self) -> dict[str, Any]:
        """The run's environment, to which an executor adds where it ran (a cluster's nodes)."""

    # -- what is left -------------------------------------------------------------------------
    def configs(self) -> list[Config]:
        """The (backend, device, environment) configurations of the plan, in plan order."""

    def is_unavailable(self, config: Config) -> bool:
        """The library or device cannot run here (journalled: its cells are final)."""

    def wanted(self, cell: Cell) -> int:
        """How many replicates the cell wants, given those it has."""

    def todo(self, config: Config, index: int) -> list[Cell]:
        """The cells of ``config`` still lacking their ``index``-th replicate, to try now."""

    def missing_indices(self, cell: Cell) -> list[int]:
        """The replicate indices the cell still lacks."""

    def replicates_of(self, cell: Cell) -> dict[int, Replicate]:
        """The cell's replicates so far, by index."""

    # -- what came home -----------------------------------------------------------------------
    def begin(self) -> None:
        """Measuring starts now (the total is told; unavailable configurations are final)."""

    def worker_started(self, config: Config, index: int, cells: int) -> None:
        """A worker starts on ``cells`` cells of ``config`` as their ``index``-th replicate."""

    def worker_ready(self, config: Config, index: int, info: dict[str, Any], pid: int | None) -> None:
        """A worker imported its library and said what it sees (journalled)."""

    def keep(self, cell: Cell, index: int, replicate: Replicate) -> None:
        """One replicate came home: journalled at once (``SaveError`` if it cannot be)."""

    def mark_unavailable(self, config: Config, reason: str) -> None:
        """A library or device cannot run here (journalled: its cells are skipped)."""

    def start_failed(self, config: Config, reason: str) -> None:
        """A worker died before it was ready: ``config`` is not tried again in this run."""

    def why_missing(self, cell: Cell, reason: str, *, overwrite: bool = True) -> None:
        """Why the cell stays missing, where it is not an interruption (a lost node)."""

    # -- whether to stop ----------------------------------------------------------------------
    def stop_requested(self) -> bool:
        """Finish the measurement under way and go no further."""

    def stop_now(self) -> bool:
        """Do not wait even for the measurement under way."""


class Executor(Protocol):
    """Decides where a run's replicates are measured and brings them home."""

    def plan(self, cells: list[Cell]) -> list[Cell]:
        """The run's cells as this executor measures them (a cluster may multiply them)."""

    def run(self, run: RunHandle, options: RunOptions, out_dir: Path) -> None:
        """Measure what ``run`` still lacks; return when nothing is left, nothing more can be
        measured, or the run was asked to stop."""

    def close(self) -> None:
        """Give back what the executor holds (a cluster connection)."""
