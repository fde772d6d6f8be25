"""The plot of a comparison: new/base per cell on a log axis, coloured by verdict."""

from __future__ import annotations

from pathlib import Path

from ..analysis.compare import FASTER, SLOWER, Comparison
from ..analysis.grouping import size_text
from ..files import write_atomic
from .mpl import Figure, drawn, log_axis, plain, styled

_COLOURS = {FASTER: "#2e7d32", SLOWER: "#c62828"}
_SAME = "#9e9e9e"


def compare_plot(comparison: Comparison, path: Path) -> Path | None:
    """Write ``compare_figure`` as an SVG; None when no cell could be compared (or the plot could
    not be drawn: a ``PlotWarning`` says why)."""
    svg = drawn(lambda: compare_figure(comparison), path.name)
    return None if svg is None else write_atomic(path, svg)


@styled
def compare_figure(comparison: Comparison) -> Figure | None:
    """Horizontal bars from 1 to new/base, with a conservative interval from the two CIs.

    Left of 1 the new run is faster. The shaded band is the threshold within which a change is negligible. Returns None when no cell could be compared.
    """
    cells = comparison.comparable
    if not cells:
        return None
    fig = Figure(figsize=(8.5, max(2.4, 0.32 * len(cells) + 1.6)))
    ax = fig.subplots()
    ys = list(range(len(cells)))[::-1]
    t = comparison.threshold
    ax.axvspan(1 / (1 + t), 1 + t, color="#eeeeee", zorder=0, label=f"±{t:.0%}: negligible")
    ax.axvline(1.0, color="#333333", lw=0.8, zorder=1)
    for y, c in zip(ys, cells):
        colour = _COLOURS.get(c.verdict, _SAME)
        ax.barh(y, c.ratio - 1, left=1, height=0.6, color=colour, zorder=2)
        lo, hi = c.ratio_low, c.ratio_high
        if lo is not None and hi is not None:
            ax.errorbar(c.ratio, y, xerr=[[max(c.ratio - lo, 0)], [max(hi - c.ratio, 0)]],
                        color="#333333", capsize=2, lw=0.8, zorder=3)
        # The numbers go in a column right of the axes, where no bar can cover them.
        ax.text(1.01, y, f"{c.ratio:.3f}  {c.verdict}", transform=ax.get_yaxis_transform(),
                va="center", fontsize=7, color=colour if c.verdict in _COLOURS else "#555555")
    ax.set_yticks(ys)
    ax.set_yticklabels([plain(f"{c.new.workload} {size_text(c.new)} · {c.new.config_label}") for c in cells],
                       fontsize=8)
    log_axis(ax, "x", "ratio")
    lows = [c.ratio_low or c.ratio for c in cells] + [1 / (1 + t)]
    highs = [c.ratio_high or c.ratio for c in cells] + [1 + t]
    ax.set_xlim(min(lows) / 1.15, max(highs) * 1.15)
    ax.set_xlabel("time per call, new / base (log): left of 1 is faster · whisker: from the two 95% CIs")
    g = comparison.geometric_mean
    title = "new vs base"
    if g is not None:
        title += f" — geometric mean {g:.3f}"
        ax.axvline(g, color="#1565c0", lw=1, ls="--", zorder=1, label=f"geometric mean {g:.3f}")
    ax.set_title(title)
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.1 - 1.2 / (len(cells) + 4)),
              ncol=2)
    return fig
