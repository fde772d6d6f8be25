"""A run's findings as people read them: sentences, in a notebook and at a prompt alike."""

from __future__ import annotations

import html
import re

from ..analysis.grouping import comparison
from ..model.pair import Pairs
from ..model.record import Record
from ..units import format_ratio, format_speedup


def faster_by(a: Record, b: Record, pairs: Pairs) -> str:
    """How much faster ``a`` is than ``b``, by their pair where they took turns together (the
    ratio every table shows), else by their medians: ``1.50× faster``."""
    return format_speedup(comparison(a, b, pairs)[1])


_LOADED = re.compile(r"(\d+) of (\d+) rounds under other processes' load kept")


def under_load(a: Record, b: Record, pairs: Pairs) -> str:
    """Where the pair of ``a`` and ``b`` kept rounds that other processes loaded, what the sentence
    built on it says in the same breath: `` (N of M of their rounds under other processes' load)``;
    else ""."""
    found = pairs.between(a.cell, b.cell)
    seen = _LOADED.search(found.method) if found is not None else None
    return f" ({seen[1]} of {seen[2]} of their rounds under other processes' load)" if seen else ""


def why_not_apart(a: Record, b: Record, pairs: Pairs) -> str:
    """Why no verdict separates ``a`` and ``b``, as the sentence gives it: their pair's ratio and
    interval where they took turns together (the medians, over all processes, come from other
    rounds), and why it was not judged where it was not."""
    found = pairs.between(a.cell, b.cell)
    if found is None:
        return "this run cannot say which is faster"
    said = (f"round by round, the first takes {format_ratio(found.ratio)} the time of the second, "
            f"95% interval {format_ratio(found.ci_low)} to {format_ratio(found.ci_high)}: "
            "this run cannot say which is faster")
    if "not judged" in found.method:
        said += ", not judged: " + found.method.split("not judged")[1].lstrip(": (").rstrip(")")
    return said


def not_apart(a: Record, b: Record, pairs: Pairs) -> str:
    """How a sentence says that no verdict separates ``a`` and ``b``: ``level`` (within ±5%,
    with 95% confidence), or ``not told apart`` (the run cannot say which is faster)."""
    return "level" if comparison(a, b, pairs)[0] == "level" else "not told apart"


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
