"""Achieved rates (FLOP/s, bytes/s) of a record: the work of one call over its median time.

A record carries the work of one call (``flops``, ``bytes``, from its workload's model). Shares of
the machine's ceilings are ``analysis/roofline.py``'s.
"""

from __future__ import annotations

from ..model.record import Record
from .grouping import is_valid


def achieved(r: Record) -> tuple[float | None, float | None]:
    """(FLOP/s, bytes/s) that a valid record reached; None where its workload has no model."""
    if not is_valid(r):
        return None, None
    flops = r.flops / r.median_s if r.flops else None
    moved = r.bytes / r.median_s if r.bytes else None
    return flops, moved
