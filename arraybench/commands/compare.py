"""Runs set against others: ``compare`` (two runs cell by cell, and a CI gate), ``history`` (each cell over the
stored runs, the steps called and what changed with each) and ``store`` (``list``, and ``import``: idempotent, each
run whole or not at all; one that cannot be read, or lacks measurements the store holds, is a line and status 2)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import re
import sys
from collections import Counter

from .. import api
from ..analysis.compare import DEFAULT_ALPHA, DEFAULT_THRESHOLD, ROW_COLUMNS
from ..analysis.history import DEFAULT_FDR, history
from ..errors import SaveError, UsageError, one_line
from ..files import write_atomic
from ..model.results import load, resolve
from ..model.runs import cross_machine_pairs, machine_id_of, run_id
from ..options import fraction, percent, positive_int
from ..outdir import prepare
from ..render.comparison import DEFAULT_LAST, gate_failures, gate_notes, print_comparison, print_history, said
from ..render.files import comparison_json, history_csv, history_json, rows_text
from ..render.terminal import runs_table, stdout_console
from ..store import open_store
from ..store.refs import load_run, run_fields, run_line, this_machine
from ..units import format_change
from . import SUMMARY, add, add_filters, check_targets, store_location, write_tables


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare", help=SUMMARY["compare"],
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
    p = sub.add_parser("history", help=SUMMARY["history"],
                       description="Show each cell's median and 95% CI over the runs in the results "
                                   "store, detect steps (intervals apart, false discovery rate "
                                   "controlled across all series) and say what changed with each.")
    p.add_argument("run", nargs="?", default=None, metavar="RUN",
                   help="only this run's cells, on its machine, up to it: a stored run's id, last or "
                        "last~N (or a results.json / its folder)")
    add_filters(p, "workloads", "backends")
    p.add_argument("--machine", default=None, metavar="ID",
                   help="only this machine: a machine id (or its first characters), or `this`")
    p.add_argument("--since", default=None, metavar="WHEN",
                   help="only runs since a date (2026-01-31) or for a while (30d, 12h, 2w)")
    add(p, "store", what="to read")
    p.add_argument("--threshold", type=percent, default=DEFAULT_THRESHOLD, metavar="PERCENT",
                   help=f"smallest change called a step (default: {DEFAULT_THRESHOLD * 100:g}%%)")
    p.add_argument("--alpha", type=fraction, default=DEFAULT_FDR, metavar="FRACTION",
                   help=f"false discovery rate across all series (default: {DEFAULT_FDR:g})")
    p.add_argument("--fail-above", type=percent, default=None, metavar="PERCENT",
                   help="exit with status 1 if a series' latest run is a step slower by more than "
                        "this (e.g. 10%%)")
    p.add_argument("--last", type=positive_int, default=DEFAULT_LAST, metavar="N",
                   help=f"runs shown per series in the table (default: {DEFAULT_LAST}; the plots show all)")
    p.add_argument("--output-dir", "-o", default=None, metavar="DIR",
                   help="also write each workload's plot there, history_<workload>.svg (default: "
                        "no file is written)")
    p.add_argument("--no-plots", action="store_true", help="with --output-dir: skip the SVG plots")
    p.add_argument("--json", action="store_true",
                   help="print the series, their points and the steps as one JSON document")
    add(p, "csv", what="the table as CSV (each series' latest --last runs, times in seconds)")
    add(p, "markdown", what="the table as Markdown, with the steps called")
    p.set_defaults(handler=history_main)
    p = sub.add_parser("store", help=SUMMARY["store"],
                       description="The results store every run is appended to (SQLite in your data "
                                   "folder by default, or a postgresql:// URL).")
    actions = p.add_subparsers(dest="store_action", metavar="ACTION", parser_class=type(p))
    actions.required = True
    imp = actions.add_parser("import", help="add runs' folders (or results.json files) to the store",
                             description="Add earlier runs to the store. Idempotent: a run already "
                                         "stored is left as it is.")
    imp.add_argument("runs", nargs="+", metavar="DIR", help="a run's output folder or its results.json")
    add(imp, "store", what="to add to")
    imp.set_defaults(handler=import_main)
    lst = actions.add_parser("list", help="the runs in the store, oldest first",
                             description="List the runs in the store, oldest first.")
    add(lst, "store", what="to read")
    lst.add_argument("--machine", default=None, metavar="ID", help="only this machine (an id prefix)")
    lst.add_argument("--json", action="store_true", help="one JSON object per run, one a line")
    lst.set_defaults(handler=list_main)


def main(args: argparse.Namespace) -> int:
    from ..render.report import comparison_markdown

    if args.memory and args.fail_above is None:  # before any work: the gate would be silently off
        raise UsageError("--memory gates peak memory with --fail-above's limit: add --fail-above "
                         "PERCENT (e.g. --fail-above 10%); without a gate, compare lists memory changes anyway")
    check_targets(args)
    base, new = (load_run(given, store_location(args)) for given in (args.base, args.new))
    comparison = api.compare(base, new, threshold=args.threshold, alpha=args.alpha,
                             cross_machine=args.cross_machine)
    # The comparison's rows (every number) and its table (compare.md's).
    write_tables(args, {"--csv": lambda: rows_text(ROW_COLUMNS, comparison.rows()),  # times in seconds
                        "--markdown": lambda: comparison_markdown(comparison)})
    across = cross_machine_pairs(base, new)
    out = prepare(args.output_dir, overwrite=True) if args.output_dir else None
    failures = None if args.fail_above is None else gate_failures(comparison, args.fail_above,
                                                                    memory=args.memory)
    notes = [] if args.fail_above is None else gate_notes(comparison, args.fail_above)
    if args.json:
        # Which two runs were compared comes first, as in the table's output.
        print(comparison_json(comparison, failures=failures, undecided=notes,
                              runs={"base": run_fields(base), "new": run_fields(new)}))
    else:
        console = stdout_console()
        for line in (run_line("base", base, console.width), run_line("new", new, console.width)):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        print_comparison(comparison, console, across)
    if out is not None and not args.json:
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


def gate(comparison, limit: float) -> int:
    """``--fail-above``: 1 (a line on stderr per reason) when the new run must not pass."""
    failures = gate_failures(comparison, limit)
    for line in [*gate_notes(comparison, limit), *failures]:
        print(f"arraybench: {line}", file=sys.stderr)
    return 1 if failures else 0


def parse_since(text: str | None, now: _dt.datetime | None = None) -> str | None:
    """``2026-01-31`` (any ISO time) or ``30d``/``12h``/``2w`` back from ``now``, as an ISO time in UTC."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*([hdw])\s*", text)
    if m:
        try:
            hours = int(m.group(1)) * {"h": 1, "d": 24, "w": 24 * 7}[m.group(2)]
            start = (now or _dt.datetime.now(_dt.timezone.utc)) - _dt.timedelta(hours=hours)
        except (OverflowError, ValueError):  # before the year 1 (or more digits than Python
            # reads): every stored run is since then
            return None
        return start.astimezone(_dt.timezone.utc).isoformat(timespec="seconds")
    try:
        when = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"--since {text!r}: give a date (2026-01-31), a time, or 30d / 12h / 2w") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc).isoformat(timespec="seconds")


def history_main(args: argparse.Namespace) -> int:
    """``arraybench history``: the table (or JSON, CSV, Markdown), the plots asked for, and the gate."""
    from ..render.report import history_markdown

    check_targets(args)
    machine = this_machine() if args.machine == "this" else args.machine
    since = parse_since(args.since)
    workloads, backends = args.filter_workloads, args.filter_backends
    with open_store(store_location(args), create=False) as store:
        target = None
        if args.run is not None:
            target = load_run(args.run, store_location(args))
            machine = machine or machine_id_of(target.environment) or None
            workloads = workloads or sorted({r.workload for r in target.records})
        entries, runs = store.entries(workloads=workloads, backends=backends, machine=machine, since=since)
        where = store.describe()
        for note in store.notes:  # rows of the wrong shape: skipped, said
            print(f"arraybench: warning: {note}", file=sys.stderr)
    if target is not None:
        entries = _up_to(target, entries, runs)
    found = history(entries, runs, threshold=args.threshold, fdr=args.alpha)
    # --csv/--markdown: the table as printed (CSV times in seconds), empty where nothing matches.
    write_tables(args, {"--csv": lambda: history_csv(found, args.last),
                        "--markdown": lambda: history_markdown(found, where, args.last)})
    failures = None if args.fail_above is None else regression_lines(found, args.fail_above)
    console = stdout_console()
    if args.json:
        print(history_json(found, regressions=failures))
    elif not entries:
        console.print(f"arraybench history: no stored run matches in {where}; runs are stored as they "
                      "finish, and `arraybench store import DIR` adds earlier ones.",
                      markup=False, highlight=False)
        return 0
    else:
        print_history(found, console, where, last=args.last)
        if args.output_dir is None and not args.no_plots:
            console.print("[dim]add --output-dir DIR to write each workload's plot (history_<workload>.svg)[/]")
        elif not args.no_plots:
            from ..render.mpl import write_history_plots

            written = write_history_plots(found, prepare(args.output_dir, overwrite=True))
            if written:
                console.print("wrote " + ", ".join(str(p) for p in written), markup=False, highlight=False,
                              soft_wrap=True)
    for line in failures or []:
        print(f"arraybench: {line}", file=sys.stderr)
    return 1 if failures else 0


def regression_lines(found, limit: float) -> list[str]:
    """Why ``--fail-above`` fails (one line per reason; none: it passes)."""
    unseen = "; --fail-above passes nothing unseen"
    return [*said(found.regressions(limit), f"{{n}} regression{{s}} above {limit:.0%} in the latest runs: {{names}}",
                  lambda s: f"{s.series.workload} {s.series.size_label} {s.series.label} ({format_change(s.ratio)})",
                  "; "),
            *said(found.unjudged_above(limit), f"{{n}} slowdown{{s}} above {limit:.0%} in the latest runs could not "
                  "be judged (one process on a side; measure with --processes 2 or more): {names}",
                  lambda u: f"{u.series.workload} {u.series.size_label} {u.series.label} "
                            f"({format_change(u.after.median_s / u.before.median_s)})", "; "),
            *said(found.interrupted_latest(), "the latest run{s} {names} {was} interrupted before every cell was "
                  "measured" + unseen, lambda r: r.run_id),
            *said(found.unseen_in_latest(), "{n} series measured in the run before the latest {was} not measured "
                  "in the latest run: {names}" + unseen, lambda s: f"{s.workload} {s.size_label} {s.label}", "; ")]


def _up_to(target, entries: list, runs: dict) -> list:
    """The entries of ``target``'s own cells, from runs that started no later than it."""
    cells = {r.key for r in target.records}
    own = runs.get(run_id(target))
    until = own.started_at if own is not None else str(target.environment.get("timestamp") or "")
    return [e for e in entries if e.cell in cells
            and (not until or e.run_id not in runs or runs[e.run_id].started_at <= until)]


def import_main(args: argparse.Namespace) -> int:
    """``arraybench store import``: each run added whole, or one line saying why not."""
    failed = 0
    counts: Counter[str] = Counter()
    with open_store(store_location(args)) as store:
        for given in args.runs:
            path = resolve(given)
            try:
                results = load(path)
            except UsageError as exc:
                print(f"arraybench: error: {exc}", file=sys.stderr)
                failed += 1
                continue
            added = store.add(results, source=str(path.parent.resolve()))
            counts[added.outcome] += 1
            detail = f", {added.records} records" if added.records else ""
            note = {"not a run": "; a merge of runs: import the runs themselves",
                    "kept": "; the store holds it complete, this copy is not",
                    "refused": "; the store holds another run with this id, with measurements this "
                               "copy lacks: it is left as it is"}.get(added.outcome, "")
            print(one_line(f"{given}: {added.outcome} (run {added.run_id}{detail}{note})"),
                  file=sys.stderr if added.outcome == "refused" else sys.stdout)
        total = ", ".join(f"{n} {what}" for what, n in counts.items()) or "nothing imported"
        print(f"store {store.describe()}: {total}" + (f"; {failed} could not be read" if failed else ""))
    return 2 if failed or counts["refused"] else 0


def list_main(args: argparse.Namespace) -> int:
    """``arraybench store list``: the stored runs, oldest first, as a table or JSON lines."""
    with open_store(store_location(args), create=False) as store:
        runs = store.runs(machine=args.machine)
        where = store.describe()
        for note in store.notes:  # rows of the wrong shape: skipped, said
            print(f"arraybench: warning: {note}", file=sys.stderr)
    if args.json:
        for run in runs:
            print(json.dumps(dataclasses.asdict(run)))
        return 0
    console = stdout_console()
    console.print(runs_table(runs, where, console.width))
    return 0
