"""``arraybench run``: measure workloads on every selected library and device.

Exit status: 0 when every cell is ``ok`` or ``skipped``; 1 when some are ``failed`` or ``wrong``
(the run itself went through, and says which and why); 2 for bad input, before anything is
measured or overwritten; 128 + the signal number when stopped by one (130 for Ctrl-C, 143 for
SIGTERM), with what was measured saved and ``--resume`` to go on.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from .. import journal as journal_mod
from .. import plan as planning
from ..errors import UsageError
from ..plan import RunOptions
from ..records import Results
from ..runner import Interrupted, Runner
from ..userfile import LoadedFiles
from ..workloads import BUILTIN
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
    sel.add_argument("--dtype", default=d.dtype, choices=planning.DTYPES,
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
    how.add_argument("--processes", type=positive_int, default=d.processes, metavar="N",
                     help=f"worker processes per library and device (default: {d.processes})")
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
    return RunOptions(
        backends=args.backends, devices=args.devices, workloads=args.workloads,
        sizes=planning.parse_sizes(args.sizes) if args.sizes is not None else [],
        dtype=args.dtype, modes=args.modes,
        include_transfer=args.include_transfer, roofline=args.roofline, processes=args.processes,
        max_time=args.max_time, min_samples=args.min_samples, rel_ci=args.rel_ci,
        threads=args.threads, cold=args.cold, allow_tf32=args.allow_tf32, timeout=args.timeout,
        seed=args.seed, workload_files=[str(Path(f).resolve()) for f in args.workload_files],
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run benchmarks (the default suite without options)",
                       description="Measure workloads on every selected library and device.")
    add_run_options(p)
    p.set_defaults(handler=main)


def _workloads(files: list[str]) -> tuple[dict, LoadedFiles]:
    """Every known workload once the users' files are imported, and what the files gave."""
    from .. import workloads
    from ..userfile import load_files

    loaded = load_files(files)
    return dict(workloads.REGISTRY), loaded


def _select_from_files(options: RunOptions, known: dict, loaded: LoadedFiles) -> None:
    """With --workload-file and no --workloads, run the files' workloads (not the whole suite).

    A file that did not load costs only its own workloads; when nothing is left to run, or a
    workload asked for by name is missing, the files' errors are the message.
    """
    if not options.workload_files:
        return
    errors = "; ".join(loaded.errors.values())
    if not options.workloads:
        options.workloads = loaded.names()
        if not options.workloads:
            raise UsageError(errors or "the workload files define no workload")
    unknown = [w for w in options.workloads if w not in known]
    if unknown and errors:
        raise UsageError(f"unknown workload {unknown[0]!r} (a workload file did not load: {errors})")



def prepare_output_dir(path: str, *, overwrite: bool) -> Path:
    """Create the output folder and prove it writable before anything is measured."""
    if not str(path).strip():
        raise UsageError("--output-dir is empty; name a folder (default: benchmark_plots)")
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--output-dir {out}: exists and is not a folder")
    _check_writable(out, "--output-dir ")
    journal = out / journal_mod.JOURNAL_NAME
    if journal.exists() and not overwrite and not _holds_complete_run(out):
        raise UsageError(
            f"{out} holds an unfinished run; continue it with `arraybench run --resume {out}`, "
            "or start afresh with --overwrite"
        )
    return out


def _check_writable(out: Path, what: str = "") -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".arraybench-write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"{what}{out}: cannot write there ({exc.strerror or exc})") from None


def _holds_complete_run(out: Path) -> bool:
    from ..records import load

    try:
        return load(out / "results.json").complete
    except UsageError:  # missing, truncated, not ours: not a finished run
        return False


def _reporter(args: argparse.Namespace, cells: int | None = None, done: int = 0):
    from ..report.progress import ConsoleReporter, JsonLinesReporter, QuietReporter

    if getattr(args, "json", False):
        return JsonLinesReporter()
    if getattr(args, "quiet", False):
        return QuietReporter()
    return ConsoleReporter(cells=cells, cells_done=done)



def _check_resume_matches(args: argparse.Namespace, saved: RunOptions) -> None:
    """--resume runs with the saved settings; refuse any option that says otherwise."""
    given = options_given(args)
    wanted = saved.to_dict()
    differs = []
    for name, value in given.items():
        if name in wanted and wanted[name] != value:
            differs.append(f"{name} (saved {wanted[name]!r}, given {value!r})")
    if differs:
        raise UsageError("--resume uses the run's own settings; these differ: " + "; ".join(differs))



def options_given(args: argparse.Namespace) -> dict:
    """The run options the user typed (those that differ from the defaults)."""
    defaults = RunOptions().to_dict()
    now = options_from_args(args).to_dict()
    return {k: v for k, v in now.items() if v != defaults.get(k)}



def plan_from_args(args: argparse.Namespace) -> tuple[RunOptions, list, LoadedFiles]:
    """Options and cells from parsed arguments, checked; ``UsageError`` says what is wrong.

    Nothing is measured, written or started here (user workload files are imported).
    """
    options = options_from_args(args)
    known, loaded = _workloads(options.workload_files)
    _select_from_files(options, known, loaded)
    planning.validate(options, known)
    return options, planning.build_plan(options, known, list(BUILTIN)), loaded


def resume_state(args: argparse.Namespace) -> journal_mod.JournalState:
    """The run saved in ``--resume DIR``, checked against what else the command line says."""
    out = Path(args.resume)
    state = journal_mod.read(out)
    _check_resume_matches(args, state.options)
    if args.overwrite:
        raise UsageError("--resume continues a run and --overwrite starts afresh; give one of them")
    if args.output_dir not in (DEFAULT_OUTPUT_DIR, args.resume) and Path(args.output_dir) != out:
        raise UsageError(f"--resume writes into {out}; leave out --output-dir {args.output_dir}")
    known, _ = _workloads(state.options.workload_files)
    try:
        planning.validate(state.options, known)
    except UsageError as exc:
        raise UsageError(f"{out / journal_mod.JOURNAL_NAME}: its saved settings are not valid here ({exc})") from None
    _check_writable(out)
    return state


def main(args: argparse.Namespace) -> int:
    if args.resume:
        state = resume_state(args)
        out = Path(args.resume)
        options = state.options
        _, loaded = _workloads(options.workload_files)
        cells = state.cells
        _report_file_errors(loaded)
        done = sum(1 for c in cells if len(state.shards.get(c.key, {})) >= options.processes)
        runner = Runner(cells, options, out, _reporter(args, len(cells), done), resume=state)
        if runner.missing() == 0:
            print(f"arraybench: {out}: every cell is already measured; nothing to resume. "
                  "results.json and the plots are rewritten from the journal.", file=sys.stderr)
    else:
        options, cells, loaded = plan_from_args(args)
        out = prepare_output_dir(args.output_dir, overwrite=args.overwrite)
        _report_file_errors(loaded)
        runner = Runner(cells, options, out, _reporter(args, len(cells)))
    try:
        results = _with_errors(runner.run(), loaded, out)
    except Interrupted as stop:
        reporter = runner.reporter
        if hasattr(reporter, "stop"):
            reporter.stop()
        _with_errors(stop.results, loaded, out)
        _write_reports(stop.results, out, args, console=Console(stderr=True))
        measured = sum(1 for r in stop.results.records if r.n_samples or r.status in ("failed", "wrong"))
        print(
            f"arraybench: stopped by {stop}; {measured} of {len(stop.results.records)} cells "
            f"have results, saved in {out / 'results.json'} and {out / journal_mod.JOURNAL_NAME}. "
            f"Continue with: arraybench run --resume {out}",
            file=sys.stderr,
        )
        return stop.exit_code
    _write_reports(results, out, args)
    clean = all(r.status in ("ok", "skipped") for r in results.records) and not results.errors
    return 0 if clean else 1


def _report_file_errors(loaded: LoadedFiles) -> None:
    """Say at once, on stderr, which workload files did not load; the rest of the run goes on."""
    for error in loaded.errors.values():
        print(f"arraybench: {error}; its workloads are not run", file=sys.stderr)


def _with_errors(results: Results, loaded: LoadedFiles, out: Path) -> Results:
    """Record the files that did not load in results.json: they have no cells to fail."""
    if loaded.errors:
        results.errors = loaded.error_entries()
        results.save(out / "results.json")
    return results


def _write_reports(results: Results, out: Path, args: argparse.Namespace,
                   console: Console | None = None) -> None:
    from ..report.findings import findings
    from ..report.outputs import write_reports
    from ..report.tables import print_table

    found = findings(results.records)
    write_reports(results, out, plots=not getattr(args, "no_plots", False), findings=found)
    if not getattr(args, "quiet", False) and not getattr(args, "json", False):
        console = console or Console()
        print_table(results.records, console)
        for e in results.errors:
            console.print(f"[red]not run:[/] {escape(e['error'])}", soft_wrap=True)
        if found:
            console.print("\n[bold]Findings[/]")
            for f in found:
                console.print(f"- {f}", markup=False, highlight=False)
        console.print(f"results: {out / 'results.json'}; report: {out / 'report.html'}")
