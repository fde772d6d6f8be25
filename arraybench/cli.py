"""The command line: commands and their options, nothing else.

Every error a user can cause ends in one line on stderr and exit status 2; Ctrl-C ends in status
130 with what was measured saved.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from . import plan as planning
from .errors import UsageError
from .plan import RunOptions

PROG = "arraybench"


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line instead of a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")


def _csv(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _fraction(text: str) -> float:
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction (0.02) or a percentage (2%)") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1 (or 0% and 100%)")
    return value


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The options of ``run`` (also used by ``main.py``)."""
    d = RunOptions()
    sel = p.add_argument_group("what to run")
    sel.add_argument("--backends", type=_csv, default=d.backends, metavar="LIST",
                     help=f"libraries, comma-separated (default: {','.join(d.backends)})")
    sel.add_argument("--devices", type=_csv, default=d.devices, metavar="LIST",
                     help="cpu, gpu or both (default: cpu,gpu)")
    sel.add_argument("--workloads", type=_csv, default=[], metavar="LIST",
                     help="workloads (default: the built-in suite; see `arraybench list`)")
    sel.add_argument("--workload-file", action="append", default=[], dest="workload_files",
                     metavar="FILE", help="a Python file of @arraybench.workload functions (repeatable)")
    sel.add_argument("--sizes", default="small,large", metavar="LIST",
                     help="size labels (small,large), element counts (100,1000) or a range LO:HI[:STEPS]")
    sel.add_argument("--dtype", default=d.dtype, choices=planning.DTYPES,
                     help="floating dtype for every library (default: float64, as the seed)")
    sel.add_argument("--mode", type=_csv, default=d.modes, dest="modes", metavar="LIST",
                     help="latency (sync after every call), throughput (sync once per batch), "
                          "compiled (jax.jit / torch.compile); default: latency")
    sel.add_argument("--include-transfer", action="store_true",
                     help="also time GPU calls from host NumPy data to a host result")
    how = p.add_argument_group("how to measure")
    how.add_argument("--processes", type=_positive_int, default=d.processes, metavar="N",
                     help=f"worker processes per library and device (default: {d.processes})")
    how.add_argument("--max-time", type=_positive_float, default=d.max_time, metavar="SECONDS",
                     help=f"sampling budget per cell, all processes together (default: {d.max_time:g})")
    how.add_argument("--min-samples", type=_positive_int, default=d.min_samples, metavar="N",
                     help=f"fewest samples per cell (default: {d.min_samples})")
    how.add_argument("--rel-ci", type=_fraction, default=d.rel_ci, metavar="FRACTION",
                     help="stop sampling once the median's 95%% CI is within this (default: 0.02 = 2%%)")
    how.add_argument("--threads", type=_positive_int, default=None, metavar="N",
                     help="CPU threads for every library (default: all cores)")
    how.add_argument("--cold", action="store_true", help="evict caches before every sample")
    how.add_argument("--allow-tf32", action="store_true",
                     help="let GPUs use TF32 for float32 matmuls (off: full precision, recorded)")
    how.add_argument("--timeout", type=_positive_float, default=d.timeout, metavar="SECONDS",
                     help=f"kill a worker silent this long on one cell (default: {d.timeout:g})")
    how.add_argument("--seed", type=int, default=d.seed, help="seed for inputs and ordering")
    out = p.add_argument_group("output")
    out.add_argument("--output-dir", "-o", default="benchmark_plots", metavar="DIR",
                     help="where results.json, the journal and the plots go (default: benchmark_plots)")
    out.add_argument("--overwrite", action="store_true",
                     help="start afresh in a folder that holds an interrupted run")
    out.add_argument("--resume", metavar="DIR", default=None,
                     help="continue an interrupted run in DIR with its own settings")
    out.add_argument("-q", "--quiet", action="store_true", help="print nothing while running")
    out.add_argument("--json", action="store_true",
                     help="stream one JSON record per line on stdout as each cell finishes")
    out.add_argument("--no-plots", action="store_true", help="skip the SVG plots")


def options_from_args(args: argparse.Namespace) -> RunOptions:
    return RunOptions(
        backends=args.backends, devices=args.devices, workloads=args.workloads,
        sizes=planning.parse_sizes(args.sizes), dtype=args.dtype, modes=args.modes,
        include_transfer=args.include_transfer, processes=args.processes,
        max_time=args.max_time, min_samples=args.min_samples, rel_ci=args.rel_ci,
        threads=args.threads, cold=args.cold, allow_tf32=args.allow_tf32, timeout=args.timeout,
        seed=args.seed, workload_files=[str(Path(f).resolve()) for f in args.workload_files],
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Which array library is fastest on your machine, for your workload, and why.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    run = sub.add_parser("run", help="run benchmarks (the default suite without options)",
                         description="Measure workloads on every selected library and device.")
    add_run_options(run)
    sub.add_parser("list", help="list workloads, their sizes and what each measures")
    info = sub.add_parser("info", help="Python, libraries, BLAS, threads, CPU, GPUs, and which backends work")
    info.add_argument("--json", action="store_true", help="print as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``arraybench`` and ``python -m arraybench``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
            argv = ["run", *argv]  # `arraybench --output-dir X` runs the default suite
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 0
        from . import commands

        return getattr(commands, f"cmd_{args.command}")(args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `arraybench list | head`: the reader left; nothing to report.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0


if __name__ == "__main__":
    sys.exit(main())
