"""Achieved rates and the roofline: every result set against its machine's own ceilings, the best
matmul rate and memory bandwidth any library reached on that machine, device and dtype in the run's
``ceiling_*`` records (``--roofline``). Four libraries within 15% on a large matmul all call a BLAS
at the ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..model.record import Record
from .grouping import is_valid


@dataclass(frozen=True)
class Ceiling:
    """What one device of one machine reaches in one dtype: FLOP/s and bytes/s, with who reached
    them. ``machine`` is the records' label ("" for a run's own machine)."""

    device: str
    dtype: str
    peak_flops: float | None
    bandwidth: float | None
    peak_by: str = ""
    bandwidth_by: str = ""
    machine: str = ""

    @property
    def ridge(self) -> float | None:
        """The arithmetic intensity (FLOP per byte) where memory stops being the limit."""
        return self.peak_flops / self.bandwidth if self.peak_flops and self.bandwidth else None


CeilingKey = tuple[str, str, str]


def achieved(r: Record) -> tuple[float | None, float | None]:
    """(FLOP/s, bytes/s) that a valid record reached; None where its workload has no model."""
    if not is_valid(r):
        return None, None
    return r.flops / r.median_s if r.flops else None, r.bytes / r.median_s if r.bytes else None


def ceiling_key(r: Record) -> CeilingKey:
    """(machine, device, dtype): the ceiling a record is set against."""
    return (r.machine, r.device, r.dtype)


def ceilings(records: Iterable[Record]) -> dict[CeilingKey, Ceiling]:
    """Ceilings per (machine, device, dtype) from the ``ceiling_*`` records of a run."""
    best: dict[CeilingKey, dict[str, tuple[float | None, str]]] = {}
    for r in records:
        if not is_valid(r) or not r.workload.startswith("ceiling_"):
            continue
        slot = best.setdefault(ceiling_key(r), {"flops": (None, ""), "bytes": (None, "")})
        rates = dict(zip(("flops", "bytes"), achieved(r)))
        what = {"ceiling_matmul": "flops", "ceiling_bandwidth": "bytes"}.get(r.workload, "")
        if rates.get(what) and rates[what] > (slot[what][0] or 0.0):
            slot[what] = (rates[what], r.config_label)
    return {key: Ceiling(key[1], key[2], v["flops"][0], v["bytes"][0], v["flops"][1], v["bytes"][1],
                         machine=key[0]) for key, v in best.items()}


def share(r: Record, table: dict[CeilingKey, Ceiling]) -> float | None:
    """Achieved over attainable: how close a result comes to what its own machine allows."""
    ceiling = table.get(ceiling_key(r))
    flops, moved = achieved(r)  # both None where invalid, and so no share below
    if ceiling is None:
        return None
    if flops and r.bytes and ceiling.peak_flops and ceiling.bandwidth:
        attainable = min(ceiling.peak_flops, (r.flops / r.bytes) * ceiling.bandwidth)
        return flops / attainable
    if moved and ceiling.bandwidth and not r.flops:
        return moved / ceiling.bandwidth
    if flops and ceiling.peak_flops:
        return flops / ceiling.peak_flops
    return None
