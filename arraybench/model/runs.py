"""Runs as wholes and the machines that measured them: machine identities, what differs between two
runs, a run's identity in the results store, runs merged into one (each record labelled with its
machine, ``environment["machines"][label]`` its environment), and the store's rows for history.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ..errors import UsageError
from . import schema
from . import version as arraybench_version
from .results import Results


class CrossMachineError(UsageError):
    """Two runs from different machines, compared without ``cross_machine=True``."""


#: The fingerprint's facts that make a machine another machine; the rest (kernel, driver, memory,
#: microcode) can change under the same one (``fingerprint_changes``).
IDENTITY = ("host_sha", "cpu_model", "arch", "cpu_count", "gpu_models")


def identity(fp: dict[str, Any]) -> dict[str, Any]:
    """The identity facts of a fingerprint (``IDENTITY``)."""
    gpus = fp.get("gpus") or []
    models = sorted(str(g.get("name")) for g in gpus if isinstance(g, dict))
    return {k: (models if k == "gpu_models" else fp.get(k)) for k in IDENTITY}


def machine_id(fp: dict[str, Any]) -> str:
    """A short stable name for a machine: a hash of its fingerprint's identity facts."""
    return hashlib.sha256(json.dumps(identity(fp), sort_keys=True).encode()).hexdigest()[:12]


def machine_id_of(env: Mapping[str, Any]) -> str:
    """The machine id of an environment: saved, or from its fingerprint; "" where a file cannot say."""
    saved = env.get("machine_id")
    if isinstance(saved, str) and saved:
        return saved
    fp = env.get("fingerprint")
    return machine_id(fp) if isinstance(fp, dict) else ""


def machines_of(results: Results) -> dict[str, Mapping[str, Any]]:
    """Each machine's environment by label: ``{"": env}`` for one machine's run."""
    return results.environment.get("machines") or {"": results.environment}


def machine_environment(env: Mapping[str, Any], label: str) -> Mapping[str, Any]:
    """The environment of the machine labelled ``label`` in a run's ``env`` ("": the run's own)."""
    return (env.get("machines") or {}).get(label) or env


def describe(env: Mapping[str, Any]) -> str:
    """A machine in a few words: ``"AMD EPYC 7B13, 2 cores, NVIDIA A100 (3f9c2a1b7d4e)"``."""
    fp = env.get("fingerprint") or {}
    cpu = env.get("cpu_model") or fp.get("cpu_model") or "unknown CPU"
    cores = env.get("cpu_count") or fp.get("cpu_count")
    parts = [str(cpu)] + ([f"{cores} cores"] if cores else [])
    gpus = env.get("gpus") or fp.get("gpus") or []
    names = [str(g.get("name")) for g in gpus if isinstance(g, Mapping) and g.get("name")]
    if names:
        parts.append(" + ".join(dict.fromkeys(names)))
    ident = machine_id_of(env)
    return ", ".join(parts) + (f" ({ident})" if ident else "")


#: Fingerprint facts that may change under one machine, in words.
_ATTRIBUTES = {"os": "kernel", "memory_gib": "memory (GiB)", "cpu_isa": "CPU features",
               "cpu_flags_sha": "CPU flags (microcode, hypervisor)",
               "cpu_physical_cores": "physical cores", "gpu_drivers": "GPU driver"}


def fingerprint_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(what, before, after) for the facts of one machine that changed between two runs."""
    def value(fp: Mapping[str, Any], key: str) -> Any:
        if key == "gpu_drivers":
            gpus = fp.get("gpus") or []
            return ", ".join(sorted({str(g.get("driver")) for g in gpus if isinstance(g, Mapping)}))
        found = fp.get(key)
        return " ".join(map(str, found)) if isinstance(found, list) else found

    seen = [(words, value(before, key), value(after, key)) for key, words in _ATTRIBUTES.items()]
    return [(words, str(a), str(b)) for words, a, b in seen if a is not None and b is not None and a != b]


def cross_machine_pairs(base: Results, new: Results) -> list[tuple[str, str]]:
    """(base machine, new machine) described, for each label whose identity differs between runs."""
    a, b = machines_of(base), machines_of(new)
    sides = [(env, b.get(label) or next(iter(b.values()))) for label, env in a.items()
             if label in b or (label == "" and len(b) == 1)]
    return [(describe(x), describe(y)) for x, y in sides
            if "" not in (ids := (machine_id_of(x), machine_id_of(y))) and ids[0] != ids[1]]


def check_same_machine(base: Results, new: Results, cross_machine: bool) -> list[tuple[str, str]]:
    """The machine pairs that differ; ``CrossMachineError`` for any, unless ``cross_machine``."""
    pairs = cross_machine_pairs(base, new)
    if pairs and not cross_machine:
        a, b = pairs[0]
        raise CrossMachineError(
            f"these runs are from different machines ({a} vs {b}); a difference between them is the "
            "machines' as much as the code's. Compare anyway with --cross-machine "
            "(cross_machine=True in Python)")
    return pairs


_ENV_KEYS = ("cpu_model", "cpu_count", "cpus_available", "gpu_name", "python", "platform", "blas")


def environment_differences(base: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(what, in base, in new) for the machine facts and library versions that differ."""
    out = [(k, str(base.get(k)), str(new.get(k))) for k in _ENV_KEYS if base.get(k) != new.get(k)]
    libs_a, libs_b = base.get("libraries") or {}, new.get("libraries") or {}
    return out + [(name, str(libs_a.get(name)), str(libs_b.get(name)))
                  for name in dict.fromkeys([*libs_a, *libs_b]) if libs_a.get(name) != libs_b.get(name)]


_SETTING_KEYS = ("threads", "processes", "max_processes", "max_time", "min_samples", "rel_ci", "cold",
                 "allow_tf32")


#: Settings whose command-line name is not their own.
_SETTING_NAMES = {"processes": "--processes (least)", "max_processes": "--processes (most)"}


def settings_differences(base: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(setting, in base, in new) for the run settings that change what a time means."""
    return [(_SETTING_NAMES.get(k, f"--{k.replace('_', '-')}"), str(base.get(k)), str(new.get(k)))
            for k in _SETTING_KEYS if k in base and k in new and base.get(k) != new.get(k)]


@dataclass(frozen=True)
class RunInfo:
    """One stored run, as history needs it."""

    run_id: str
    started_at: str
    complete: bool
    environment: dict[str, Any]
    settings: dict[str, Any]
    context: dict[str, Any]


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
    median_s: float | None = field(metadata=schema.SECONDS)
    ci_low_s: float | None = field(metadata=schema.SECONDS)
    ci_high_s: float | None = field(metadata=schema.SECONDS)
    n_replicates: int


def _sha(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, allow_nan=False).encode()).hexdigest()


def run_id(results: Results) -> str:
    """The run's stable identity (16 hex digits): given when it started, else a hash of what it was
    from its first moment, so storing after the run and ``store import`` later agree."""
    env = results.environment
    given = env.get("run_id")
    if isinstance(given, str) and given:
        return given
    header = {
        "started": env.get("timestamp"),
        "machine": machine_id_of(env) or [env.get("platform"), env.get("cpu_model")],
        "settings": {k: v for k, v in schema.to_json(results.settings).items() if k != "timer"},
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
    """One ``Results`` from several runs, each labelled as its machine (labels in the runs' order);
    a run that holds several machines already keeps them, as ``LABEL/ITS_LABEL``."""
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
