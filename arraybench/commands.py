"""What each command does, once its options are parsed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from . import journal as journal_mod
from . import plan as planning
from .errors import UsageError
from .plan import RunOptions
from .records import Results
from .runner import Interrupted, Runner


def _workloads(files: list[str]) -> dict:
    from . import workloads
    from .userfile import import_workload_file

    for f in files:
        import_workload_file(f)
    return dict(workloads.REGISTRY)


def prepare_output_dir(path: str, *, overwrite: bool) -> Path:
    """Create the output folder and prove it writable before anything is measured."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--output-dir {out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".arraybench-write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"--output-dir {out}: cannot write there ({exc.strerror or exc})") from None
    journal = out / journal_mod.JOURNAL_NAME
    if journal.exists() and not overwrite:
        results_file = out / "results.json"
        complete = False
        if results_file.exists():
            try:
                complete = bool(json.loads(results_file.read_text()).get("complete", False))
            except (OSError, ValueError, AttributeError):
                complete = False
        if not complete:
            raise UsageError(
                f"{out} holds an unfinished run; continue it with `arraybench run --resume {out}`, "
                "or start afresh with --overwrite"
            )
    return out


def _reporter(args: argparse.Namespace):
    from .report.progress import ConsoleReporter, JsonLinesReporter, QuietReporter

    if getattr(args, "json", False):
        return JsonLinesReporter()
    if getattr(args, "quiet", False):
        return QuietReporter()
    return ConsoleReporter()


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
    from .cli import options_from_args

    defaults = RunOptions().to_dict()
    now = options_from_args(args).to_dict()
    return {k: v for k, v in now.items() if v != defaults.get(k)}


def cmd_run(args: argparse.Namespace) -> int:
    from .cli import options_from_args

    if args.resume:
        out = Path(args.resume)
        state = journal_mod.read(out)
        _check_resume_matches(args, state.options)
        options = state.options
        _workloads(options.workload_files)
        cells = state.cells
        runner = Runner(cells, options, out, _reporter(args), resume=state)
    else:
        options = options_from_args(args)
        known = _workloads(options.workload_files)
        planning.validate(options, known)
        cells = planning.build_plan(options, known)
        out = prepare_output_dir(args.output_dir, overwrite=args.overwrite)
        runner = Runner(cells, options, out, _reporter(args))
    try:
        results = runner.run()
    except Interrupted as stop:
        reporter = runner.reporter
        if hasattr(reporter, "stop"):
            reporter.stop()
        _write_reports(stop.results, out, args, console=Console(stderr=True))
        measured = sum(1 for r in stop.results.records if r.n_samples)
        print(
            f"{'arraybench'}: stopped by {stop}; {measured} of {len(stop.results.records)} cells "
            f"have measurements, saved in {out / 'results.json'}. "
            f"Continue with: arraybench run --resume {out}",
            file=sys.stderr,
        )
        return 130
    _write_reports(results, out, args)
    return 0 if all(r.status in ("ok", "skipped") for r in results.records) else 1


def _write_reports(results: Results, out: Path, args: argparse.Namespace,
                   console: Console | None = None) -> None:
    from .report.tables import print_table

    if not getattr(args, "no_plots", False):
        from .report.plots import write_plots

        write_plots(results.records, out)
    if not getattr(args, "quiet", False) and not getattr(args, "json", False):
        print_table(results.records, console or Console())
        (console or Console()).print(f"results: {out / 'results.json'}")


def cmd_list(args: argparse.Namespace) -> int:
    from rich.table import Table

    from . import workloads

    table = Table(title="workloads", header_style="bold")
    for col in ("name", "sizes", "checked as", "what it measures"):
        table.add_column(col, overflow="fold")
    for name, wl in workloads.REGISTRY.items():
        sizes = ", ".join(f"{k} {v:,}" for k, v in wl.sizes.items())
        check = wl.check.kind + (" (gradient)" if wl.grad else "")
        table.add_row(name, sizes, check, wl.description)
    Console().print(table)
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from .probe import probe_backends
    from . import environment

    env = environment.collect()
    backends_state = probe_backends()
    if args.json:
        print(json.dumps({"environment": env, "backends": backends_state}, indent=1))
        return 0
    console = Console()
    console.print(f"[bold]arraybench {env['arraybench']}[/] on Python {env['python']} ({env['platform']})")
    console.print(f"CPU: {env['cpu_model']}, {env['cpu_count']} logical cores "
                  f"({env['cpus_available']} available), {env['memory_gib']} GiB")
    console.print("GPUs: " + (", ".join(g["name"] for g in env["gpus"]) or "none found (no nvidia-smi)"))
    for name, state in backends_state.items():
        usable = state["usable"]
        mark = "[green]usable[/]" if usable else "[dim]not usable[/]"
        console.print(f"[bold]{name}[/] {state.get('version') or ''}: {mark}")
        for dev, reason in state["devices"].items():
            console.print(f"   {dev}: " + ("[green]ok[/]" if reason is None else f"[dim]{reason}[/]"))
        for key in ("blas", "torch_blas", "torch_threads", "affinity_cpus", "device_name"):
            if state.get("info", {}).get(key) is not None:
                console.print(f"   {key}: {state['info'][key]}")
    return 0

