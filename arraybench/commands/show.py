"""``arraybench show RUN``: a saved run's table in the terminal, measuring and writing nothing;
``--histogram`` shows each cell's samples instead, in bins, every process in its own mark (as
pyperf's ``hist`` and pytest-benchmark's ``--benchmark-histogram``).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from ..errors import UsageError
from ..argtypes import CsvExtend, csv_list
from ..options import add, store_location

HELP = "a saved run's table, or each cell's samples per process as a histogram"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help=HELP,
                       description="Print a saved run's table, or with --histogram each cell's samples "
                                   "in bins, each process in its own mark, so that a process that ran "
                                   "slow shows apart from the others. Measures and writes nothing.")
    p.add_argument("results", metavar="RUN",
                   help="a results.json (or the folder holding it), or a stored run's id, last or last~N")
    p.add_argument("--histogram", action="store_true",
                   help="each cell's samples in bins, per process, instead of the table")
    p.add_argument("--workloads", dest="filter_workloads", type=csv_list, action=CsvExtend, default=[],
                   metavar="LIST", help="only these workloads (repeatable)")
    p.add_argument("--sizes", dest="filter_sizes", type=csv_list, action=CsvExtend, default=[],
                   metavar="LIST", help="only these sizes: labels (small) or element counts (100)")
    p.add_argument("--backends", dest="filter_backends", type=csv_list, action=CsvExtend, default=[],
                   metavar="LIST", help="only these libraries (repeatable)")
    add(p, "store", what="that run ids, last and last~N are looked up in")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from ..store.refs import load_run
    from ..render import report
    from ..render.tables import print_histograms
    from ..render.terminal import stdout_console

    results = load_run(args.results, store_location(args))
    chosen = [r for r in results.records
              if (not args.filter_workloads or r.workload in args.filter_workloads)
              and (not args.filter_sizes or r.size_label in args.filter_sizes or str(r.size) in args.filter_sizes)
              and (not args.filter_backends or r.backend in args.filter_backends)]
    if not chosen:
        raise UsageError(f"no cell of {args.results} matches; it has workloads "
                         f"{_names(r.workload for r in results.records)}, sizes "
                         f"{_names(r.size_label for r in results.records)} and libraries "
                         f"{_names(r.backend for r in results.records)}")
    console = stdout_console()
    if not args.histogram:
        narrowed = len(chosen) < len(results.records)
        # Findings speak of the whole run: left out where the table shows part of it.
        report.show(replace(results, records=chosen), console, with_findings=not narrowed)
        return 0
    if not print_histograms(chosen, console):
        raise UsageError(f"no cell of {args.results} chosen here holds samples (each was skipped, "
                         "failed or wrong): nothing to draw")
    return 0


def _names(values) -> str:
    return ", ".join(dict.fromkeys(values)) or "none"
