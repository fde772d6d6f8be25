"""``arraybench run``, ``arraybench sweep`` (``run`` across sizes) and ``arraybench timeit`` (one
expression on every library, as ``pyperf timeit``: it becomes a workload, sent by value, run as a
workload file is, with no folder unless ``--output-dir`` asks), and ``run``'s own gates (``--compare
REF`` against a stored run, ``--against REF`` measured beside it).

Exit status: 0 when every cell is ``ok`` or ``skipped``; 1 when some failed or were wrong, a worker
died as it started, or a file could not be written; 2 for bad input, before anything is measured;
128 + the signal's number when stopped by one, what was measured saved for ``--resume``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from .. import api
from ..analysis.pairs import against_regressions
from ..analysis.policy import RunState
from ..backends import SPECS
from ..errors import UsageError
from ..executors.session import Interrupted
from ..host.git import HERE, export, lacking
from ..model.journal import JOURNAL_NAME, JournalState, Reporter, read as read_journal
from ..model.options import RunOptions, parse_context, refuse_other_settings
from ..model.results import Results
from ..options import API, CLI, DEFAULT_OUTPUT_DIR, apply_preset, dashed, on, unique_assignments
from ..outdir import resume_command
from ..render.comparison import print_comparison
from ..render.files import csv_text
from ..render.terminal import console as safe_console
from ..store import open_store
from ..store.refs import check_choice, check_named, find, run_fields, run_line
from ..units import format_ratio
from ..workloads.definition import parse_sizes
from ..workloads.expression import expression_workload
from ..workloads.userfile import load_files
from . import SUMMARY, add_run_options, check_targets, store_location, write_tables
from .compare import gate

def options_from_args(args: argparse.Namespace) -> RunOptions:
    """The run options an ``arraybench run`` (or ``sweep``) command line gives."""
    given = {o.name: getattr(args, o.name) for o in on(CLI) if API in o.on}
    given["sizes"] = parse_sizes(args.sizes) if args.sizes is not None else []
    given["processes"], given["max_processes"] = args.processes
    given["workload_files"] = [str(Path(f).resolve()) for f in args.workload_files]
    for name in ("params", "pythons", "variants"):
        given[name] = unique_assignments(given[name], "--" + dashed(name))
    return RunOptions(**given)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help=SUMMARY["run"],
                       description="Measure workloads on every selected library and device.")
    add_run_options(p)
    p.add_argument("--trust-folder", action="store_true",
                   help="with --resume: run the code the folder names (its workload files, its "
                        "pickled workloads) though your arraybench did not write it; only for a "
                        "folder whose source you trust (docs/faults.md)")
    p.set_defaults(handler=main)
    p = sub.add_parser("sweep", help=SUMMARY["sweep"],
                       description="Measure workloads across a range of sizes, plot time against size "
                                   "and report from which size one library beats another.")
    add_run_options(p)
    p.set_defaults(handler=sweep, sizes=None)
    p = sub.add_parser("timeit", help=SUMMARY["timeit"],
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
    p.set_defaults(handler=timeit, output_dir=None, trust_folder=False)


def run_store_choice(args: argparse.Namespace) -> bool | str:
    """Where ``run`` stores: ``False`` with --no-store, a location, or ``True`` (the default)."""
    typed = getattr(args, "typed", set())
    if "store" in typed:
        if "no_store" in typed and args.no_store:
            raise UsageError("--store and --no-store contradict each other; give one of them")
        return args.store
    return False if args.no_store else True if args.store is None else args.store


def reporter_for(args: argparse.Namespace, cells: int | None = None, done: int = 0) -> Reporter:
    """The progress a command line asked for: a bar and live lines, JSON lines, or nothing."""
    from ..render.progress import ConsoleReporter, JsonLinesReporter

    if getattr(args, "json", False):
        return JsonLinesReporter()
    if getattr(args, "quiet", False):
        return Reporter()  # says nothing
    return ConsoleReporter(cells=cells, cells_done=done)


def resume_state(args: argparse.Namespace) -> JournalState:
    """The run saved in ``--resume DIR``, checked against what else the command line says."""
    out = Path(args.resume)
    state = read_journal(out)
    typed = set(getattr(args, "typed", set()))
    if "processes" in typed:
        typed.add("max_processes")  # --processes sets both
    # The run options typed on the command line, with their values (a default typed counts too).
    refuse_other_settings(state.options, {k: v for k, v in options_from_args(args).to_dict().items()
                                          if k in typed})
    if args.overwrite:
        raise UsageError("--resume continues a run and --overwrite starts afresh; give one of them")
    if args.output_dir not in (DEFAULT_OUTPUT_DIR, args.resume) and Path(args.output_dir) != out:
        raise UsageError(f"--resume writes into {out}; leave out --output-dir {args.output_dir}")
    return state


def main(args: argparse.Namespace) -> int:
    check_targets(args)  # a --csv/--markdown path that cannot be written: said before measuring
    plots = not getattr(args, "no_plots", False)
    store = run_store_choice(args)
    context = parse_context(args.context)
    apply_preset(args)
    reference = gate_reference(args)
    try:
        if getattr(args, "trust_folder", False) and not args.resume:
            raise UsageError("--trust-folder goes with --resume DIR: it lets that folder's code run")
        if args.resume:
            state = resume_state(args)
            out = Path(args.resume)
            progress = RunState.of(state)
            done, missing = progress.cells_done(), progress.missing()
            if not missing:
                print(f"arraybench: {out}: every cell is already measured; nothing to resume. "
                      "results.json and the plots are rewritten from the journal.", file=sys.stderr)
            results = api.resume(out, reporter=reporter_for(args, len(state.cells), done), plots=plots,
                                 store=store, context=context, node_wait=args.node_wait,
                                 workload_files=args.workload_files,
                                 trust_folder=getattr(args, "trust_folder", False))
        else:
            if args.against:
                check_against_sides(args)
            checked = api.plan(options_from_args(args))
            for error in checked.files.errors.values():  # said at once; the rest of the run goes on
                print(f"arraybench: {error}; its workloads are not run", file=sys.stderr)
            refuse_nothing_to_run(checked)
            results = api.execute(checked, args.output_dir, overwrite=args.overwrite,
                                  # every-node multiplies the cells by the nodes, known only later
                                  reporter=reporter_for(args, None if checked.options.cluster else len(checked.cells)),
                                  plots=plots, store=store, context=context)
    except Interrupted as stop:
        if not args.quiet and not args.json:
            print_outcome(stop.results, safe_console(stderr=True))
        measured = sum(1 for r in stop.results.records if r.n_samples or r.status in ("failed", "wrong"))
        folder = stop.results.output_dir
        if folder is None:  # a run without a folder (timeit's default) that had measured nothing
            print(f"arraybench: stopped by {stop} before anything was measured", file=sys.stderr)
            return stop.exit_code
        storing = (" while storing the run (its report is written; the store may not hold it: --resume stores "
                   "it)") if stop.storing else ""
        print(f"arraybench: stopped by {stop}{storing}; {measured} of {len(stop.results.records)} cells "
              f"have results, saved in {folder / 'results.json'} and {folder / JOURNAL_NAME}. "
              f"Continue with: {resume_command(folder)}", file=sys.stderr)
        return stop.exit_code
    if not args.quiet and not args.json:
        print_outcome(results, safe_console())
    saved = write_table_files(args, results)
    return outcome_status(args, results, reference) or (0 if saved else 1)


def outcome_status(args: argparse.Namespace, results: Results, reference: str | None) -> int:
    """The exit status of a finished run: what is missing, a gate, nothing measured, a failure."""
    if not results.complete:  # a cluster run whose node was lost: say what is missing, and how on
        wanted = int(results.settings.get("processes", 1))
        missing = [r for r in results.records if len(r.replicates) < wanted]
        reasons = "; ".join(dict.fromkeys(r.reason for r in missing if not r.replicates and r.reason))
        print(f"arraybench: {len(missing)} of {len(results.records)} cells are not fully measured"
              f"{': ' + reasons if reasons else ''}. "
              f"Continue with: {resume_command(results.output_dir)}", file=sys.stderr)
        return 1
    if reference is not None and (gated := run_gate(args, results, reference)):
        return gated
    if getattr(args, "against", None) and against_gate(args, results):
        return 1
    if results.records and not any(r.status != "skipped" for r in results.records):
        # `--devices gpu` without one: an empty table is no success (nor `last` in the store).
        reasons = "; ".join(dict.fromkeys(r.reason for r in results.records if r.reason))
        print(f"arraybench: nothing was measured: every cell was skipped ({reasons or 'no reason given'})",
              file=sys.stderr)
        return 1
    return 0 if results.clean else 1


def write_table_files(args: argparse.Namespace, results: Results) -> bool:
    """Write ``--csv``/``--markdown``; whether it went (a failure is one line, the run kept)."""
    from ..render.report import findings, markdown_report

    try:
        write_tables(args, {"--csv": lambda: csv_text(results),
                            "--markdown": lambda: markdown_report(results, findings(results))})
    except UsageError as exc:
        kept = "" if results.output_dir is None else f"; the run is kept in {results.output_dir / 'results.json'}"
        print(f"arraybench: error: {exc}{kept}", file=sys.stderr)
        return False
    return True


def check_against_sides(args: argparse.Namespace) -> None:
    """Say where ``--against REF``'s export (tracked files only) lacks ignored files the work tree
    imports (a generated ``_version.py``, an extension); a ``--fail-above`` across them is refused."""
    root, tree = export(args.against)
    extra = lacking(root, tree)
    if not extra:
        return
    shown = ", ".join(extra[:4]) + (f" and {len(extra) - 4} more" if len(extra) > 4 else "")
    what = (f"{args.against}'s side lacks ignored files the work tree has ({shown}), so the two sides "
            "differ by more than their code")
    if args.fail_above is not None:
        raise UsageError(f"--fail-above across --against {args.against}: {what}; remove them (or make them "
                         "tracked), or leave out --fail-above")
    if not args.quiet and not args.json:
        print(f"arraybench: warning: --against {args.against}: {what}", file=sys.stderr)


def refuse_nothing_to_run(checked: api.Plan) -> None:
    """``UsageError`` when no cell can run here by the checks made without a worker (``--devices gpu``
    without one); a cluster's nodes and another interpreter judge for themselves."""
    opts = checked.options
    if opts.cluster or opts.pythons or not checked.cells:
        return
    reasons: dict[str, str] = {}
    for cell in checked.cells:
        why = SPECS[cell.backend].preflight(cell.device) if cell.backend in SPECS else None
        if why is None:
            return
        reasons.setdefault(why, cell.device)
    raise UsageError("nothing to run here: " + "; ".join(f"--devices {d}: {w}" for w, d in reasons.items()))


def print_outcome(results: Results, console: Console) -> None:
    """The table, what did not run, the findings, and where the files are."""
    from ..render import report

    report.show(results, console, errors=True)
    out = results.output_dir
    if out is not None:
        # soft_wrap: a path broken over two lines cannot be copied or clicked
        console.print(f"results: {out / 'results.json'}; report: {out / 'report.html'}", soft_wrap=True,
                      markup=False, highlight=False)


def gate_reference(args: argparse.Namespace) -> str | None:
    """``--compare REF``, checked before anything is measured: a run id must name a stored run."""
    reference = getattr(args, "compare", None)
    against = getattr(args, "against", None)
    if against is not None and reference is not None:
        raise UsageError("--against REF measures its own baseline beside this code; --compare names a stored "
                         "one: give one of them")
    if getattr(args, "fail_above", None) is not None and reference is None and against is None:
        raise UsageError("--fail-above gates against a baseline: add --against REF (measured beside this code, "
                         "in this run) or --compare last (a stored run)")
    if reference is None:
        return None
    try:
        check_choice(reference)
    except UsageError:
        raise UsageError(f"--compare {reference!r} is not last, last~N or a run id "
                         "(arraybench store list shows them)") from None
    with open_store(store_location(args)) as opened:
        try:
            check_named(opened, reference)
        except UsageError as exc:
            raise UsageError(str(exc).replace("--arraybench-compare=", "--compare ")) from None
    return reference


def against_gate(args: argparse.Namespace, results: Results) -> int:
    """``--against REF --fail-above N``: 1 where the work tree is slower than REF's by more than N (95%)."""
    if args.fail_above is None:
        return 0
    slower, undecided = against_regressions(results.pairs, HERE, args.fail_above)
    for p in undecided:
        # A pair not judged (a loaded machine) need not be decided by more processes: its reason is said.
        why = f"not judged: {p.not_judged}" if p.not_judged else "more processes (--processes) would decide it"
        print(f"arraybench: {p.a_label} against {p.b_label}: undecided ({p.ratio:.2f}x, 95% interval "
              f"{p.ci_low:.2f}-{p.ci_high:.2f}); {why}", file=sys.stderr)
    for p in slower:
        print(f"arraybench: {p.a_label} is {format_ratio(p.ratio)} the time of {p.b_label} (95% interval "
              f"{p.ci_low:.2f}-{p.ci_high:.2f}), above --fail-above {args.fail_above:.0%}", file=sys.stderr)
    compared = sum(1 for p in results.pairs if (p.a.environment == HERE) != (p.b.environment == HERE))
    if not compared:
        print("arraybench: --fail-above: no cell was measured on both sides of --against", file=sys.stderr)
        return 1
    return 1 if slower else 0


def run_gate(args: argparse.Namespace, results: Results, reference: str) -> int:
    """The run against ``reference``: the comparison printed, then ``--fail-above``'s status (0: passes)."""
    with open_store(store_location(args)) as opened:
        base, line = find(opened, reference, results)
    line = line.replace("--arraybench-compare=", "--compare ").replace(
        " (--arraybench-save stores this one)", "; the next run compares with this one")
    quiet = args.quiet or args.json
    if base is None:
        print(f"arraybench: {line}", file=sys.stderr)
        return 1 if args.fail_above is not None else 0
    comparison = api.compare(base, results)
    if getattr(args, "json", False):  # which run `last` was, as one JSON line a script can read
        print(json.dumps({"compared": {"base": run_fields(base), "new": run_fields(results)}}), flush=True)
    if not quiet:
        console = safe_console()
        console.print(line, markup=False, highlight=False)
        for named in (run_line("base", base, console.width), run_line("new", results, console.width)):
            console.print(named, markup=False, highlight=False, soft_wrap=True)
        print_comparison(comparison, console, [])
    return gate(comparison, args.fail_above) if args.fail_above is not None else 0


def sweep(args: argparse.Namespace) -> int:
    """``arraybench sweep``: ``run`` across sizes; ``--sizes`` defaults to ``api.sweep_sizes``."""
    if not args.workloads and not args.workload_files:
        raise UsageError("name the workload to sweep, e.g. `arraybench sweep --workloads matmul`")
    if args.sizes is None and not args.resume:
        options = options_from_args(args)
        names = options.workloads or load_files(options.workload_files).names()
        args.sizes = ",".join(parse_sizes(api.sweep_sizes(names)))
    if args.output_dir == DEFAULT_OUTPUT_DIR:
        args.output_dir = "sweep_" + "_".join(args.workloads or ["user"])
    return main(args)


#: ``run``'s options that choose other work or continue a run: here the expression is the work.
NOT_HERE = ("workloads", "workload_files", "resume", "against", "node_wait")


def timeit(args: argparse.Namespace) -> int:
    """``arraybench timeit``: the expression as a workload, run as ``run`` runs one."""
    refused = ["--" + dashed(dest) for dest in NOT_HERE if dest in getattr(args, "typed", ())]
    if refused:
        hint = ("; continue an interrupted timeit with arraybench run --resume DIR"
                if "--resume" in refused else "; arraybench run takes it")
        raise UsageError(f"timeit measures its one expression: {refused[0]} does not go with it{hint}")
    wl = expression_workload(args.expression, args.setup, sizes=args.sizes, name=args.name,
                                 namespace=args.namespace, seed=args.seed)
    args.workloads, args.workload_files = [wl.name], []
    status = main(args)
    if args.output_dir is None and not args.quiet and not args.json:
        # The notes under the table name the run's files; without a folder there are none yet.
        print("no folder written: --output-dir DIR writes results.json, report.html, results.md and "
              "findings.md, as run does")
    return status
