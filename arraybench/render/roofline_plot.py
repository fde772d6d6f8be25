"""The roofline plot: every result with a work model against the machine's measured ceilings."""

from __future__ import annotations

from typing import Sequence

from ..analysis.grouping import config_sort_key, is_valid
from ..analysis.roofline import ceiling_key, ceilings
from ..model.record import Record
from ..units import format_rate
from .mpl import PALETTE, Figure, log_axis, plain, styled


@styled
def roofline_figure(records: Sequence[Record]) -> Figure | None:
    """Records against the ceilings, one panel per device and dtype that has them."""
    table = ceilings(records)
    panels = [k for k, c in table.items() if c.peak_flops and c.bandwidth]
    if not panels:
        return None
    fig = Figure(figsize=(7.0 * len(panels), 5.0))
    axes = fig.subplots(1, len(panels), squeeze=False)
    for ax, key in zip(axes[0], panels):
        c = table[key]
        points = [r for r in records if is_valid(r) and ceiling_key(r) == key
                  and r.flops and r.bytes and not r.workload.startswith("ceiling_")]
        intensities = [r.flops / r.bytes for r in points] + [c.ridge]
        lo, hi = min(intensities) / 4, max(intensities) * 4
        xs = [lo * (hi / lo) ** (i / 100) for i in range(101)]
        ax.plot(xs, [min(c.peak_flops, x * c.bandwidth) / 1e9 for x in xs], color="#333333", lw=1.5)
        ax.annotate(plain(f"peak {format_rate(c.peak_flops, 'FLOP/s')} ({c.peak_by})"), (c.ridge, c.peak_flops / 1e9),
                    xytext=(-4, 6), textcoords="offset points", ha="right", va="bottom", fontsize=8)
        ax.annotate(plain(f"bandwidth {format_rate(c.bandwidth, 'B/s')} ({c.bandwidth_by})"),
                    (lo * 1.2, lo * 1.2 * c.bandwidth / 1e9), rotation=0, fontsize=8, va="bottom")
        seen: set[str] = set()
        for r in sorted(points, key=config_sort_key):
            label = plain(r.config_label) if r.config_label not in seen else None
            seen.add(r.config_label)
            ax.scatter(r.flops / r.bytes, r.flops / r.median_s / 1e9, color=PALETTE.get(r.backend, "#8172b2"),
                       marker="s" if r.device == "gpu" else "o", s=22, label=label, zorder=3)
            ax.annotate(plain(f"{r.workload} {r.size_label}"), (r.flops / r.bytes, r.flops / r.median_s / 1e9),
                        xytext=(3, 2), textcoords="offset points", fontsize=6, color="#555555")
        log_axis(ax, "x")
        log_axis(ax, "y")
        ax.set_xlabel("arithmetic intensity (FLOP per byte moved, log)")
        ax.set_ylabel("achieved GFLOP/s (log)")
        ax.set_title(f"Roofline — {key[1].upper()}, {key[2]}" + (f" @ {key[0]}" if key[0] else ""))
        ax.legend(fontsize=8, frameon=False, loc="lower right")
        ax.grid(True, which="major", alpha=0.25)
    return fig
