"""``arraybench numerics``: how far each library's results are from float64, in every dtype.

Timing is not the point here, so each cell is measured briefly (one process, a few samples); what
is kept is each result's error against the NumPy float64 reference.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from .. import plan as planning
from ..errors import UsageError
from ..plan import RunOptions
from ..records import write_atomic
from ..runner import Interrupted, Runner
from .argtypes import csv_list
from .run import _reporter, _workloads, prepare_output_dir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("numerics", help="each library's error against float64, per workload and dtype",
                       description="Run the workloads briefly in each dtype and tabulate each library's "
                                   "error against the NumPy float64 reference.")
    d = RunOptions()
    p.add_argument("--backends", type=csv_list, default=d.backends, metavar="LIST")
    p.add_argument("--devices", type=csv_list, default=d.devices, metavar="LIST")
    p.add_argument("--workloads", type=csv_list, default=["numerics"], metavar="LIST",
                   help="workloads or groups (default: numerics = the seed's five and stats)")
    p.add_argument("--sizes", default="small,large", metavar="LIST")
    p.add_argument("--dtypes", type=csv_list, default=["float64", "float32"], metavar="LIST",
                   help="dtypes to compare (default: float64,float32)")
    p.add_argument("--output-dir", "-o", default="numerics", metavar="DIR")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(handler=main, json=False)


def main(args: argparse.Namespace) -> int:
    from ..report.numerics import numerics_markdown, numerics_table

    known, _loaded = _workloads([])
    out = prepare_output_dir(args.output_dir, overwrite=args.overwrite)
    records = []
    for dtype in args.dtypes:
        if dtype not in planning.DTYPES:
            raise UsageError(f"unknown dtype {dtype!r}; valid: {', '.join(planning.DTYPES)}")
    for dtype in args.dtypes:
        options = RunOptions(backends=args.backends, devices=args.devices, workloads=args.workloads,
                             sizes=planning.parse_sizes(args.sizes), dtype=dtype, processes=1,
                             max_time=0.05, min_samples=3)
        planning.validate(options, known)
        cells = planning.build_plan(options, known)
        sub = prepare_output_dir(str(out / dtype), overwrite=args.overwrite)
        try:
            records += Runner(cells, options, sub, _reporter(args)).run().records
        except Interrupted as stop:
            records += stop.results.records
            break
    write_atomic(out / "numerics.md", numerics_markdown(records))
    if not args.quiet:
        console = Console()
        if not console.is_terminal:
            console = Console(width=160, color_system=None)
        console.print(numerics_table(records))
        from ..report.numerics import FOOTNOTE

        console.print(f"[dim]{FOOTNOTE}[/]")
        console.print(f"numerics: {out / 'numerics.md'}; results per dtype in {out}/<dtype>/results.json")
    return 0
