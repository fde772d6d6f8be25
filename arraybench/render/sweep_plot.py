"""Size sweeps: time per call (or GB/s for pure data movement) against size, one line per configuration.

Log-log axes, the 95% CI of each median as a band, and the crossovers against NumPy marked where
they fall.
"""

from __future__ import annotations

from typing import Sequence

from ..analysis.crossover import crossovers
from ..analysis.grouping import config_sort_key, is_valid
from ..model.record import Record
from .mpl import PALETTE, Figure, log_axis, plain, styled


def _is_transfer(records: Sequence[Record]) -> bool:
    return all((r.flops == 0 and (r.bytes or 0) > 0) for r in records if is_valid(r))


def size_axis_label(workload: str) -> str:
    """The size axis in the workload's own words (``size n: the side of each n x n matrix``);
    plain ``size n`` for a workload that does not say, or is not known here (a file's, not
    imported)."""
    from ..workloads.registry import REGISTRY

    known = REGISTRY.get(workload)
    means = getattr(known, "size_means", "") if known is not None else ""
    return f"size n: {means}" if means else "size n"


@styled
def sweep_figure(records: Sequence[Record], workload: str) -> Figure | None:
    """One workload across sizes; returns None if fewer than three sizes were measured."""
    mine = [r for r in records if r.workload == workload and is_valid(r)]
    if len({r.size for r in mine}) < 3:
        return None
    rate = _is_transfer(mine)
    by_config: dict[tuple, list[Record]] = {}
    for r in sorted(mine, key=lambda r: r.size):
        by_config.setdefault(config_sort_key(r), []).append(r)
    fig = Figure(figsize=(7.5, 4.6))
    ax = fig.subplots()
    markers = "osD^v<>p"
    for i, key in enumerate(sorted(by_config)):
        rs = by_config[key]
        xs = [r.size for r in rs]
        if rate:
            ys = [r.bytes / r.median_s / 1e9 for r in rs]
            lo = [r.bytes / (r.ci_high_s or r.median_s) / 1e9 for r in rs]
            hi = [r.bytes / (r.ci_low_s or r.median_s) / 1e9 for r in rs]
        else:
            ys = [r.median_s for r in rs]
            lo = [r.ci_low_s or r.median_s for r in rs]
            hi = [r.ci_high_s or r.median_s for r in rs]
        colour = PALETTE.get(rs[0].backend, "#8172b2")
        style = "--" if rs[0].device == "gpu" else (":" if rs[0].mode != "latency" else "-")
        ax.plot(xs, ys, style, marker=markers[i % len(markers)], ms=4, color=colour, label=plain(rs[0].config_label))
        ax.fill_between(xs, lo, hi, color=colour, alpha=0.15, linewidth=0)
    log_axis(ax, "x")
    log_axis(ax, "y", "number" if rate else "seconds")
    ax.set_xlabel(size_axis_label(workload))
    if rate:
        ax.set_ylabel("GB/s moved (log), higher is better")
    else:
        ax.set_ylabel("time per call (log), lower is better")
    dtype = mine[0].dtype
    ax.set_title(plain(f"{workload} across sizes, {dtype}"))
    for c in crossovers(mine):
        if c.kind == "from" and c.b.startswith("NumPy CPU") and c.size:
            ax.axvline(c.size, color="#777777", lw=0.8, ls=":")
            ax.annotate(plain(f"{c.a} ahead\nfrom n≈{c.size:,.0f}"), (c.size, ax.get_ylim()[1]), xytext=(3, -3),
                        textcoords="offset points", fontsize=7, va="top", color="#444444")
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(True, which="major", alpha=0.25)
    return fig
