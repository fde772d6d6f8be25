"""``arraybench report`` rebuilds a saved run's files; ``arraybench show`` prints its table, or with
``--histogram`` each cell's samples per process (as pyperf's ``hist``). Neither measures anything.
"""

from __future__ import annotations

import argparse
import os
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

from ..options import CsvExtend, csv_list
from . import add, store_location
from ..errors import UsageError
from ..render.terminal import stdout_console


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="rebuild plots, report.html, results.md and results.csv from a results.json",
        description="Rebuild every report file from saved results, without measuring anything.")
    p.add_argument("results", metavar="RUN",
                   help="a results.json written by `arraybench run` (or the folder holding it), or "
                        "a stored run's id, last or last~N")
    p.add_argument("--output-dir", "-o", metavar="DIR", default=None,
                   help="where to write (default: the folder of RESULTS.json; for a stored run, "
                        "report-ID in the current folder)")
    p.add_argument("--no-plots", action="store_true", help="skip the SVG plots")
    add(p, "store", what="whose history of these cells the report shows")
    p.add_argument("--no-store", action="store_true", help="leave the store alone: no History section")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print every finding (a run prints the first screenful)")
    p.set_defaults(handler=main)
    _register_show(sub)


def main(args: argparse.Namespace) -> int:
    from ..errors import SaveError
    from ..model.runs import run_id
    from ..outdir import claim_for_report, prepare
    from ..store.keeping import history_of_run
    from ..store.refs import load_run
    from ..render import report

    results = load_run(args.results, store_location(args))
    # A stored run has no folder of its own (its old one may hold another run by now).
    source_dir = results.output_dir or Path(f"report-{run_id(results)}")
    target = Path(args.output_dir or str(source_dir))
    history = None if args.no_store else history_of_run(results, store_location(args) or True)
    if _same_folder(target, results.output_dir):
        # The run's own folder: its report is rewritten in place.
        out = prepare(target, overwrite=True)
        lock = nullcontext()
    else:
        # Elsewhere, as merge -o: never into another run's folder, beside its own results.json.
        lock = claim_for_report(target)
        out = lock.folder
    with lock:
        try:
            written = report.write_report(results, out, plots=not args.no_plots, history=history)
        except OSError as exc:  # a full disk, a folder where a report file goes: one line
            raise SaveError.from_os(exc) from None
    if not args.quiet:
        console = stdout_console()
        report.show(results, console, with_findings=args.verbose, verbose=args.verbose)
        if not results.complete:
            console.print("[yellow]These results are from an interrupted run; some cells were not measured.[/]")
        console.print(f"wrote {len(written)} files to {out}: " + ", ".join(p.name for p in written),
                      markup=False, highlight=False)
        console.print(f"open {Path(out) / 'report.html'}", markup=False, highlight=False, soft_wrap=True)
    return 0


def _same_folder(target: Path, own: Path | None) -> bool:
    """Whether ``target`` is the run's own folder ``own`` (by file identity where both exist)."""
    if own is None:
        return False
    try:
        return os.path.samefile(target, own)
    except OSError:
        return target.resolve() == Path(own).resolve()


def _register_show(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="a saved run's table, or each cell's samples per process as a histogram",
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
    p.set_defaults(handler=show)


def show(args: argparse.Namespace) -> int:
    """``arraybench show RUN``: the table (or histograms) of the cells chosen."""
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
