"""Achieved rates (FLOP/s, bytes/s) of a record, and its share of the machine's ceiling.

A record carries the work of one call (``flops``, ``bytes``, from its workload's model). The
ceilings are the machine's own peaks, stored with the results under ``environment["ceilings"]``,
keyed by ``"device/dtype"``::

    {"cpu/float64": {"flops_per_s": 1.1e11, "bytes_per_s": 1.9e10}, ...}

Where a run has no ceilings, reports leave the share out rather than guess one.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

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


def ceilings_of(environment: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """The valid ceilings of a run (``{}`` when it measured none)."""
    raw = environment.get("ceilings")
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, dict[str, float]] = {}
    for key, peaks in raw.items():
        if not isinstance(peaks, Mapping):
            continue
        kept = {k: float(v) for k, v in peaks.items()
                if k in ("flops_per_s", "bytes_per_s") and isinstance(v, (int, float))
                and not isinstance(v, bool) and math.isfinite(v) and v > 0}
        if kept:
            out[str(key)] = kept
    return out


def share_of_ceiling(r: Record, ceilings: Mapping[str, Mapping[str, float]]) -> float | None:
    """The record's rate over the roofline at its arithmetic intensity.

    The attainable rate is min(peak FLOP/s, intensity × peak bandwidth); dividing the achieved
    FLOP/s by it gives the larger of the two shares (compute, memory), which is what this returns.
    """
    peaks = ceilings.get(f"{r.device}/{r.dtype}")
    if not peaks:
        return None
    flops, moved = achieved(r)
    shares = []
    if flops is not None and "flops_per_s" in peaks:
        shares.append(flops / peaks["flops_per_s"])
    if moved is not None and "bytes_per_s" in peaks:
        shares.append(moved / peaks["bytes_per_s"])
    return max(shares) if shares else None


def achieved_text(r: Record) -> str:
    """``"12.3 GFLOP/s · 1.2 GB/s"``, or ``"—"``."""
    flops, moved = achieved(r)
    parts = []
    if flops is not None:
        parts.append(format_rate(flops, "FLOP/s"))
    if moved is not None:
        parts.append(format_rate(moved, "B/s"))
    return " · ".join(parts) or "—"
