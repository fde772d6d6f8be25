"""``arraybench report``: rebuild plots, HTML, Markdown and CSV from saved results, measuring nothing."""

from __future__ import annotations

import argparse
import os
from contextlib import nullcontext
from pathlib import Path

from ..render.terminal import stdout_console
from ..options import add, store_location


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
        # Elsewhere, as merge -o: never into another run's folder (finished, interrupted or
        # running), whose report would then describe this run beside its own results.json.
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
