"""``arraybench list``: the workloads, their sizes and what each measures."""

from __future__ import annotations

import argparse

from rich.console import Console


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list workloads, their sizes and what each measures")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from rich.table import Table

    from .. import workloads

    table = Table(title="workloads", header_style="bold")
    for col in ("name", "sizes", "checked as", "what it measures"):
        table.add_column(col, overflow="fold")
    for name, wl in workloads.REGISTRY.items():
        sizes = ", ".join(f"{k} {v:,}" for k, v in wl.sizes.items())
        check = wl.check.kind + (" (gradient)" if wl.grad else "")
        table.add_row(name, sizes, check, wl.description)
    Console().print(table)
    return 0
