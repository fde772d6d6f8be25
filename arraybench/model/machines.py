"""Which machine measured what: a run's machines, their identities, and what changed on one of them.

Results of several machines label each record with its machine, ``environment["machines"][label]``
being that machine's environment; records of different machines are never compared silently.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import UsageError

if TYPE_CHECKING:
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


def machines_of(results: "Results") -> dict[str, Mapping[str, Any]]:
    """Each machine's environment by label: ``{"": env}`` for one machine's run."""
    several = results.environment.get("machines")
    if isinstance(several, Mapping) and several:
        return {str(k): v for k, v in several.items() if isinstance(v, Mapping)}
    return {"": results.environment}


def machine_environment(env: Mapping[str, Any], label: str) -> Mapping[str, Any]:
    """The environment of the machine labelled ``label`` in a run's ``env`` ("": the run's own)."""
    several = env.get("machines")
    own = several.get(label) if label and isinstance(several, Mapping) else None
    return own if isinstance(own, Mapping) else env


def describe(env: Mapping[str, Any]) -> str:
    """A machine in a few words: ``"AMD EPYC 7B13, 2 cores, NVIDIA A100 (3f9c2a1b7d4e)"``."""
    fp = env.get("fingerprint") if isinstance(env.get("fingerprint"), Mapping) else {}
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
    def drivers(fp: Mapping[str, Any]) -> str:
        gpus = fp.get("gpus") or []
        return ", ".join(sorted({str(g.get("driver")) for g in gpus if isinstance(g, Mapping)}))

    out = []
    for key, words in _ATTRIBUTES.items():
        a = drivers(before) if key == "gpu_drivers" else before.get(key)
        b = drivers(after) if key == "gpu_drivers" else after.get(key)
        if a is None or b is None or a == b:
            continue
        if isinstance(a, list) or isinstance(b, list):
            a, b = " ".join(map(str, a or [])), " ".join(map(str, b or []))
        out.append((words, str(a), str(b)))
    return out


def cross_machine_pairs(base: "Results", new: "Results") -> list[tuple[str, str]]:
    """(base machine, new machine) described, for each label whose identity differs between runs."""
    a, b = machines_of(base), machines_of(new)
    pairs = []
    for label in a:
        if label not in b and not (label == "" and len(b) == 1):
            continue
        env_a = a[label]
        env_b = b.get(label) or next(iter(b.values()))
        ida, idb = machine_id_of(env_a), machine_id_of(env_b)
        if ida and idb and ida != idb:
            pairs.append((describe(env_a), describe(env_b)))
    return pairs


def check_same_machine(base: "Results", new: "Results", cross_machine: bool) -> list[tuple[str, str]]:
    """The machine pairs that differ; ``CrossMachineError`` for any, unless ``cross_machine``."""
    pairs = cross_machine_pairs(base, new)
    if pairs and not cross_machine:
        a, b = pairs[0]
        raise CrossMachineError(
            f"these runs are from different machines ({a} vs {b}); a difference between them is the "
            "machines' as much as the code's. Compare anyway with --cross-machine "
            "(cross_machine=True in Python)")
    return pairs
