"""A run's context: free ``key=value`` labels (a commit, a branch, "after BIOS update").

They describe the circumstances of a run, not how it measures: they are saved in the run's
environment (``environment["context"]``, so in the journal and ``results.json``), never in
``RunOptions``, so giving them does not change what ``--resume`` continues. History attributes a
step to a label that changed between two runs.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from ..errors import UsageError

_KEY = re.compile(r"[A-Za-z0-9_.\-/]{1,64}")
MAX_VALUE = 500


def parse_context(labels: Mapping[str, Any] | Iterable[str] | None) -> dict[str, str]:
    """``{"commit": "abc"}`` or ``["commit=abc", "branch=main"]`` as a checked dict; ``UsageError``
    names a label that is not ``key=value``."""
    if labels is None:
        return {}
    pairs: list[tuple[str, Any]] = []
    if isinstance(labels, Mapping):
        pairs = list(labels.items())
    elif isinstance(labels, str):
        raise UsageError(f"context {labels!r}: give a list of key=value labels, or a dict")
    else:
        for item in labels:
            if not isinstance(item, str) or "=" not in item:
                raise UsageError(f"--context {item!r} is not key=value (e.g. --context commit=abc123)")
            key, _, value = item.partition("=")
            pairs.append((key.strip(), value.strip()))
    out: dict[str, str] = {}
    for key, value in pairs:
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise UsageError(f"--context key {key!r} must be 1-64 letters, digits or _.-/")
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise UsageError(f"--context {key}: the value must be text, not {value!r}")
        value = str(value)
        if len(value) > MAX_VALUE or any(ch in value for ch in "\n\r\0"):
            raise UsageError(f"--context {key}: the value must be one line of at most {MAX_VALUE} characters")
        out[key] = value
    return out
