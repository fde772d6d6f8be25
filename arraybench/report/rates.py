"""Achieved rates (FLOP/s, bytes/s) of a record: the work of one call over its median time.

A record carries the work of one call (``flops``, ``bytes``, from its workload's model). Shares of
the machine's ceilings are ``report/roofline.py``'s.
"""

from __future__ import annotations

from ..records import Record
from ..units import format_rate
from .common import is_valid


def achieved(r: Record) -> tuple[float | None, float | None]:
    """(FLOP/s, bytes/s) that a valid record reached; None where its workload has no model."""
    if not is_valid(r):
        return None, None
    flops = r.flops / r.median_s if r.flops else None
    moved = r.bytes / r.median_s if r.bytes else None
    return flops, moved


def achieved_text(r: Record) -> str:
    """``"12.3 GFLOP/s · 1.2 GB/s"``, or ``"—"``."""
    flops, moved = achieved(r)
    parts = []
    if flops is not None:
        parts.append(format_rate(flops, "FLOP/s"))
    if moved is not None:
        parts.append(format_rate(moved, "B/s"))
    return " · ".join(parts) or "—"
