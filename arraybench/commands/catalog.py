"""``arraybench list``: the workloads, their sizes and what each measures."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list workloads, their sizes and what each measures")
    p.add_argument("--workload-file", action="append", default=[], dest="workload_files",
                   metavar="FILE", help="also list the workloads of this file (repeatable)")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from rich.markup import escape
    from rich.table import Table

    from .. import workloads
    from ..userfile import load_files

    loaded = load_files(getattr(args, "workload_files", []))
    table = Table(title="workloads", header_style="bold")
    for col in ("name", "sizes", "checked as", "what it measures"):
        table.add_column(col, overflow="fold")
    for name, wl in workloads.REGISTRY.items():
        sizes = ", ".join(f"{k} {v:,}" for k, v in wl.sizes.items())
        check = wl.check.kind + (" (gradient)" if wl.grad else "")
        about = escape(wl.description)
        if wl.source != "builtin":
            about += f"\n[dim]{escape(wl.origin())}[/]"
        table.add_row(name, sizes, check, about)
    Console().print(table)
    for error in loaded.errors.values():
        print(f"arraybench: {error}", file=sys.stderr)
    return 1 if loaded.errors else 0
