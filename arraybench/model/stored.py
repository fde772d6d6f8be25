"""What a results store gives back to be read as history: one stored run (``RunInfo``) and one stored
record (``Entry``), a cell of one run on one machine with its median and interval. Plain data:
``store.Store.entries`` makes them, ``analysis.history`` reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class RunInfo:
    """One stored run, as history needs it."""

    run_id: str
    started_at: str
    complete: bool
    environment: dict[str, Any]
    settings: dict[str, Any]
    context: dict[str, Any]

    def machine_environment(self, label: str) -> Mapping[str, Any]:
        """The environment of the machine labelled ``label`` in this run ("" : the run's own)."""
        several = self.environment.get("machines")
        if label and isinstance(several, Mapping) and isinstance(several.get(label), Mapping):
            return several[label]
        return self.environment


@dataclass(frozen=True)
class Entry:
    """One stored record: a cell of one run on one machine, with its median and interval."""

    run_id: str
    machine: str
    machine_id: str
    cell: str
    workload: str
    size_label: str
    size: int
    backend: str
    device: str
    dtype: str
    mode: str
    transfer: bool
    status: str
    median_s: float | None
    ci_low_s: float | None
    ci_high_s: float | None
    n_replicates: int
