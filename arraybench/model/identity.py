"""A run's identity in the store, from its results alone, so that storing after the run and
``store import`` of its folder later agree.

``run_id`` is the id a run is given when it starts (``environment["run_id"]``, kept through
``--resume``, so the finished run replaces the interrupted one). Results without one (written
before it existed, or merged) are identified by a hash of what they are from their first moment:
when they started, on which machine, with which settings, measuring which cells. ``content_sha`` hashes everything, so importing the same file twice
adds nothing.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from .machines import machine_id_of

if TYPE_CHECKING:
    from .results import Results


def _sha(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, allow_nan=False).encode()).hexdigest()


def run_id(results: "Results") -> str:
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


def content_sha(results: "Results") -> str:
    """A hash of everything the results hold."""
    return _sha(results.to_dict())
