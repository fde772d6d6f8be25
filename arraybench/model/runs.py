"""Runs as wholes: a run's identity in the results store, several runs merged into one, and what
the store gives back to be read as history (``RunInfo``, ``Entry``).

``run_id`` is given when a run starts; results without one are named by a hash of what they were
from their first moment, so storing after the run and ``store import`` later agree.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from ..errors import UsageError
from .machines import describe, machine_environment, machine_id_of, machines_of
from .results import Results, arraybench_version


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
        """The environment of the machine labelled ``label`` in this run ("": the run's own)."""
        return machine_environment(self.environment, label)


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


def _sha(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, allow_nan=False).encode()).hexdigest()


def run_id(results: Results) -> str:
    """The run's stable identity: 16 hex digits."""
    env = results.environment
    given = env.get("run_id")
    if isinstance(given, str) and given:
        return given
    data = results.to_dict()
    header = {
        "started": env.get("timestamp"),
        "machine": machine_id_of(env) or [env.get("platform"), env.get("cpu_model")],
        "settings": {k: v for k, v in data["settings"].items() if k != "timer"},
        "cells": sorted(f"{r.machine}|{r.key}" for r in results.records),
    }
    return _sha(header)[:16]


def content_sha(results: Results) -> str:
    """A hash of everything the results hold."""
    return _sha(results.to_dict())


def default_label(results: Results, index: int, taken: Sequence[str]) -> str:
    """A run's machine label when none is given: its folder's name, made valid and unique."""
    name = results.output_dir.name if results.output_dir is not None else ""
    label = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)[:40] or f"run{index + 1}"
    base, n = label, 2
    while label in taken:
        label = f"{base[:36]}-{n}"
        n += 1
    return label


def merge(runs: Sequence[Results], labels: Sequence[str]) -> Results:
    """One ``Results`` from several runs, each labelled as its machine (labels in the runs' order).

    A run that holds several machines already keeps them, as ``LABEL/ITS_LABEL``.
    """
    if len(runs) < 2:
        raise UsageError("merge needs at least two runs")
    if len(labels) != len(runs) or len(set(labels)) != len(labels):
        raise UsageError("give each run its own machine label")
    records = []
    machines: dict[str, dict] = {}
    settings: dict[str, dict] = {}
    errors = []
    for run, label in zip(runs, labels):
        if not re.fullmatch(r"[A-Za-z0-9_.\-]{1,40}", label):  # names files' rows, plots' legends
            raise UsageError(f"machine label {label!r} must be 1-40 letters, digits or _.-")
        machines.update({f"{label}/{own}" if own else label: dict(env)
                         for own, env in machines_of(run).items()})
        settings[label] = dict(run.settings)
        records += [replace(r, machine=f"{label}/{r.machine}" if r.machine else label) for r in run.records]
        errors += [{**e, "source": f"{label}: {e.get('source', '')}"} for e in run.errors]
    dtypes = {run.settings.get("dtype") for run in runs}
    started = sorted(str(run.environment.get("timestamp", "")) for run in runs)
    environment = {
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds"),
        "arraybench": arraybench_version(),
        "cpu_model": "; ".join(dict.fromkeys(str(m.get("cpu_model", "?")) for m in machines.values())),
        "machines": machines,
        "runs_started": [s for s in started if s],
    }
    merged_settings = {"merged_from": [run_id(run) for run in runs], "machines": settings}
    if len(dtypes) == 1:
        merged_settings["dtype"] = dtypes.pop()
    return Results(environment=environment, settings=merged_settings, records=records,
                   complete=all(run.complete for run in runs), errors=errors)


def same_machine_notes(runs: Sequence[Results], labels: Sequence[str]) -> list[str]:
    """A note for each two labels that name the same machine (two runs of one machine merged)."""
    seen: dict[str, str] = {}
    notes = []
    for run, label in zip(runs, labels):
        ident = machine_id_of(run.environment)
        if ident and ident in seen:
            notes.append(f"{seen[ident]} and {label} are the same machine ({describe(run.environment)}): "
                         "their differences are the runs', not the machines'")
        elif ident:
            seen[ident] = label
    return notes
