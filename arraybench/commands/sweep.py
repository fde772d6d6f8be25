"""``arraybench sweep``: one or more workloads across many sizes; where does each library pay off?

The same options as ``run``; ``--sizes`` defaults to a geometric range around each workload's own
sizes (``arraybench.sweep``). The crossovers are among the run's findings, and
``sweep_<workload>.svg`` draws them.
"""

from __future__ import annotations

import argparse

from .. import api
from ..errors import UsageError
from ..model.options import parse_sizes
from ..options import DEFAULT_OUTPUT_DIR, add_run_options
from ..workloads.userfile import load_files
from .run import main as run_main, options_from_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run workloads across sizes and find the crossovers",
                       description="Measure workloads across a range of sizes, plot time against size "
                                   "and report from which size one library beats another.")
    add_run_options(p)
    p.set_defaults(handler=main, sizes=None)


def main(args: argparse.Namespace) -> int:
    if not args.workloads and not args.workload_files:
        raise UsageError("name the workload to sweep, e.g. `arraybench sweep --workloads matmul`")
    if args.sizes is None and not args.resume:
        options = options_from_args(args)
        names = options.workloads or load_files(options.workload_files).names()
        args.sizes = ",".join(parse_sizes(api.sweep_sizes(names)))
    if args.output_dir == DEFAULT_OUTPUT_DIR:
        args.output_dir = "sweep_" + "_".join(args.workloads or ["user"])
    return run_main(args)
