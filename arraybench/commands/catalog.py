"""``arraybench list``: the workloads, their sizes and what each measures."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console

from ..errors import printable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list workloads, their sizes and what each measures")
    p.add_argument("--workload-file", action="append", default=[], dest="workload_files",
                   metavar="FILE", help="also list the workloads of a Python file (repeatable)")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(handler=main)


def catalog(workload_files: list[str] = ()) -> tuple[list[dict[str, Any]], list[str]]:
    """Every known workload (name, sizes, what it measures, how it is checked, its work per call),
    and the errors of the files that did not load."""
    from .. import workloads
    from ..workloads.userfile import load_files

    loaded = load_files(list(workload_files))
    out = []
    for name, wl in workloads.REGISTRY.items():
        work, settings = {}, {}
        for label, n in wl.sizes.items():
            try:  # the user's params= and work= run here; one that raises is left out of the list
                settings[label] = wl.params_for(n)
                w = wl.work_for(n, 8, settings[label])  # float64, the default dtype
            except Exception:
                continue
            if w is not None:
                work[label] = {"flops": w.flops, "bytes": w.bytes}
        out.append({
            "name": name,
            "description": wl.description,
            "sizes": dict(wl.sizes),
            "check": wl.check.kind,
            "gradient": wl.grad,
            "namespace": wl.namespace,
            "work_float64": work,
            "params": {k: v for k, v in settings.items() if v},
            "mutates": list(wl.mutates),
            "source": wl.source if wl.source == "builtin" else wl.origin(),
        })
    return out, list(loaded.errors.values())


def main(args: argparse.Namespace) -> int:
    from rich.markup import escape
    from rich.table import Table

    from ..units import format_rate

    from ..workloads import GROUPS
    from ..workloads.params import describe as describe_params

    entries, errors = catalog(args.workload_files)
    for error in errors:
        print(f"arraybench: {printable(error)}", file=sys.stderr)
    if args.json:
        print(json.dumps(entries, indent=1))
        return 1 if errors else 0
    console = Console()
    if not console.is_terminal and console.width < 120:
        console = Console(width=120, color_system=None)
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
    return 1 if errors else 0
