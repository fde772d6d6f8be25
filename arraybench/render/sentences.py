"""A run's findings as people read them: sentences, in a notebook and at a prompt alike."""

from __future__ import annotations

import html

from ..analysis.grouping import comparison
from ..model.record import Record
from ..units import format_speedup


def faster_by(a: Record, b: Record) -> str:
    """How much faster ``a`` is than ``b``, by their pair where they took turns together (the
    ratio every table shows), else by their medians: ``1.50× faster``."""
    return format_speedup(comparison(a, b)[1])


def not_apart(a: Record, b: Record) -> str:
    """How a sentence says that no verdict separates ``a`` and ``b``: ``level`` (within ±5%,
    with 95% confidence), or ``not told apart`` (the run cannot say which is faster)."""
    return "level" if comparison(a, b)[0] == "level" else "not told apart"


class Findings(list):
    """The findings of a run (``Results.findings()``): a list of sentences that shows as them.

    Still a list (index it, loop over it, compare it); in a notebook it displays as a bulleted
    list, and ``print`` or the prompt show one sentence a line.
    """

    def __str__(self) -> str:
        return "\n".join(f"- {sentence}" for sentence in self) if self else "(no findings)"

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        if not self:
            return "<p><i>no findings</i></p>"
        items = "".join(f"<li>{html.escape(str(sentence))}</li>" for sentence in self)
        return f"<ul class='arraybench-findings'>{items}</ul>"
