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
from ..workloads.params import describe as describe_params


def print_catalog(entries: Sequence[Mapping[str, Any]], console: Console) -> None:
    """The table of workloads (the entries of ``commands.catalog.catalog``), then the groups."""
    table = Table(title="workloads", header_style="bold", title_justify="left", pad_edge=False)
    table.add_column("name", no_wrap=True, style="bold")
    table.add_column("what it measures", overflow="fold", ratio=3)
    table.add_column("sizes (n)", overflow="fold", no_wrap=True)
    table.add_column("work per call (float64)", overflow="fold")
    table.add_column("checked as", overflow="fold")
    for e in entries:
        sizes = "\n".join(f"{k} {v:,}" + (f" ({describe_params(e['params'][k])})" if k in e["params"] else "")
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
        table.add_row(escape(printable(e["name"])), description, sizes, work, check)
    console.print(table)
    groups = "; ".join(f"{g} = {', '.join(ws)}" for g, ws in GROUPS.items())
    console.print(f"[dim]Groups for --workloads: {groups}[/]")
    console.print("[dim]Run some: arraybench run --workloads NAME,NAME --sizes small  "
                  "(sizes: labels, element counts, or LO:HI[:STEPS])[/]")
