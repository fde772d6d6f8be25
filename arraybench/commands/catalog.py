"""``arraybench list``: the workloads, their sizes and what each measures."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import printable
from . import add
from ..render.terminal import stdout_console


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list workloads, their sizes and what each measures")
    add(p, "workload_files", help="also list the workloads of a Python file (repeatable)")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(handler=main)


def catalog(workload_files: list[str] = ()) -> tuple[list[dict[str, Any]], list[str]]:
    """Every known workload (name, sizes, what it measures, its check, its work per call), and the files that did not load."""
    from ..workloads.registry import REGISTRY
    from ..workloads.userfile import load_files

    loaded = load_files(list(workload_files))
    out = []
    for name, wl in REGISTRY.items():
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
    from ..render.tables import print_catalog

    entries, errors = catalog(args.workload_files)
    for error in errors:
        print(f"arraybench: {printable(error)}", file=sys.stderr)
    if args.json:
        print(json.dumps(entries, indent=1))
        return 1 if errors else 0
    console = stdout_console()
    print_catalog(entries, console)
    return 1 if errors else 0
