"""``arraybench run``: measure workloads on every selected library and device.

Exit status: 0 when every cell is ``ok`` or ``skipped``; 1 when some are ``failed`` or ``wrong``
(the run itself went through, and says which and why), a worker died as it started, or a file
could not be written (one line says which, and how to go on); 2 for bad input, before anything is
measured or overwritten; 128 + the signal number when stopped by one (130 for Ctrl-C, 143 for
SIGTERM), with what was measured saved and ``--resume`` to go on.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from .. import api
from ..errors import UsageError
from ..api import (ALLOCATOR_CHOICES, DTYPES, JOURNAL_NAME, SPECS, Interrupted, JournalState, LoadedFiles,
                   Reporter, Results, RunOptions, RunState, parse_context, parse_sizes, read_journal,
                   resume_command)
from ..render.terminal import console as safe_console
from .argtypes import (Assignments, CsvExtend, assignment, csv_list, file_path, fraction, non_negative_float,
                       percent, positive_float, positive_int, processes, python_assignment, seed,
                       unique_assignments, variant_assignment)
from .presets import apply_preset, preset_text
from .rungate import against_gate, gate_reference, run_gate
from .storeargs import add_store_option, run_store_choice
from .tablefiles import add_table_options, check_targets, say_written, write_tables


DEFAULT_OUTPUT_DIR = "benchmark_plots"


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The options of ``run``."""
    d = RunOptions()
    sel = p.add_argument_group("what to run")
    sel.add_argument("--backends", type=csv_list, default=d.backends, metavar="LIST",
                     help=f"libraries, comma-separated (default: {','.join(d.backends)}; also: "
                          f"{','.join(b for b in SPECS if b not in d.backends)})")
    sel.add_argument("--devices", type=csv_list, default=d.devices, metavar="LIST",
                     help="cpu, gpu or both (default: cpu,gpu)")
    sel.add_argument("--workloads", type=csv_list, action=CsvExtend, default=[], metavar="LIST",
                     help="workloads (default: the built-in suite, or with --workload-file the "
                          "files' workloads; see `arraybench list`)")
    sel.add_argument("--workload-file", action="append", default=[], dest="workload_files", type=file_path,
                     metavar="FILE", help="a Python file of @arraybench.workload functions, your own "
                                          "workloads (repeatable; see examples/)")
    sel.add_argument("--sizes", default=None, metavar="LIST",
                     help="size labels (small,large), element counts (100,1000) or a range "
                          "LO:HI[:STEPS] (default: each workload's own sizes, small,large for the "
                          "built-ins)")
    sel.add_argument("--dtype", default=d.dtype, choices=DTYPES,
                     help="floating dtype for every library (default: float64, as the seed)")
    sel.add_argument("--mode", type=csv_list, default=d.modes, dest="modes", metavar="LIST",
                     help="latency (sync after every call), throughput (sync once per batch), "
                          "compiled (jax.jit / torch.compile / mx.compile; NumPy: numba.njit); "
                          "default: latency")
    sel.add_argument("--param", action=Assignments, type=assignment, default=[], dest="params",
                     metavar="[WORKLOAD.]NAME=VALUE",
                     help="a setting for every selected workload that has one of that name, in "
                          "its own type, e.g. --param tsteps=50, or for one workload: "
                          "--param jacobi_2d.tsteps=50 (repeatable, each name once; see "
                          "docs/workloads.md)")
    sel.add_argument("--python", action=Assignments, type=python_assignment, default=[],
                     dest="pythons", metavar="LABEL=INTERPRETER",
                     help="run each backend also (or only) under another Python, e.g. "
                          "--python np126=.venv126/bin/python, side by side with the others "
                          "(repeatable; docs/environments.md)")
    sel.add_argument("--against", metavar="REF", default=None,
                     help="measure a git ref's code beside the work tree's, side by side in this one run "
                          "(like asv continuous): the workload files and your package from REF, each "
                          "pair of the two one verdict")
    sel.add_argument("--variant", action=Assignments, type=variant_assignment, default=[],
                     dest="variants", metavar="LABEL:VAR=VALUE[,VAR=VALUE]",
                     help="run each backend once per set of environment variables, e.g. "
                          "--variant t1:OPENBLAS_NUM_THREADS=1 (repeatable; with --python, every "
                          "interpreter under every variant; LABEL: alone is the inherited set)")
    sel.add_argument("--include-transfer", action="store_true",
                     help="also time GPU calls from host NumPy data to a host result")
    sel.add_argument("--roofline", action="store_true",
                     help="also measure the machine's ceilings (memory bandwidth, peak matmul) "
                          "and report each result's share of them")
    how = p.add_argument_group("how to measure")
    how.add_argument("--processes", type=processes, default=(d.processes, d.max_processes),
                     dest="processes", metavar="auto|N|MIN:MAX",
                     help="worker processes per cell, each one replicate: N exactly, or from MIN up "
                          "to MAX, adding processes while the cell's interval is wider than --rel-ci "
                          f"(default: auto = {d.processes}:{d.max_processes})")
    how.add_argument("--max-time", type=positive_float, default=d.max_time, metavar="SECONDS",
                     help=f"sampling budget per cell, all processes together (default: {d.max_time:g})")
    how.add_argument("--min-samples", type=positive_int, default=d.min_samples, metavar="N",
                     help=f"fewest samples per cell (default: {d.min_samples})")
    how.add_argument("--warmup", type=non_negative_float, default=d.warmup, metavar="SECONDS",
                     help=f"seconds of untimed calls per cell and process before its samples, two "
                          f"calls at least (default: {d.warmup:g})")
    how.add_argument("--rel-ci", type=fraction, default=d.rel_ci, metavar="FRACTION",
                     help="stop sampling once the median's 95%% CI is within this (default: 0.02 = 2%%)")
    how.add_argument("--threads", type=positive_int, default=None, metavar="N",
                     help="CPU threads for every library (default: all cores)")
    how.add_argument("--allocator", choices=ALLOCATOR_CHOICES, default=d.allocator,
                     help="the C allocator's state on the CPU: memory reused between calls (the "
                          "headline), fresh pages, or both, large outputs timed in each "
                          f"(default: {d.allocator}; one state needs no second worker)")
    how.add_argument("--cold", action="store_true", help="evict caches before every sample")
    how.add_argument("--allow-tf32", action="store_true",
                     help="let GPUs use TF32 for float32 matmuls (off: full precision, recorded)")
    how.add_argument("--self-check", action="store_true",
                     help="measure the first library against itself beside the run (A/A): how often "
                          "this machine, now, calls identical configurations faster or slower")
    preset = how.add_mutually_exclusive_group()
    preset.add_argument("--fast", dest="preset", action="store_const", const="fast", default=None,
                        help="a quick look, as pyperf's --fast: " + preset_text("fast"))
    preset.add_argument("--rigorous", dest="preset", action="store_const", const="rigorous",
                        help="tighter numbers for longer, as pyperf's --rigorous: " + preset_text("rigorous"))
    how.add_argument("--timeout", type=positive_float, default=d.timeout, metavar="SECONDS",
                     help=f"kill a worker silent this long on one cell (default: {d.timeout:g})")
    how.add_argument("--seed", type=seed, default=d.seed, help="seed for inputs and ordering (0 or more)")
    where = p.add_argument_group("where to run (a Ray cluster: docs/cluster.md)")
    where.add_argument("--cluster", default=None, metavar="ADDRESS",
                       help="run on the Ray cluster at ADDRESS (auto, HOST:PORT, ray://HOST:10001), "
                            "one shard (workload and size) per node at a time; needs arraybench[ray]")
    where.add_argument("--on", default=d.on, choices=("every-node", "any-node"),
                       help="every-node: the whole plan on each node (machines compared); any-node: "
                            "the plan split across identical nodes (default: every-node)")
    where.add_argument("--gpu-type", default=None, metavar="TYPE",
                       help="only nodes with this Ray accelerator type, e.g. H100")
    where.add_argument("--node-wait", type=positive_float, default=60.0, metavar="SECONDS",
                       help="with --resume: how long an every-node run waits for a node it needs "
                            "(default: 60)")
    out = p.add_argument_group("output")
    out.add_argument("--output-dir", "-o", default=DEFAULT_OUTPUT_DIR, metavar="DIR",
                     help="where results.json, the journal and the plots go (default: benchmark_plots)")
    out.add_argument("--overwrite", action="store_true",
                     help="replace the run in the output folder (finished or interrupted): what "
                          "it wrote there is removed first; without it, a folder that holds a run "
                          "is refused")
    out.add_argument("--resume", metavar="DIR", default=None,
                     help="continue an interrupted run in DIR with its own settings")
    out.add_argument("-q", "--quiet", action="store_true", help="print nothing while running")
    out.add_argument("--json", action="store_true",
                     help="stream one JSON record per line on stdout as each cell finishes")
    out.add_argument("--no-plots", action="store_true", help="skip the SVG plots (report.html, results.md and results.csv are still written)")
    add_table_options(out, csv="the table as CSV (results.csv)",
                      markdown="the table as Markdown, with its notes and findings (results.md)")
    # -- the results store and the run's context --
    add_store_option(out, "the finished run is appended to")
    out.add_argument("--no-store", action="store_true",
                     help="do not append the run to the results store (results.json is written as always)")
    out.add_argument("--context", action="append", default=[], metavar="KEY=VALUE",
                     help="a label saved with the run, e.g. --context machine_room=B (repeatable; "
                          "in a git work tree the commit, branch and dirty state are recorded "
                          "without it); history attributes changes to it")
    gate = p.add_argument_group("gate (a CI job in one command, as asv continuous)")
    gate.add_argument("--compare", default=None, metavar="REF",
                      help="compare the finished run with a stored run: last (the latest complete "
                           "run of these cells on this machine), last~N, or a run id")
    gate.add_argument("--fail-above", type=percent, default=None, metavar="PERCENT",
                      help="with --compare: exit with status 1 if a cell is significantly slower "
                           "by more than this (e.g. 10%%), broke, or nothing could be compared")


def options_from_args(args: argparse.Namespace) -> RunOptions:
    """The run options an ``arraybench run`` (or ``sweep``) command line gives."""
    return RunOptions(
        backends=args.backends, devices=args.devices, workloads=args.workloads,
        sizes=parse_sizes(args.sizes) if args.sizes is not None else [],
        dtype=args.dtype, modes=args.modes,
        include_transfer=args.include_transfer, roofline=args.roofline,
        processes=args.processes[0], max_processes=args.processes[1],
        max_time=args.max_time, min_samples=args.min_samples, rel_ci=args.rel_ci, warmup=args.warmup,
        threads=args.threads, allocator=args.allocator, cold=args.cold, allow_tf32=args.allow_tf32,
        timeout=args.timeout,
        seed=args.seed, workload_files=[str(Path(f).resolve()) for f in args.workload_files],
        cluster=args.cluster, on=args.on, gpu_type=args.gpu_type, params=unique_assignments(args.params),
        pythons=unique_assignments(args.pythons, "--python"),
        variants=unique_assignments(args.variants, "--variant"), against=args.against,
        self_check=args.self_check,
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run benchmarks (the default suite without options)",
                       description="Measure workloads on every selected library and device.")
    add_run_options(p)
    p.add_argument("--trust-folder", action="store_true",
                   help="with --resume: run the code the folder names (its workload files, its "
                        "pickled workloads) though your arraybench did not write it; only for a "
                        "folder whose source you trust (docs/faults.md)")
    p.set_defaults(handler=main)


def reporter_for(args: argparse.Namespace, cells: int | None = None, done: int = 0) -> Reporter:
    """The progress a command line asked for: a bar and live lines, JSON lines, or nothing."""
    from ..render.progress import ConsoleReporter, JsonLinesReporter, QuietReporter

    if getattr(args, "json", False):
        return JsonLinesReporter()
    if getattr(args, "quiet", False):
        return QuietReporter()
    return ConsoleReporter(cells=cells, cells_done=done)


def options_given(args: argparse.Namespace) -> dict:
    """The run options typed on the command line (``cli.parse`` records which), with their values;
    an option typed with its default value counts too."""
    typed = set(getattr(args, "typed", set()))
    if "processes" in typed:
        typed.add("max_processes")  # --processes sets both
    return {k: v for k, v in options_from_args(args).to_dict().items() if k in typed}


def plan_from_args(args: argparse.Namespace) -> api.Plan:
    """Options and cells from parsed arguments, checked; ``UsageError`` says what is wrong.

    Nothing is measured, written or started here (user workload files are imported).
    """
    return api.plan(options_from_args(args))


def resume_state(args: argparse.Namespace) -> JournalState:
    """The run saved in ``--resume DIR``, checked against what else the command line says."""
    out = Path(args.resume)
    state = read_journal(out)
    api.refuse_other_settings(state.options, options_given(args))
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
            checked = plan_from_args(args)
            report_file_errors(checked.files)
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
        print(
            f"arraybench: stopped by {stop}{storing}; {measured} of {len(stop.results.records)} cells "
            f"have results, saved in {folder / 'results.json'} and {folder / JOURNAL_NAME}. "
            f"Continue with: {resume_command(folder)}",
            file=sys.stderr,
        )
        return stop.exit_code
    if not args.quiet and not args.json:
        print_outcome(results, safe_console())
    saved = write_table_files(args, results)
    status = outcome_status(args, results, reference)
    return status or (0 if saved else 1)


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
    if reference is not None:
        gated = run_gate(args, results, reference)
        if gated:
            return gated
    if getattr(args, "against", None) and against_gate(args, results):
        return 1
    if results.records and not any(r.status != "skipped" for r in results.records):
        # `--devices gpu` on a machine without one: an empty table is no success, and the store
        # never takes such a run as `last` or a point of history.
        reasons = "; ".join(dict.fromkeys(r.reason for r in results.records if r.reason))
        print(f"arraybench: nothing was measured: every cell was skipped ({reasons or 'no reason given'})",
              file=sys.stderr)
        return 1
    return 0 if results.clean else 1


def write_table_files(args: argparse.Namespace, results: Results) -> bool:
    """Write the table to ``--csv``/``--markdown`` (as results.csv and results.md); whether it
    went. A file that could not be written is one line: the run's own files are kept."""
    from ..render.csvout import csv_text
    from ..render.markdown import markdown_report
    from ..render.report import findings

    try:
        written = write_tables(args, {"--csv": lambda: csv_text(results),
                                      "--markdown": lambda: markdown_report(results, findings(results))})
    except UsageError as exc:
        kept = "" if results.output_dir is None else f"; the run is kept in {results.output_dir / 'results.json'}"
        print(f"arraybench: error: {exc}{kept}", file=sys.stderr)
        return False
    say_written(args, written)
    return True


def check_against_sides(args: argparse.Namespace) -> None:
    """Say where ``--against REF``'s side lacks ignored files the work tree imports with its code
    (a generated ``_version.py``, a compiled extension): REF's export holds tracked files only, so
    the two sides differ by more than their code. One line on stderr; a gate (``--fail-above``)
    across them is refused (``UsageError``), before anything is measured."""
    root, tree = api.export_ref(args.against)
    extra = api.lacking_from_ref(root, tree)
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
    """``UsageError`` when no cell can run here, by the checks made without starting a worker
    (``--devices gpu`` on a machine without one): one line instead of an empty table, nothing
    written or stored. A cluster's nodes and another interpreter judge for themselves."""
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


def report_file_errors(loaded: LoadedFiles) -> None:
    """Say at once, on stderr, which workload files did not load; the rest of the run goes on."""
    for error in loaded.errors.values():
        print(f"arraybench: {error}; its workloads are not run", file=sys.stderr)


def print_outcome(results: Results, console: Console) -> None:
    """The table, what did not run, the findings, and where the files are."""
    from ..render import report

    report.show(results, console, errors=True)
    out = results.output_dir
    if out is not None:
        # soft_wrap: a path broken over two lines cannot be copied or clicked
        console.print(f"results: {out / 'results.json'}; report: {out / 'report.html'}", soft_wrap=True,
                      markup=False, highlight=False)
