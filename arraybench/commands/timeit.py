"""``arraybench timeit 'xp.sort(a)' --setup 'a = randn(n)'``: one expression on every library, as
``pyperf timeit``. The expression becomes a workload (``api.expression_workload``, sent by value)
run as ``run`` runs a workload file: same options, verdicts and exit status. It writes no folder
unless ``--output-dir`` asks; the run goes to the store."""

from __future__ import annotations

import argparse

from ..errors import UsageError
from ..options import dashed
from . import add_run_options
from ..workloads.expression import expression_workload
from .run import main as run_main

#: ``run``'s options that choose other work or continue a run: here the expression is the work.
NOT_HERE = ("workloads", "workload_files", "resume", "against", "node_wait")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("timeit", help="time one expression on every library, no workload file (as pyperf timeit)",
                       description="Time one expression of xp (each library's namespace) on every selected "
                                   "library and device, with the verdicts, checks and report of a workload "
                                   "file defining it. The setup makes NumPy inputs on the host, as a "
                                   "workload's inputs= does: randn(n), rand(n), arange(n), np and rng are "
                                   "defined there.",
                       epilog="e.g. arraybench timeit 'xp.sort(a)' --setup 'a = randn(n)' --sizes 1e6")
    p.add_argument("expression", metavar="EXPR",
                   help="the expression to time, of xp and the names the setup binds, e.g. 'xp.sort(a)'")
    what = p.add_argument_group("the expression")
    what.add_argument("-s", "--setup", default="", metavar="CODE",
                      help="Python that binds the expression's names, e.g. 'a = randn(n); b = rand(n, n)': "
                           "NumPy arrays become its inputs (cast to --dtype, moved to each library), "
                           "numbers its settings")
    what.add_argument("-n", dest="sizes", default=None, metavar="LIST",
                      help="the same as --sizes: the values of n the setup reads")
    what.add_argument("--name", default=None, metavar="NAME",
                      help="the workload's name in tables and the store (default: from the "
                           "expression, xp.sort(a) is sort-a)")
    what.add_argument("--namespace", choices=("array_api", "native"), default="array_api",
                      help="what xp is: array-api-compat's namespace (portable; default) or the "
                           "library's own module (numpy, torch, jax.numpy, cupy)")
    add_run_options(p)
    for action in p._actions:
        if action.dest in NOT_HERE:
            action.help = argparse.SUPPRESS
        elif action.dest == "sizes" and "--sizes" in action.option_strings:
            action.help = ("values of n for a setup that reads it: counts (1000,1e6), small,large "
                           "(the default) or a range LO:HI[:STEPS]; a setup that does not read n has "
                           "one size, its largest input's element count")
        elif action.dest == "output_dir":
            action.help = ("write results.json, the report and the plots here, as run does "
                           "(default: no folder; the run is kept in the results store)")
    p.set_defaults(handler=main, output_dir=None, trust_folder=False)


def main(args: argparse.Namespace) -> int:
    refused = ["--" + dashed(dest) for dest in NOT_HERE if dest in getattr(args, "typed", ())]
    if refused:
        hint = ("; continue an interrupted timeit with arraybench run --resume DIR"
                if "--resume" in refused else "; arraybench run takes it")
        raise UsageError(f"timeit measures its one expression: {refused[0]} does not go with it{hint}")
    wl = expression_workload(args.expression, args.setup, sizes=args.sizes, name=args.name,
                                 namespace=args.namespace, seed=args.seed)
    args.workloads, args.workload_files = [wl.name], []
    status = run_main(args)
    if args.output_dir is None and not args.quiet and not args.json:
        # The notes under the table name the run's files; without a folder there are none yet.
        print("no folder written: --output-dir DIR writes results.json, report.html, results.md and "
              "findings.md, as run does")
    return status
