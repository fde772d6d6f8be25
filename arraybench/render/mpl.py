"""matplotlib, set up once for every plot arraybench draws.

Figures are made with the object-oriented API (``Figure``), never through ``pyplot``: drawing
leaves no global state behind, needs no GUI backend, and does not change a notebook's own
matplotlib settings (the style applies only while a figure is drawn and saved).
"""

from __future__ import annotations

import functools
import io
import sys
from pathlib import Path
from typing import Any, Callable, TypeVar

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..files import write_atomic

__all__ = ["Axes", "Figure", "PALETTE", "new_figure", "save", "styled"]

PALETTE = {
    "numpy": "#4c72b0",
    "torch": "#dd8452",
    "jax": "#55a868",
    "cupy": "#c44e52",
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


def new_figure(figsize: tuple[float, float]) -> Figure:
    """An empty figure that belongs to no pyplot window."""
    return Figure(figsize=figsize)


def save(fig: Figure, path: Path) -> Path:
    """Write an SVG atomically (as results.json is): a reader never sees half a plot."""
    buffer = io.StringIO()
    with matplotlib.rc_context(STYLE):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return write_atomic(path, buffer.getvalue())


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
