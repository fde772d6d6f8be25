"""``arraybench sweep``: one or more workloads across many sizes; where does each library pay off?

The same options as ``run``; ``--sizes`` defaults to a geometric range around each workload's own
sizes. The crossovers are among the run's findings, and ``sweep_<workload>.svg`` draws them.
"""

from __future__ import annotations

import argparse


from ..errors import UsageError
from . import run as run_cmd


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run workloads across sizes and find the crossovers",
                       description="Measure workloads across a range of sizes, plot time against size "
                                   "and report from which size one library beats another.")
    run_cmd.add_run_options(p)
    p.add_argument("--workload", dest="sweep_workloads", action="append", default=[], metavar="NAME",
                   help="the workload to sweep (repeatable; same as --workloads)")
    p.set_defaults(handler=main, sizes=None)


def default_sizes(workload) -> str:
    """Eight geometric steps from a tenth of the workload's smallest size to its largest."""
    sizes = sorted(workload.sizes.values())
    lo = max(2, sizes[0] // 10)
    return f"{lo}:{sizes[-1]}:8"


def main(args: argparse.Namespace) -> int:
    args.workloads = list(dict.fromkeys(args.workloads + args.sweep_workloads))
    if not args.workloads and not args.workload_files:
        raise UsageError("name the workload to sweep, e.g. `arraybench sweep --workload matmul`")
    if args.sizes is None:
        known, loaded = run_cmd._workloads(args.workload_files)
        from ..workloads import expand

        names = expand(args.workloads) if args.workloads else loaded.names()
        missing = [n for n in names if n not in known]
        if missing:
            raise UsageError(f"unknown workload {missing[0]!r}; known: {', '.join(sorted(known))}")
        ranges = {default_sizes(known[n]) for n in names}
        if len(ranges) > 1:
            raise UsageError("these workloads have different natural sizes; give --sizes, e.g. 16:4096")
        args.sizes = ranges.pop()
    if args.output_dir == "benchmark_plots":
        args.output_dir = "sweep_" + "_".join(args.workloads or ["user"])
    # The run's findings state the crossovers (and the plot marks them): nothing to add here.
    return run_cmd.main(args)
