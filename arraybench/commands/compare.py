"""``arraybench compare BASE NEW``: per cell, faster / slower / not significant, and a CI gate."""

from __future__ import annotations

import argparse
import sys

from ..render.comparison import gate_failures, gate_notes, print_comparison
from ..errors import SaveError, UsageError
from ..render.terminal import stdout_console
from ..options import fraction, percent
from . import add, check_targets, say_written, store_location, write_tables


def register(sub: argparse._SubParsersAction) -> None:
    from ..analysis.compare import DEFAULT_ALPHA, DEFAULT_THRESHOLD

    p = sub.add_parser(
        "compare", help="compare two runs cell by cell: faster, slower or not significant",
        description="Compare two runs cell by cell (results files, folders, or runs in the results "
                    "store: `arraybench compare last~1 last`). A change is called only when it is "
                    "significant (Welch's t-test on the processes' log medians, the p-values of all "
                    "cells adjusted by Benjamini-Hochberg to a false discovery rate of --alpha) and "
                    "larger than --threshold. Exit status 1 with --fail-above on a larger slowdown.")
    p.add_argument("base", metavar="BASE",
                   help="the reference run: its results.json or folder, or a stored run's id, last "
                        "(this project's latest stored run on this machine), last~N (the N-th before "
                        "it), or machine:last / machine:last~N (counting every project's)")
    p.add_argument("new", metavar="NEW", help="the run to judge, named the same ways")
    p.add_argument("--threshold", type=percent, default=DEFAULT_THRESHOLD, metavar="PERCENT",
                   help=f"smallest change called faster or slower (default: {DEFAULT_THRESHOLD * 100:g}%%)")
    p.add_argument("--alpha", type=fraction, default=DEFAULT_ALPHA,
                   help=f"false discovery rate over all cells (default: {DEFAULT_ALPHA})")
    p.add_argument("--fail-above", type=percent, default=None, metavar="PERCENT",
                   help="exit with status 1 if any cell is significantly slower by more than this "
                        "(e.g. 10%%), went from ok to failed or wrong, or if no cell could be "
                        "compared at all: a gate for a CI job")
    p.add_argument("--memory", action="store_true",
                   help="with --fail-above, also exit with status 1 if any cell's peak memory per call "
                        "grew by more than that (every process above every base process, and by 1 MB "
                        "at least)")
    p.add_argument("--output-dir", "-o", metavar="DIR", default=None,
                   help="also write compare.svg and compare.md there")
    p.add_argument("--json", action="store_true",
                   help="print the comparison as one JSON document instead of the table")
    add(p, "csv", what="every cell's medians, ratio and verdict as CSV")
    add(p, "markdown", what="the comparison as Markdown (compare.md)")
    add(p, "store", what="that run ids, last and last~N are looked up in")
    p.add_argument("--cross-machine", action="store_true",
                   help="compare runs from different machines (refused without it: a difference "
                        "would be the machines' as much as the code's)")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from .. import api
    from ..model.runs import cross_machine_pairs
    from ..store.refs import load_run, run_fields, run_line
    from ..render.files import comparison_csv
    from ..render.report import comparison_markdown

    if args.memory and args.fail_above is None:  # before any work: the gate would be silently off
        raise UsageError("--memory gates peak memory with --fail-above's limit: add --fail-above "
                         "PERCENT (e.g. --fail-above 10%); without a gate, compare lists memory changes anyway")
    check_targets(args)
    base, new = (load_run(given, store_location(args)) for given in (args.base, args.new))
    comparison = api.compare(base, new, threshold=args.threshold, alpha=args.alpha,
                             cross_machine=args.cross_machine)
    # The comparison's rows (every number) and its table (compare.md's).
    say_written(args, write_tables(args, {"--csv": lambda: comparison_csv(comparison),
                                          "--markdown": lambda: comparison_markdown(comparison)}))
    across = cross_machine_pairs(base, new)
    out = None
    if args.output_dir:
        from ..outdir import prepare

        out = prepare(args.output_dir, overwrite=True)
    failures = None if args.fail_above is None else gate_failures(comparison, args.fail_above,
                                                                    memory=args.memory)
    notes = [] if args.fail_above is None else gate_notes(comparison, args.fail_above)
    if args.json:
        import json

        from ..render.files import comparison_json

        # Which two runs were compared comes first, as in the table's output.
        doc = {"base": run_fields(base), "new": run_fields(new),
               **json.loads(comparison_json(comparison, failures=failures)),
               **({"undecided": notes} if notes else {})}
        print(json.dumps(doc, allow_nan=False))
    else:
        console = stdout_console()
        for line in (run_line("base", base, console.width), run_line("new", new, console.width)):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        print_comparison(comparison, console, across)
    if out is not None and not args.json:
        from ..files import write_atomic
        from ..render.mpl import compare_plot

        try:
            written = [write_atomic(out / "compare.md", comparison_markdown(comparison))]
            plot = compare_plot(comparison, out / "compare.svg")
        except OSError as exc:
            raise SaveError.from_os(exc) from None
        console.print("wrote " + ", ".join(str(p) for p in [*written, *filter(None, [plot])]),
                      markup=False, highlight=False, soft_wrap=True)
    for line in [*notes, *(failures or [])]:
        print(f"arraybench: {line}", file=sys.stderr)
    return 1 if failures else 0


def gate(comparison, limit: float, memory: bool = False) -> int:
    """``--fail-above``: 1 (a line on stderr per reason) when the new run must not pass; ``memory`` gates peaks too."""
    failures = gate_failures(comparison, limit, memory=memory)
    for line in [*gate_notes(comparison, limit), *failures]:
        print(f"arraybench: {line}", file=sys.stderr)
    return 1 if failures else 0
