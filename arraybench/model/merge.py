"""Several runs as one set of results, with the machine as a dimension.

Each run's records get its label (``Record.machine``), and ``environment["machines"][label]``
keeps that run's whole environment, so each machine's ceilings, versions and settings stay with
its own records. The merged results say where they came from (``settings["merged_from"]``: the
runs' store ids), and the store refuses them as a run of their own: their runs are stored already.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import replace
from typing import Sequence

from ..errors import UsageError
from .machines import describe, machine_id_of, machines_of
from .results import Results, arraybench_version

_LABEL = re.compile(r"[A-Za-z0-9_.\-]{1,40}")


def check_label(label: str) -> str:
    """A machine label: 1-40 letters, digits or ``_.-`` (it names files' rows and plot legends)."""
    if not _LABEL.fullmatch(label):
        raise UsageError(f"machine label {label!r} must be 1-40 letters, digits or _.-")
    return label


def default_label(results: Results, index: int, taken: Sequence[str]) -> str:
    """A run's machine label when none is given: its folder's name (made a valid label, and told
    apart from the labels ``taken`` already)."""
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
    from .identity import run_id

    if len(runs) < 2:
        raise UsageError("merge needs at least two runs")
    if len(labels) != len(runs) or len(set(labels)) != len(labels):
        raise UsageError("give each run its own machine label")
    records = []
    machines: dict[str, dict] = {}
    settings: dict[str, dict] = {}
    errors = []
    for run, label in zip(runs, labels):
        check_label(label)
        inner = machines_of(run)
        for own, env in inner.items():
            name = label if not own else f"{label}/{own}"
            machines[name] = dict(env)
        settings[label] = dict(run.settings)
        for r in run.records:
            records.append(replace(r, machine=label if not r.machine else f"{label}/{r.machine}"))
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
