"""matplotlib, set up once for every plot arraybench draws.

Figures are made with the object-oriented API (``Figure``), never through ``pyplot``: drawing
leaves no global state behind, needs no GUI backend, and does not change a notebook's own
matplotlib settings (the style applies only while a figure is drawn and saved).
"""

from __future__ import annotations

import functools
import io
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, TypeVar

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from ..files import write_atomic
from ..units import format_factor, format_seconds

__all__ = ["Axes", "Figure", "PALETTE", "PlotWarning", "drawn", "log_axis", "plain",
           "render_svg", "save", "styled"]

PALETTE = {
    "numpy": "#4c72b0",
    "torch": "#dd8452",
    "jax": "#55a868",
    "cupy": "#c44e52",
    "mlx": "#8172b3",
}

STYLE = {
    "svg.fonttype": "none",  # text stays text: searchable, small files
    "svg.hashsalt": "arraybench",  # stable ids, so re-drawing the same data gives the same file
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
}

F = TypeVar("F", bound=Callable[..., Any])


def styled(draw: F) -> F:
    """Run a drawing function with arraybench's style (axes read it when they are created)."""

    @functools.wraps(draw)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with matplotlib.rc_context(STYLE):
            return draw(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


class _PlainLog(LogFormatter):
    """A log axis's tick labels as plain text ("10 µs", "0.1×", "1,000"): matplotlib's own
    labels are mathtext ("$10^{-5}$"), which a reader must convert and which costs a third of
    drawing a plot. Which ticks get a label stays matplotlib's rule."""

    def __init__(self, text: Callable[[float], str]) -> None:
        super().__init__()
        self._text = text

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return self._text(x)


def _number(x: float) -> str:
    return f"{x:,.0f}" if x >= 1 else f"{x:g}"


_TICKS: dict[str, Callable[[float], str]] = {
    "seconds": format_seconds,
    "ratio": format_factor,
    "number": _number,
}


def log_axis(ax: Axes, which: str, ticks: str = "number", scale: float = 1.0) -> None:
    """Put ``ax``'s ``which`` axis ("x" or "y") on a log scale, its ticks labelled as
    ``ticks`` says: "seconds" (in a unit each), "ratio" ("10×") or "number"; ``scale``: what
    one unit of the data is (1e-3: the data are milliseconds)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    text = _TICKS[ticks]
    axis.set_major_formatter(_PlainLog(lambda x: text(x * scale)))
    axis.set_minor_formatter(_PlainLog(lambda x: text(x * scale)))


def plain(text: object) -> str:
    """Text from data (a workload's name, a machine's label) as matplotlib must show it: as is.

    matplotlib reads text between two ``$`` as mathtext; a name holding ``$`` would be typeset,
    or fail to parse and lose the plot. An escaped ``\\$`` is drawn as a plain ``$``.
    """
    return str(text).replace("$", r"\$")


def render_svg(fig: Figure) -> str:
    """The figure as SVG markup; drawing happens here, so a figure that cannot be drawn raises
    here and not half way through writing a file."""
    buffer = io.StringIO()
    with matplotlib.rc_context(STYLE):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buffer.getvalue()


class PlotWarning(UserWarning):
    """A plot could not be drawn and was left out; every other file of the report was written."""


def drawn(draw: Callable[[], Figure | None], name: str) -> str | None:
    """The SVG of one plot; None when there is nothing to draw, or when drawing fails.

    Records come from files anyone can edit, and matplotlib has more ways to refuse data than can
    be checked beforehand (a log axis with nothing positive on it, a label it cannot typeset): one
    plot that cannot be drawn costs only itself, with a ``PlotWarning`` naming it and why.
    """
    try:
        fig = draw()
        return None if fig is None else render_svg(fig)
    except Exception as exc:  # see above: the report, the Markdown and the CSV must still be written
        warnings.warn(PlotWarning(f"{name} could not be drawn ({type(exc).__name__}: "
                                  f"{' '.join(str(exc).split())[:200]}); it is left out"), stacklevel=2)
        return None


def save(fig: Figure, path: Path) -> Path:
    """Write an SVG atomically (as results.json is): a reader never sees half a plot."""
    return write_atomic(path, render_svg(fig))


def show_in_notebooks() -> None:
    """Let IPython display arraybench's figures as images.

    IPython shows a figure as an image through formatters that matplotlib's inline backend
    registers once pyplot is imported; figures made without pyplot need their own.
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return
    from IPython.core.pylabtools import print_figure

    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type(Figure, lambda fig: print_figure(fig, "png", bbox_inches="tight"))
