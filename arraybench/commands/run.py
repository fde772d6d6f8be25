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
from rich.markup import escape

from .. import api
from ..errors import UsageError
from ..journal import JOURNAL_NAME, JournalState
from ..journal import read as read_journal
from ..options import DTYPES, RunOptions, parse_sizes
from ..reporter import Reporter
from ..results import Results
from ..session import Interrupted
from ..workloads.userfile import LoadedFiles
from .argtypes import csv_list, fraction, positive_float, positive_int, seed


DEFAULT_OUTPUT_DIR = "benchmark_plots"


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The options of ``run``."""
    d = RunOptions()
    sel = p.add_argument_group("what to run")
    sel.add_argument("--backends", type=csv_list, default=d.backends, metavar="LIST",
                     help=f"libraries, comma-separated (default: {','.join(d.backends)})")
    sel.add_argument("--devices", type=csv_list, default=d.devices, metavar="LIST",
                     help="cpu, gpu or both (default: cpu,gpu)")
    sel.add_argument("--workloads", type=csv_list, default=[], metavar="LIST",
                     help="workloads (default: the built-in suite, or with --workload-file the "
                          "files' workloads; see `arraybench list`)")
    sel.add_argument("--workload-file", action="append", default=[], dest="workload_files",
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
                          "compiled (jax.jit / torch.compile); default: latency")
    sel.add_argument("--include-transfer", action="store_true",
                     help="also time GPU calls from host NumPy data to a host result")
    sel.add_argument("--roofline", action="store_true",
                     help="also measure the machine's ceilings (memory bandwidth, peak matmul) "
                          "and report each result's share of them")
    how = p.add_argument_group("how to measure")
    how.add_argument("--processes", type=positive_int, default=d.replicates, dest="replicates",
                     metavar="N", help="worker processes per cell, each one replicate "
                                       f"(default: {d.replicates})")
    how.add_argument("--max-time", type=positive_float, default=d.max_time, metavar="SECONDS",
                     help=f"sampling budget per cell, all processes together (default: {d.max_time:g})")
    how.add_argument("--min-samples", type=positive_int, default=d.min_samples, metavar="N",
                     help=f"fewest samples per cell (default: {d.min_samples})")
    how.add_argument("--rel-ci", type=fraction, default=d.rel_ci, metavar="FRACTION",
                     help="stop sampling once the median's 95%% CI is within this (default: 0.02 = 2%%)")
    how.add_argument("--threads", type=positive_int, default=None, metavar="N",
                     help="CPU threads for every library (default: all cores)")
    how.add_argument("--cold", action="store_true", help="evict caches before every sample")
    how.add_argument("--allow-tf32", action="store_true",
                     help="let GPUs use TF32 for float32 matmuls (off: full precision, recorded)")
    how.add_argument("--timeout", type=positive_float, default=d.timeout, metavar="SECONDS",
                     help=f"kill a worker silent this long on one cell (default: {d.timeout:g})")
    how.add_argument("--seed", type=seed, default=d.seed, help="seed for inputs and ordering (0 or more)")
    out = p.add_argument_group("output")
    out.add_argument("--output-dir", "-o", default=DEFAULT_OUTPUT_DIR, metavar="DIR",
                     help="where results.json, the journal and the plots go (default: benchmark_plots)")
    out.add_argument("--overwrite", action="store_true",
                     help="start afresh in a folder that holds an interrupted run")
    out.add_argument("--resume", metavar="DIR", default=None,
                     help="continue an interrupted run in DIR with its own settings")
    out.add_argument("-q", "--quiet", action="store_true", help="print nothing while running")
    out.add_argument("--json", action="store_true",
                     help="stream one JSON record per line on stdout as each cell finishes")
    out.add_argument("--no-plots", action="store_true", help="skip the SVG plots (report.html, results.md and results.csv are still written)")


def options_from_args(args: argparse.Namespace) -> RunOptions:
    """The run options an ``arraybench run`` (or ``sweep``) command line gives."""
    return RunOptions(
        backends=args.backends, devices=args.devices, workloads=args.workloads,
        sizes=parse_sizes(args.sizes) if args.sizes is not None else [],
        dtype=args.dtype, modes=args.modes,
        include_transfer=args.include_transfer, roofline=args.roofline, replicates=args.replicates,
        max_time=args.max_time, min_samples=args.min_samples, rel_ci=args.rel_ci,
        threads=args.threads, cold=args.cold, allow_tf32=args.allow_tf32, timeout=args.timeout,
        seed=args.seed, workload_files=[str(Path(f).resolve()) for f in args.workload_files],
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run benchmarks (the default suite without options)",
                       description="Measure workloads on every selected library and device.")
    add_run_options(p)
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
    typed = getattr(args, "typed", set())
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
    given = options_given(args)
    wanted = state.options.to_dict()
    differs = [f"{_OPTION_NAMES.get(name, name)} (saved {wanted[name]!r}, given {value!r})"
               for name, value in given.items() if name in wanted and wanted[name] != value]
    if differs:
        raise UsageError("--resume uses the run's own settings; these differ: " + "; ".join(differs))
    if args.overwrite:
        raise UsageError("--resume continues a run and --overwrite starts afresh; give one of them")
    if args.output_dir not in (DEFAULT_OUTPUT_DIR, args.resume) and Path(args.output_dir) != out:
        raise UsageError(f"--resume writes into {out}; leave out --output-dir {args.output_dir}")
    return state


#: Run options whose command-line name differs from their name in ``RunOptions``.
_OPTION_NAMES = {"replicates": "processes"}


def _missing(state: JournalState) -> tuple[int, int]:
    """(cells complete, measurements missing) in a journalled run."""
    want = state.options.replicates
    done = missing = 0
    for c in state.cells:
        have = len(state.replicates.get(c.key, {}))
        if c.config in state.unavailable or have >= want:
            done += 1
        else:
            missing += want - have
    return done, missing


def main(args: argparse.Namespace) -> int:
    plots = not getattr(args, "no_plots", False)
    try:
        if args.resume:
            state = resume_state(args)
            out = Path(args.resume)
            done, missing = _missing(state)
            if not missing:
                print(f"arraybench: {out}: every cell is already measured; nothing to resume. "
                      "results.json and the plots are rewritten from the journal.", file=sys.stderr)
            results = api.resume(out, reporter=reporter_for(args, len(state.cells), done), plots=plots)
        else:
            checked = plan_from_args(args)
            report_file_errors(checked.files)
            results = api.execute(checked, args.output_dir, overwrite=args.overwrite,
                                  reporter=reporter_for(args, len(checked.cells)), plots=plots)
    except Interrupted as stop:
        if not args.quiet and not args.json:
            print_outcome(stop.results, Console(stderr=True))
        measured = sum(1 for r in stop.results.records if r.n_samples or r.status in ("failed", "wrong"))
        folder = stop.results.output_dir
        print(
            f"arraybench: stopped by {stop}; {measured} of {len(stop.results.records)} cells "
            f"have results, saved in {folder / 'results.json'} and {folder / JOURNAL_NAME}. "
            f"Continue with: arraybench run --resume {folder}",
            file=sys.stderr,
        )
        return stop.exit_code
    if not args.quiet and not args.json:
        print_outcome(results, Console())
    return 0 if results.clean else 1


def report_file_errors(loaded: LoadedFiles) -> None:
    """Say at once, on stderr, which workload files did not load; the rest of the run goes on."""
    for error in loaded.errors.values():
        print(f"arraybench: {error}; its workloads are not run", file=sys.stderr)


def print_outcome(results: Results, console: Console) -> None:
    """The table, what did not run, the findings, and where the files are."""
    from ..render.tables import print_table

    print_table(results.records, console)
    for e in results.errors:
        console.print(f"[red]not run:[/] {escape(e['error'])}", soft_wrap=True)
    found = results.findings()
    if found:
        console.print("\n[bold]Findings[/]")
        for f in found:
            console.print(f"- {f}", markup=False, highlight=False)
    out = results.output_dir
    if out is not None:
        console.print(f"results: {out / 'results.json'}; report: {out / 'report.html'}")
