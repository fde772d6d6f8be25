"""The roofline: every result set against the machine's own measured ceilings.

A workload declares its work (FLOPs and bytes moved); a record's achieved rate is that work over its
median time. The ceilings come from the run's own ``ceiling_*`` records (``--roofline``): the best
memory bandwidth and the best matmul rate any library reached on that device and dtype. A result's
attainable rate is min(peak, intensity x bandwidth); its share of the ceiling is achieved over
attainable. This is what explains four libraries landing within 15% of each other on a large
matmul: they all call a BLAS that runs at the ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ..records import Record
from ..units import format_rate
from .common import config_sort_key, is_valid
from .rates import achieved
from .plots import _PALETTE, _save, plt


@dataclass(frozen=True)
class Ceiling:
    """What one device reaches in one dtype: FLOP/s and bytes/s, with who reached them."""

    device: str
    dtype: str
    peak_flops: float | None
    bandwidth: float | None
    peak_by: str = ""
    bandwidth_by: str = ""

    @property
    def ridge(self) -> float | None:
        """The arithmetic intensity (FLOP per byte) where memory stops being the limit."""
        if self.peak_flops and self.bandwidth:
            return self.peak_flops / self.bandwidth
        return None


def ceilings(records: Iterable[Record]) -> dict[tuple[str, str], Ceiling]:
    """Ceilings per (device, dtype) from the ``ceiling_*`` records of a run."""
    best: dict[tuple[str, str], dict[str, tuple[float, str]]] = {}
    for r in records:
        if not is_valid(r) or not r.workload.startswith("ceiling_"):
            continue
        slot = best.setdefault((r.device, r.dtype), {})
        if r.workload == "ceiling_matmul" and r.flops:
            rate = r.flops / r.median_s
            if rate > slot.get("flops", (0.0, ""))[0]:
                slot["flops"] = (rate, r.config_label)
        if r.workload == "ceiling_bandwidth" and r.bytes:
            rate = r.bytes / r.median_s
            if rate > slot.get("bytes", (0.0, ""))[0]:
                slot["bytes"] = (rate, r.config_label)
    return {
        key: Ceiling(key[0], key[1], v.get("flops", (None, ""))[0], v.get("bytes", (None, ""))[0],
                     v.get("flops", (None, ""))[1], v.get("bytes", (None, ""))[1])
        for key, v in best.items()
    }


def share(r: Record, table: dict[tuple[str, str], Ceiling]) -> float | None:
    """Achieved over attainable: how close a result comes to what the machine allows."""
    ceiling = table.get((r.device, r.dtype))
    flops, moved = achieved(r)
    if ceiling is None or (flops is None and moved is None):
        return None
    if flops and r.bytes and ceiling.peak_flops and ceiling.bandwidth:
        attainable = min(ceiling.peak_flops, (r.flops / r.bytes) * ceiling.bandwidth)
        return flops / attainable
    if moved and ceiling.bandwidth and not r.flops:
        return moved / ceiling.bandwidth
    if flops and ceiling.peak_flops:
        return flops / ceiling.peak_flops
    return None


def roofline_plot(records: Sequence[Record], path: Path) -> Path | None:
    """Records against the ceilings, one panel per device and dtype that has them."""
    table = ceilings(records)
    panels = [k for k, c in table.items() if c.peak_flops and c.bandwidth]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(7.0 * len(panels), 5.0), squeeze=False)
    for ax, key in zip(axes[0], panels):
        c = table[key]
        points = [r for r in records if is_valid(r) and r.device == key[0] and r.dtype == key[1]
                  and r.flops and r.bytes and not r.workload.startswith("ceiling_")]
        intensities = [r.flops / r.bytes for r in points] + [c.ridge]
        lo, hi = min(intensities) / 4, max(intensities) * 4
        xs = [lo * (hi / lo) ** (i / 100) for i in range(101)]
        ax.plot(xs, [min(c.peak_flops, x * c.bandwidth) / 1e9 for x in xs], color="#333333", lw=1.5)
        ax.annotate(f"peak {format_rate(c.peak_flops, 'FLOP/s')} ({c.peak_by})", (c.ridge, c.peak_flops / 1e9),
                    xytext=(-4, 6), textcoords="offset points", ha="right", va="bottom", fontsize=8)
        ax.annotate(f"bandwidth {format_rate(c.bandwidth, 'B/s')} ({c.bandwidth_by})",
                    (lo * 1.2, lo * 1.2 * c.bandwidth / 1e9), rotation=0, fontsize=8, va="bottom")
        seen: set[str] = set()
        for r in sorted(points, key=config_sort_key):
            label = r.config_label if r.config_label not in seen else None
            seen.add(r.config_label)
            ax.scatter(r.flops / r.bytes, r.flops / r.median_s / 1e9, color=_PALETTE.get(r.backend, "#8172b2"),
                       marker="s" if r.device == "gpu" else "o", s=22, label=label, zorder=3)
            ax.annotate(f"{r.workload} {r.size_label}", (r.flops / r.bytes, r.flops / r.median_s / 1e9),
                        xytext=(3, 2), textcoords="offset points", fontsize=6, color="#555555")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP per byte moved, log)")
        ax.set_ylabel("achieved GFLOP/s (log)")
        ax.set_title(f"Roofline — {key[0].upper()}, {key[1]}")
        ax.legend(fontsize=8, frameon=False, loc="lower right")
        ax.grid(True, which="major", alpha=0.25)
    return _save(fig, path)
