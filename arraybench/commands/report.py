"""A saved run, shown again without measuring anything: ``report`` rebuilds its files, ``show`` prints its
table or each cell's samples per process (as pyperf's ``hist``), ``merge`` makes several runs (machines) one
report, each machine's settings kept with its records, and ``export`` writes it for other tools (docs/history.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

from . import SUMMARY, add, add_filters, store_location, write_named
from .. import api
from ..errors import SaveError, UsageError, one_line
from ..model.results import load, resolve
from ..model.runs import run_id, same_machine_notes
from ..outdir import claim_for_report, prepare
from ..render.files import FORMATS, export_text
from ..render.terminal import stdout_console
from ..store.refs import load_run
from ..store.store import history_of_run


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help=SUMMARY["report"],
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
    p = sub.add_parser("show", help=SUMMARY["show"],
                       description="Print a saved run's table, or with --histogram each cell's samples "
                                   "in bins, each process in its own mark, so that a process that ran "
                                   "slow shows apart from the others. Measures and writes nothing.")
    p.add_argument("results", metavar="RUN",
                   help="a results.json (or the folder holding it), or a stored run's id, last or last~N")
    p.add_argument("--histogram", action="store_true",
                   help="each cell's samples in bins, per process, instead of the table")
    add_filters(p, "workloads", "sizes", "backends")
    add(p, "store", what="that run ids, last and last~N are looked up in")
    p.set_defaults(handler=show)
    p = sub.add_parser("merge", help=SUMMARY["merge"],
                       description="Merge runs from several machines into one results.json and report, "
                                   "with the machine as a dimension and findings across machines.")
    p.add_argument("runs", nargs="+", metavar="[LABEL=]DIR",
                   help="a run's output folder (or results.json); LABEL names its machine (default: "
                        "the folder's name)")
    p.add_argument("--output-dir", "-o", default="merged", metavar="DIR",
                   help="where the merged results and report go (default: merged)")
    p.add_argument("--no-plots", action="store_true", help="skip the SVG plots")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.set_defaults(handler=merge)
    p = sub.add_parser("export", help=SUMMARY["export"],
                       description="Write a run's results in a format other tools read: "
                                   "github-action-benchmark (customSmallerIsBetter) or Bencher "
                                   "Metric Format. Times are nanoseconds per call.")
    p.add_argument("results", metavar="RUN", help="a results.json or the folder holding it, or a stored "
                                                  "run's id, last or last~N")
    p.add_argument("--format", required=True, choices=FORMATS,
                   help="github: github-action-benchmark customSmallerIsBetter; bencher: Bencher Metric Format")
    p.add_argument("--output", "-o", default=None, metavar="FILE", help="write here (default: stdout)")
    add(p, "store", what="that run ids, last and last~N are looked up in")
    p.set_defaults(handler=export)


def main(args: argparse.Namespace) -> int:
    from ..render import report

    results = load_run(args.results, store_location(args))
    # A stored run has no folder of its own (its old one may hold another run by now).
    target = Path(args.output_dir or results.output_dir or f"report-{run_id(results)}")
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


def show(args: argparse.Namespace) -> int:
    """``arraybench show RUN``: the table (or histograms) of the cells chosen."""
    from ..render import report
    from ..render.tables import print_histograms

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
        # Findings speak of the whole run: left out where the table shows part of it.
        report.show(replace(results, records=chosen), console, with_findings=len(chosen) == len(results.records))
        return 0
    if not print_histograms(chosen, console):
        raise UsageError(f"no cell of {args.results} chosen here holds samples (each was skipped, "
                         "failed or wrong): nothing to draw")
    return 0


def _names(values) -> str:
    return ", ".join(dict.fromkeys(values)) or "none"


def split_label(text: str) -> tuple[str | None, str]:
    """``laptop=runs/a`` -> ("laptop", "runs/a"); a plain path has no label."""
    label, sep, path = text.partition("=")
    if sep and label and "/" not in label and not Path(text).exists():
        return label, path
    return None, text


def merge(args: argparse.Namespace) -> int:
    """``arraybench merge``: the runs as one results.json and report in ``--output-dir``."""
    from ..render import report

    pairs = [split_label(t) for t in args.runs]
    runs = [load(resolve(path)) for _, path in pairs]
    merged = api.merge(runs, labels=[label for label, _ in pairs], output_dir=args.output_dir,
                       plots=not args.no_plots)
    labels = list(merged.settings["machines"])  # one per run, in order
    for note in same_machine_notes(runs, labels):
        print(f"arraybench: note: {one_line(note)}", file=sys.stderr)  # labels are the user's, shown escaped
    if not args.quiet:
        console = stdout_console()
        report.show(merged, console)
        out = merged.output_dir
        console.print(f"merged {len(runs)} runs ({', '.join(labels)}) into {out / 'results.json'}; "
                      f"report: {out / 'report.html'}", soft_wrap=True, markup=False, highlight=False)
    return 0


def export(args: argparse.Namespace) -> int:
    """``arraybench export``: the run in another tool's format, on stdout or to ``--output``."""
    # Named as every other command names a run: a folder, a file, or one in the store.
    text = export_text(load_run(args.results, store_location(args)), args.format)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    print(f"wrote {write_named(args.output, text)}", file=sys.stderr)
    return 0
