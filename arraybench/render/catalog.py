"""The workloads as ``arraybench list`` prints them: name, what each measures, its sizes, its work
per call and how its result is checked."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import printable
from ..units import format_rate
from ..workloads import GROUPS


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
