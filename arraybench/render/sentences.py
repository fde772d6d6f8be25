"""A run's findings as people read them: sentences, in a notebook and at a prompt alike."""

from __future__ import annotations

import html


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
