"""``arraybench numerics``: each library's error against the NumPy float64 reference, in every dtype;
each cell measured briefly (one process, a few samples): the time is not the point."""

from __future__ import annotations

import argparse
import sys

from .. import api
from ..options import csv_list
from ..executors.session import Interrupted
from ..files import write_atomic
from . import add
from ..render.terminal import console as safe_console
from .run import reporter_for


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("numerics", help="each library's error against float64, per workload and dtype",
                       description="Run the workloads briefly in each dtype and tabulate each library's "
                                   "error against the NumPy float64 reference.")
    add(p, "backends")
    add(p, "devices")
    p.add_argument("--workloads", type=csv_list, default=["numerics"], metavar="LIST",
                   help="workloads or groups (default: numerics = the seed's five and stats)")
    add(p, "workload_files")
    p.add_argument("--sizes", default="small,large", metavar="LIST")
    p.add_argument("--dtype", type=csv_list, dest="dtypes", default=["float64", "float32"], metavar="LIST",
                   help="dtypes to compare (default: float64,float32)")
    p.add_argument("--output-dir", "-o", default="numerics", metavar="DIR")
    add(p, "overwrite")
    add(p, "quiet")
    p.set_defaults(handler=main, json=False)


def main(args: argparse.Namespace) -> int:
    from ..render.files import numerics_markdown, print_numerics

    workloads = args.workloads
    if args.workload_files and workloads == ["numerics"]:
        workloads = None  # the files' own workloads, as `run --workload-files` does
    code = 0
    try:
        results = api.numerics(workloads, dtype=args.dtypes, sizes=args.sizes,
                               backends=args.backends, devices=args.devices,
                               workload_files=args.workload_files, output_dir=args.output_dir,
                               overwrite=args.overwrite, reporter=reporter_for(args))
    except Interrupted as stop:
        results, code = stop.results, stop.exit_code
        print(f"arraybench: stopped by {stop}; the table shows what was measured", file=sys.stderr)
    out = results.output_dir
    if out is not None:
        write_atomic(out / "numerics.md", numerics_markdown(results.records))
    if not args.quiet:
        console = safe_console()
        if not console.is_terminal:
            console = safe_console(width=160, color_system=None)
        print_numerics(results.records, console)
        if out is not None:
            console.print(f"numerics: {out / 'numerics.md'}; results per dtype in {out}/<dtype>/results.json")
    return code
