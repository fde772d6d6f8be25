"""Matplotlib, the only module that imports it: its setup, and the figures of a comparison and a history.

Figures use the object-oriented API (``Figure``), never ``pyplot``: no global state, no GUI backend,
and a notebook's own settings untouched (the style applies only while a figure is drawn).
"""

from __future__ import annotations

import io
import sys
import warnings
from pathlib import Path
from typing import Callable

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from .files import run_plot_name
from ..analysis.compare import FASTER, SLOWER, Comparison
from ..analysis.grouping import size_text
from ..analysis.history import History
from ..files import write_atomic
from ..units import format_seconds


PALETTE = {
    "numpy": "#4c72b0",
    "torch": "#dd8452",
    "jax": "#55a868",
    "cupy": "#c44e52",
    "mlx": "#8172b3",
}
MARKERS = "osD^v<>p"

STYLE = {
    "svg.fonttype": "none",  # text stays text: searchable, small files
    "svg.hashsalt": "arraybench",  # stable ids, so re-drawing the same data gives the same file
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    # Where matplotlib would put a title anyway (nothing sits above the axes): placing it itself
    # measures every tick label of the axes at each draw, a third of drawing a plot.
    "axes.titley": 1.0,
}

#: A decorator that draws with arraybench's style (axes read it when they are created); rc_context
#: starts afresh at each call.
styled = matplotlib.rc_context(STYLE)


class _PlainLog(LogFormatter):
    """A log axis's tick labels as plain text ("10 µs", "0.1×", "1,000"): matplotlib's own labels are mathtext
    ("$10^{-5}$"), which a reader must convert and which costs a third of drawing a plot."""

    def __init__(self, text: Callable[[float], str]) -> None:
        super().__init__()
        self._text = text

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return self._text(x)


_TICKS: dict[str, Callable[[float], str]] = {
    "seconds": format_seconds,
    "ratio": "{:g}×".format,  # a round factor: 0.1×, 1×, 30×
    "number": lambda x: f"{x:,.0f}" if x >= 1 else f"{x:g}",
}


def log_axis(ax: Axes, which: str, ticks: str = "number", scale: float = 1.0) -> None:
    """Put ``ax``'s ``which`` axis on a log scale labelled as ``ticks`` says; ``scale``: one unit of the data."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    text = _TICKS[ticks]
    axis.set_major_formatter(_PlainLog(lambda x: text(x * scale)))
    axis.set_minor_formatter(_PlainLog(lambda x: text(x * scale)))


def plain(text: object) -> str:
    """Text from data as matplotlib must show it: as is (``$`` escaped, or it would be read as mathtext)."""
    return str(text).replace("$", r"\$")


@styled
def render_svg(fig: Figure) -> str:
    """The figure as SVG markup, drawn here: a figure that cannot be drawn raises before any file is written."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buffer.getvalue()


class PlotWarning(UserWarning):
    """A plot could not be drawn and was left out; every other file of the report was written."""


def drawn(draw: Callable[[], Figure | None], name: str) -> str | None:
    """The SVG of one plot; None when there is nothing to draw, or when drawing fails (records come from
    files anyone can edit: a plot that cannot be drawn costs only itself, a ``PlotWarning`` says why)."""
    try:
        fig = draw()
        return None if fig is None else render_svg(fig)
    except Exception as exc:  # the report, the Markdown and the CSV must still be written
        warnings.warn(PlotWarning(f"{name} could not be drawn ({type(exc).__name__}: "
                                  f"{' '.join(str(exc).split())[:200]}); it is left out"), stacklevel=2)
        return None


def show_in_notebooks() -> None:
    """Let IPython display arraybench's figures as images."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return
    from IPython.core.pylabtools import print_figure

    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type(Figure, lambda fig: print_figure(fig, "png", bbox_inches="tight"))


_COLOURS = {FASTER: "#2e7d32", SLOWER: "#c62828"}


def compare_plot(comparison: Comparison, path: Path) -> Path | None:
    """Write ``compare_figure`` as an SVG; None when nothing could be compared or drawn."""
    svg = drawn(lambda: compare_figure(comparison), path.name)
    return None if svg is None else write_atomic(path, svg)


@styled
def compare_figure(comparison: Comparison) -> Figure | None:
    """Bars from 1 to new/base (left of 1: faster), an interval from the two CIs; None when no cell was compared."""
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
        colour = _COLOURS.get(c.verdict, "#9e9e9e")
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
    ax.legend(fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.1 - 1.2 / (len(cells) + 4)),
              ncol=2)
    return fig


@styled
def history_figure(history: "History", workload: str) -> Figure | None:
    """The history of one workload, or None when no series of it has a valid point."""
    series = [s for s in history.for_workload(workload) if any(p.valid for p in s.points)]
    if not series:
        return None
    sizes = list(dict.fromkeys(s.size_label for s in sorted(series, key=lambda s: s.size)))
    x_of = {run.run_id: i for i, run in enumerate(history.runs)}
    used = sorted({x_of[p.run.run_id] for s in series for p in s.points})
    machines = {s.machine_id for s in series}
    fig = Figure(figsize=(max(7.0, 0.5 * len(used) + 4), 3.0 * len(sizes) + 1.0))
    axes = fig.subplots(len(sizes), 1, squeeze=False, sharex=True)[:, 0]
    steps = {(id(st.series), st.after.run.run_id): st for st in history.steps}
    for ax, label in zip(axes, sizes):
        mine = [s for s in series if s.size_label == label]
        for i, s in enumerate(mine):
            pts = [p for p in s.points if p.valid]
            xs = [x_of[p.run.run_id] for p in pts]
            ys = [p.median_s for p in pts]
            err = [[max(p.median_s - p.low, 0) for p in pts], [max(p.high - p.median_s, 0) for p in pts]]
            colour = PALETTE.get(pts[0].entry.backend, "#8172b2") if pts else "#8172b2"
            name = s.label + (f" @ {s.machine_id[:6]}" if len(machines) > 1 else "")
            ax.errorbar(xs, ys, yerr=err, fmt="-", marker=MARKERS[i % len(MARKERS)], ms=4, capsize=2,
                        color=colour, lw=1, label=name)
            for p in pts:
                step = steps.get((id(s), p.run.run_id))
                if step is not None:
                    ax.scatter([x_of[p.run.run_id]], [p.median_s], marker="^" if step.slower else "v",
                               s=90, color="#cf222e" if step.slower else "#1a7f37", zorder=4)
        log_axis(ax, "y", "seconds")
        ax.set_ylabel("time per call (log)")
        ax.set_title(f"{workload} {mine[0].case}" if mine else workload, fontsize=10)
        ax.grid(True, axis="y", which="major", alpha=0.25)
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    for change in history.version_changes:
        if change.machine_id not in machines or change.run.run_id not in x_of:
            continue
        x = x_of[change.run.run_id] - 0.5
        for ax in axes:
            ax.axvline(x, color="#777777", lw=0.8, ls=":")
        axes[0].annotate(change.text, (x, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -2),
                         textcoords="offset points", fontsize=6, color="#444444", va="top",
                         rotation=90)
    axes[-1].set_xticks(used)
    axes[-1].set_xticklabels([history.runs[i].started_at[:16].replace("T", " ") for i in used], rotation=30,
                             ha="right", fontsize=7)
    axes[-1].set_xlabel("run (time order) · dotted: library versions changed · ▲ slower, ▼ faster: "
                        "a step called", fontsize=7, color="#555555")
    return fig


def write_history_plots(history: "History", out_dir: Path) -> list[Path]:
    """``history_<workload>.svg`` for every workload in the history; returns the files written."""
    figures = ((w, history_figure(history, w)) for w in dict.fromkeys(s.workload for s in history.series))
    return [write_atomic(Path(out_dir) / run_plot_name("history", w), render_svg(fig))
            for w, fig in figures if fig is not None]
