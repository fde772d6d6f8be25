"""The terminal: a console safe for any text, tables fitted to its width, and the plain listings
printed through them (the workloads catalog, a cluster's nodes, the stored runs).

The console the commands print to: it shows text, it never obeys it.

Everything arraybench prints through rich goes through ``SafeConsole`` (``console()`` and
``stdout_console()`` make one). Text that came from outside (a workload's name or error, a
``--context`` value, a path, a stored run) may hold control characters or rich markup:

- control characters (ESC sequences that clear the screen, set the title, open a hyperlink; bells,
  carriage returns) are shown escaped as ``\x1b``, in every string, ``Text`` and table cell, at
  the one place segments become output (``render``), and before markup is read (``render_str``);
- no hyperlink (OSC 8) is ever emitted: a ``[link=…]`` that reached a style is dropped;
- markup that cannot be read (``a[/]``) is shown as it is written instead of raising
  ``MarkupError``. Callers still escape what they put into markup (``rich.markup.escape``) or
  pass ``Text``/``markup=False``, so that ``tag=[v1]`` is not read as a style and eaten.

Tables fitted to a width, by the run table's rule: numbers never wrap, names wrap between words
and a word too long for its column ends in "…" (never split), and where even that is too wide the
least needed columns go, a line saying which. ``compare``, ``history`` and ``store list`` use it.

The runs the results store holds, as ``arraybench store list`` prints them.

The nodes of a cluster as a table: ``arraybench info --cluster ADDRESS``.

The workloads as ``arraybench list`` prints them: name, what each measures, its sizes, its work
per call and how its result is checked.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any, Iterable, Callable, Sequence, Mapping

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, Group
from rich.errors import MarkupError
from rich.markup import escape
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from ..errors import printable
from ..executors.cluster import Node, identity
from ..store.store import StoredRun
from ..units import format_rate
from ..workloads import GROUPS


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


#: A name column keeps this much at the least, so that names wrap into lines of a few words.
TEXT_MIN_WIDTH = 13


@dataclass(frozen=True)
class Column:
    """A column: ``numeric`` ones are right-aligned and never wrap, ``whole`` ones (an id, a time
    to copy) left-aligned and never wrap or shorten; ``drop``: higher goes first when the table
    does not fit, 0 never goes."""

    name: str
    numeric: bool = False
    drop: int = 0
    whole: bool = False


@dataclass
class Row:
    cells: Sequence[RenderableType]
    style: str | None = None
    end_section: bool = False


def fitted_table(title: RenderableType, columns: Sequence[Column], rows: Sequence[Row],
                 width: int | None, fits: Callable[[Table, int], bool] | None = None) -> tuple[Table, list[str]]:
    """The table within ``width`` columns (None: as wide as it wants), and the names of the
    columns left out to fit. ``fits(table, width)`` says when it fits (default: drawn whole)."""
    kept = list(range(len(columns)))
    table = build_table(title, columns, rows, kept)
    dropped: list[str] = []
    if width is not None:
        for i in sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: -columns[i].drop):
            if (fits or _fits)(table, width):
                break
            kept.remove(i)
            dropped.append(columns[i].name)
            table = build_table(title, columns, rows, kept)
    return table, dropped


def hidden_line(dropped: Sequence[str], width: int) -> Text | None:
    """The line under a table that left columns out, or None."""
    if not dropped:
        return None
    return Text(f"Hidden to fit {width} columns: {', '.join(dropped)} (a wider terminal, or "
                "COLUMNS=160, shows them; --json gives everything).", style="dim")


def build_table(title: RenderableType, columns: Sequence[Column], rows: Sequence[Row],
                kept: Sequence[int]) -> Table:
    """The table of ``rows`` with the columns ``kept`` (indices into ``columns``), unfitted."""
    table = Table(title=title, header_style="bold", pad_edge=False, title_justify="left")
    for i in kept:
        c = columns[i]
        # The widest cell as rich counts it (the header's longest word for a text column).
        widest = max((cell_len(line) for r in rows for line in str(r.cells[i]).splitlines()), default=0)
        if c.numeric or c.whole:  # never wrap or shorten: the column is as wide as its cells
            table.add_column(c.name, justify="right" if c.numeric else "left", no_wrap=True,
                             min_width=max(widest, len(c.name)))
        else:  # names wrap between words, in a column kept wide enough for a short name on one
            # line; a word too long for the column ends in "…", never splits
            longest_word = max((len(w) for w in c.name.split()), default=1)
            table.add_column(c.name, justify="left", overflow="ellipsis",
                             min_width=max(longest_word, min(widest, TEXT_MIN_WIDTH)))
    for r in rows:
        table.add_row(*(r.cells[i] for i in kept), style=r.style, end_section=r.end_section)
    return table


def _fits(table: Table, width: int) -> bool:
    """Whether ``table`` shows whole at ``width``: rich's measure can be a column short, and a
    table wider than its console loses its right edge, so the table is drawn and its top border
    looked at."""
    if measure(table).minimum > width:
        return False
    drawn = console(width=width, color_system=None, record=True, file=io.StringIO())
    drawn.print(table)
    top = next((ln for ln in drawn.export_text().splitlines() if ln.startswith(("┏", "┌"))), "")
    return top.rstrip().endswith(("┓", "┐"))


def measure(table: Any) -> Measurement:
    """The table's least and natural widths; measured on a wide console, so that the widths
    found are the table's own."""
    wide = console(width=10_000, color_system=None, file=io.StringIO())
    return Measurement.get(wide, wide.options, table)


def runs_table(runs: Sequence[StoredRun], where: str, width: int | None = None) -> Group:
    """One row per stored run: its id, when it started, its machine, records, whether it is
    complete (``no`` for an interrupted run, ``empty`` for one that measured nothing: neither is
    ever ``last``), its context and the folder it came from; fitted to ``width``."""
    columns = (Column("run", whole=True), Column("started", whole=True), Column("complete"),
               Column("records", True, 2),
               Column("machine", False, 3), Column("context", False, 1), Column("from", False, 4))
    rows = [Row([plain(x) for x in (r.run_id, r.started_at[:19].replace("T", " "),
                                     ("yes" if r.measured else "empty") if r.complete else "no",
                                     r.records, r.machine_id,
                                     ", ".join(f"{k}={v}" for k, v in r.context.items()),
                                     r.source or "(in memory)")]) for r in runs]
    # The store's location under the table, whole: a path folded into a title cannot be copied.
    title = f"arraybench store: {len(runs)} run{'s' if len(runs) != 1 else ''}"
    table, dropped = fitted_table(title, columns, rows, width)
    line = hidden_line(dropped, width or 0)
    return Group(table, Text(f"store {where}", no_wrap=True, overflow="ignore"),
                 *([line] if line is not None else []))


def nodes_table(nodes: list[Node], address: str) -> Table:
    """One row per node: its label, address, CPUs and GPUs, whether it takes shards and is free
    now (none of its CPUs and GPUs reserved), and its machine (fingerprint hash; nodes with one identity can share an any-node run)."""
    t = Table(title=f"Ray cluster at {escape(address)}: {len(nodes)} nodes", title_justify="left",
              header_style="bold", pad_edge=False)
    for name in ("node", "address", "CPUs", "GPUs", "shards", "free", "machine", "identity", "CPU model"):
        t.add_column(name, overflow="fold")
    groups: dict[str, str] = {}
    for n in nodes:
        env = n.environment
        key = repr(sorted(identity(env).items())) if env else ""
        group = groups.setdefault(key, chr(ord("A") + len(groups))) if env else "—"
        gpus = f"{n.gpus:g}" + (f" ({', '.join(n.gpu_types)})" if n.gpu_types else "")
        free = "—" if not n.takes_shards else "unknown" if n.free is None else "yes" if n.free else "busy"
        t.add_row(escape(n.label), escape(n.address), f"{n.cpus:g}", gpus, "yes" if n.takes_shards else "no",
                  free, str(env.get("machine_id", "—")), group, escape(str(env.get("cpu_model", "—"))))
    return t


def nodes_json(nodes: list[Node]) -> list[dict[str, Any]]:
    """The nodes as JSON-ready data (``info --cluster --json``)."""
    return [{"label": n.label, "node_id": n.node_id, "address": n.address, "resources": n.resources,
             "slot": n.takes_shards, "free": n.free, "gpu_types": n.gpu_types,
             "machine_id": n.environment.get("machine_id"), "fingerprint": n.environment.get("fingerprint"),
             "arraybench": n.environment.get("arraybench")} for n in nodes]


#: Narrower than this, ``list`` leaves out the work per call.
NARROW = 100


def _settings(params: Mapping[str, Any]) -> str:
    """``tsteps=20, alpha=1.5``: each setting without spaces, so that lines break between them."""
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def print_catalog(entries: Sequence[Mapping[str, Any]], console: Console) -> None:
    """The table of workloads (the entries of ``commands.catalog.catalog``), then the groups."""
    table = Table(title="workloads", header_style="bold", title_justify="left", pad_edge=False)
    # Every column wraps between words and has a share of the width at most (a word longer than
    # that ends in "…"), so that one workload with many settings, a long name or a long
    # description wraps its own cell instead of squeezing the others to nothing.
    names = [printable(e["name"]) for e in entries]
    # Under 100 columns the work per call goes (a line says so): five columns do not fit in 80.
    with_work = console.width >= NARROW
    room = max(console.width - (14 if with_work else 11), 40)  # less the borders and the padding
    # A name whole on one line where it can be (it is what --workloads takes), then the others.
    name_width = min(max(map(len, names), default=4), room * 2 // 5)
    table.add_column("name", style="bold", overflow="fold", min_width=name_width, max_width=name_width)
    room -= name_width
    shares = ((("what it measures", 0.35, 8), ("sizes (n)", 0.25, 8), ("work per call (float64)", 0.2, 8),
               ("checked as", 0.15, 11)) if with_work else
              (("what it measures", 0.45, 8), ("sizes (n)", 0.3, 8), ("checked as", 0.2, 11)))
    for name, share, least in shares:
        table.add_column(name, max_width=max(int(room * share), least))
    for e in entries:
        # A size's settings go on the lines under it, indented, wrapping between settings.
        sizes = "\n".join(f"{k} {v:,}" + (f"\n  {_settings(e['params'][k])}" if k in e["params"] else "")
                          for k, v in e["sizes"].items())
        work = "\n".join(
            f"{k}: {format_rate(w['flops'], 'FLOP')}, {format_rate(w['bytes'], 'B')}"
            for k, w in e["work_float64"].items()) or "—"
        check = e["check"] + (" (gradient)" if e["gradient"] else "")
        if e["mutates"]:
            check += f"\nin place: {', '.join(printable(m) for m in e['mutates'])}"
        # A workload file is anyone's text: its escape sequences must not reach the terminal.
        description = escape(printable(e["description"])) + (
            "" if e["source"] == "builtin" else f"\n[dim]{escape(printable(e['source']))}[/]")
        table.add_row(escape(printable(e["name"])), description, sizes, *([work] if with_work else []), check)
    console.print(table)
    if not with_work:
        console.print(f"[dim]The work per call (FLOP and bytes) shows at {NARROW} columns or wider, "
                      "and in arraybench list --json.[/]")
    groups = "; ".join(f"{g} = {', '.join(ws)}" for g, ws in GROUPS.items())
    console.print(f"[dim]Groups for --workloads: {groups}[/]")
    console.print("[dim]Run some: arraybench run --workloads NAME,NAME --sizes small  "
                  "(sizes: labels, element counts, or LO:HI[:STEPS])[/]")
