"""The console the commands print to: it shows text, it never obeys it.

Everything arraybench prints through rich goes through ``SafeConsole`` (``console()`` and
``stdout_console()`` make one). Text that came from outside (a workload's name or error, a
``--context`` value, a path, a stored run) may hold control characters or rich markup:

- control characters (ESC sequences that clear the screen, set the title, open a hyperlink; bells,
  carriage returns) are shown escaped as ``\\x1b``, in every string, ``Text`` and table cell, at
  the one place segments become output (``render``), and before markup is read (``render_str``);
- no hyperlink (OSC 8) is ever emitted: a ``[link=…]`` that reached a style is dropped;
- markup that cannot be read (``a[/]``) is shown as it is written instead of raising
  ``MarkupError``. Callers still escape what they put into markup (``rich.markup.escape``) or
  pass ``Text``/``markup=False``, so that ``tag=[v1]`` is not read as a style and eaten.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.errors import MarkupError
from rich.segment import Segment
from rich.text import Text

from ..errors import printable

#: The longest text rich's highlighter colours (numbers, paths); longer text prints plain.
_MAX_HIGHLIGHTED = 2000

#: The width a file or a pipe gets (as in CI): a terminal's usual 80, to which every table fits.
TABLE_WIDTH = 80


class SafeConsole(Console):
    """A rich ``Console`` that escapes control characters, emits no hyperlinks and never raises
    for markup it cannot read (see the module's docstring)."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        text = printable(text)
        if len(text) > _MAX_HIGHLIGHTED:
            # rich's highlighter backtracks over a long run of word characters: a 20,000-character
            # name took ten seconds to print, a 100,000-character one a minute
            kwargs["highlight"] = False
        try:
            return super().render_str(text, **kwargs)
        except MarkupError:
            return super().render_str(text, **{**kwargs, "markup": False})

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            yield safe_segment(segment)


def safe_segment(segment: Segment) -> Segment:
    """``segment`` with control characters in its text escaped and any hyperlink dropped; rich's
    own control segments (cursor moves of a live display) are kept as they are."""
    if segment.control:
        return segment
    text, style = segment.text, segment.style
    if style is not None and style.link:
        style = style.update_link(None)
    cleaned = printable(text)
    if cleaned == text and style is segment.style:
        return segment
    return Segment(cleaned, style, segment.control)


def plain(text: object) -> Text:
    """``text`` as a table cell or a line that no markup in it is read from."""
    return Text(printable(str(text)))


def console(**kwargs: Any) -> SafeConsole:
    """A ``SafeConsole`` (``stderr=True`` for standard error; other keywords as rich's)."""
    return SafeConsole(**kwargs)


def stdout_console(width: int = TABLE_WIDTH) -> Console:
    """A console on stdout (see ``widened``)."""
    return widened(SafeConsole(), width)


def widened(console: Console, width: int = TABLE_WIDTH) -> Console:
    """``console``, or one on its file ``width`` columns wide (and without colour) when it writes
    to a file or a pipe, where rich would otherwise assume 80, unless $COLUMNS says how wide to
    be. A terminal keeps its own width: the tables fit it."""
    if console.is_terminal or console.width >= width or os.environ.get("COLUMNS", "").strip().isdigit():
        return console
    return SafeConsole(width=width, file=console.file, color_system=None)
