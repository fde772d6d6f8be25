"""The stored runs. ``arraybench history [RUN]``: each cell's results over them, the steps and what
changed with each (RUN: only its cells on its machine, up to it). ``--output-dir`` writes the plots (no
file unless asked); ``--fail-above 10%`` is a CI gate: status 1 when a latest run is a step that much
slower. ``arraybench store``: ``import`` adds earlier runs' folders, ``list`` shows what the store holds.
Importing is idempotent, each run whole or not at all; a folder that cannot be read, or a copy that
lacks measurements the stored run holds, is one line (status 2 at the end), the others imported."""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys

from ..errors import UsageError, one_line
from ..model.runs import machine_id_of, run_id
from ..store.refs import load_run, this_machine
from ..units import format_change
from ..options import fraction, percent, positive_int
from . import add, add_filters, check_targets, say_written, store_location, write_tables


def register(sub: argparse._SubParsersAction) -> None:
    from ..analysis.compare import DEFAULT_THRESHOLD
    from ..analysis.history import DEFAULT_FDR
    from ..render.comparison import DEFAULT_LAST

    p = sub.add_parser("history", help="each cell's results over the stored runs, with the steps in them",
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
    p.set_defaults(handler=main)
    _register_store(sub)


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


def main(args: argparse.Namespace) -> int:
    from ..analysis.history import history
    from ..store import open_store
    from ..render.comparison import print_history
    from ..render.files import history_csv, history_json
    from ..render.report import history_markdown
    from ..render.terminal import stdout_console

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
    say_written(args, write_tables(args, {"--csv": lambda: history_csv(found, args.last),
                                          "--markdown": lambda: history_markdown(found, where, args.last)}))
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
            from ..outdir import prepare
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
    lines = []
    bad = found.regressions(limit)
    if bad:
        lines.append(f"{len(bad)} regression{'s' if len(bad) != 1 else ''} above {limit:.0%} in the "
                     "latest runs: " + "; ".join(f"{s.series.workload} {s.series.size_label} "
                                                 f"{s.series.label} ({format_change(s.ratio)})" for s in bad))
    unjudged = found.unjudged_above(limit)
    if unjudged:
        lines.append(f"{len(unjudged)} slowdown{'s' if len(unjudged) != 1 else ''} above {limit:.0%} in "
                     "the latest runs could not be judged (one process on a side; measure with "
                     "--processes 2 or more): "
                     + "; ".join(f"{u.series.workload} {u.series.size_label} {u.series.label} "
                                 f"({format_change(u.after.median_s / u.before.median_s)})" for u in unjudged))
    interrupted = found.interrupted_latest()
    if interrupted:
        lines.append(one_line(f"the latest run{'s' if len(interrupted) != 1 else ''} "
                              f"{', '.join(r.run_id for r in interrupted)} "
                              f"{'were' if len(interrupted) != 1 else 'was'} interrupted before every cell "
                              "was measured; --fail-above passes nothing unseen"))
    unseen = found.unseen_in_latest()
    if unseen:
        lines.append(one_line(f"{len(unseen)} series measured in the run before the latest "
                              f"{'were' if len(unseen) != 1 else 'was'} not measured in the latest run: "
                              + "; ".join(f"{s.workload} {s.size_label} {s.label}" for s in unseen)
                              + "; --fail-above passes nothing unseen"))
    return lines


def _up_to(target, entries: list, runs: dict) -> list:
    """The entries of ``target``'s own cells, from runs that started no later than it."""
    cells = {r.key for r in target.records}
    own = runs.get(run_id(target))
    until = own.started_at if own is not None else str(target.environment.get("timestamp") or "")
    return [e for e in entries if e.cell in cells
            and (not until or e.run_id not in runs or runs[e.run_id].started_at <= until)]


def _register_store(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("store", help="the results store: import earlier runs, list what it holds",
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


def import_main(args: argparse.Namespace) -> int:
    """``arraybench store import``: each run added whole, or one line saying why not."""
    from ..model.results import load, resolve
    from ..store import open_store

    failed = refused = 0
    counts: dict[str, int] = {}
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
            counts[added.outcome] = counts.get(added.outcome, 0) + 1
            detail = f", {added.records} records" if added.records else ""
            note = {"not a run": "; a merge of runs: import the runs themselves",
                    "kept": "; the store holds it complete, this copy is not",
                    "refused": "; the store holds another run with this id, with measurements this "
                               "copy lacks: it is left as it is"}.get(added.outcome, "")
            refused += added.outcome == "refused"
            print(one_line(f"{given}: {added.outcome} (run {added.run_id}{detail}{note})"),
                  file=sys.stderr if added.outcome == "refused" else sys.stdout)
        total = ", ".join(f"{n} {what}" for what, n in counts.items()) or "nothing imported"
        print(f"store {store.describe()}: {total}" + (f"; {failed} could not be read" if failed else ""))
    return 2 if failed or refused else 0


def list_main(args: argparse.Namespace) -> int:
    """``arraybench store list``: the stored runs, oldest first, as a table or JSON lines."""
    from ..render.terminal import runs_table, stdout_console
    from ..store import open_store

    with open_store(store_location(args), create=False) as store:
        runs = store.runs(machine=args.machine)
        where = store.describe()
        for note in store.notes:  # rows of the wrong shape: skipped, said
            print(f"arraybench: warning: {note}", file=sys.stderr)
    if args.json:
        import dataclasses
        import json

        for run in runs:
            print(json.dumps(dataclasses.asdict(run)))
        return 0
    console = stdout_console()
    console.print(runs_table(runs, where, console.width))
    return 0
