"""The commands: one module each (a few hold two close ones), ``register(subparsers)`` setting
``handler``; ``main`` imports none of them until it parses. Here, what several share: options added
from ``options.OPTIONS``, and ``--csv``/``--markdown`` (as hyperfine's exports), refused before the
command measures anything where the path cannot be written."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path
from typing import Any, Callable

from ..errors import UsageError, one_line
from ..files import write_atomic
from ..options import CLI, PRESETS, RUN_DEFAULT, CsvExtend, csv_list, dashed, on, option

#: Each command and its line in ``arraybench --help``, in that order: ``--help`` and ``--version``
#: are answered from here, without importing the commands (they bring NumPy, rich and the rest: a
#: second or more, against a few hundredths). The commands' parsers take their help from here.
SUMMARY = {
    "run": "run benchmarks (the default suite without options)",
    "sweep": "run workloads across sizes and find the crossovers",
    "timeit": "time one expression on every library, no workload file (as pyperf timeit)",
    "report": "rebuild plots, report.html, results.md and results.csv from a results.json",
    "show": "a saved run's table, or each cell's samples per process as a histogram",
    "merge": "one report for several runs (machines), the machine a dimension",
    "export": "results as JSON for github-action-benchmark or Bencher",
    "compare": "compare two runs cell by cell: faster, slower or not significant",
    "history": "each cell's results over the stored runs, with the steps in them",
    "store": "the results store: import earlier runs, list what it holds",
    "numerics": "each library's error against float64, per workload and dtype",
    "list": "list workloads, their sizes and what each measures",
    "info": "Python, libraries, BLAS, threads, CPU, GPUs, and which backends work",
    "doctor": "check that timing (against each library's own timer), sync, precision, memory, "
              "clocks and transfers behave on this machine (run it first on a GPU)",
    "completion": "print a shell completion script for bash, zsh or fish",
}


def wanted(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(option, path) of each table file the command line asks for."""
    dests = {"--" + name: option(name).dest for name in ("csv", "markdown")}
    return [(flag, getattr(args, dest)) for flag, dest in dests.items() if getattr(args, dest, None)]


def check_targets(args: argparse.Namespace) -> None:
    """``UsageError`` for a ``--csv``/``--markdown`` path that cannot be written, or one given to both."""
    given = wanted(args)
    if len(given) == 2 and os.path.abspath(given[0][1]) == os.path.abspath(given[1][1]):
        raise UsageError(f"--csv and --markdown both name {given[0][1]}; give each its own file")
    for option, path in given:
        why = unwritable(path)
        if why is not None:
            raise UsageError(f"{option} {one_line(path)}: {why}")


def unwritable(path: str) -> str | None:
    """Why ``path`` cannot be written, or None: the folder must take a new file renamed into place; a
    device or pipe the user names is written to."""
    target = Path(os.path.realpath(path))  # a link is written through, into its target's folder
    try:
        mode: int | None = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:  # a file where a folder of the path should be (ENOTDIR), a loop
        return f"cannot write there ({exc.strerror or exc})"
    if mode is not None and stat.S_ISDIR(mode):
        return "is a folder; give a file name"
    if mode is not None and not stat.S_ISREG(mode):
        return None if os.access(target, os.W_OK) else "cannot write there (permission denied)"
    folder = target.parent
    given = os.path.dirname(path) or "."
    # The folder as the user typed it, unless a link made it another one.
    shown = one_line(given if os.path.realpath(given) == str(folder) else str(folder))
    if not folder.is_dir():
        return f"cannot write there (no folder {shown})"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot write there (the folder {shown} is not writable)"
    return None


def write_tables(args: argparse.Namespace, render: dict[str, Callable[[], str]]) -> None:
    """Write each asked-for table (``render``: its text by option), then ``wrote PATH`` on stderr (stdout may be
    JSON) unless the command is quiet; ``UsageError`` where one cannot be written."""
    written = [write_named(path, render[option](), f"{option} ") for option, path in wanted(args)]
    if written and not getattr(args, "quiet", False):
        print("wrote " + ", ".join(written), file=sys.stderr)


def write_named(path: str, text: str, what: str = "") -> str:
    """Write a file the user named (a device, pipe or link there is written through), or ``UsageError``."""
    try:
        write_atomic(path, text, through=True)
    except OSError as exc:
        raise UsageError(f"{what}{one_line(path)}: cannot write there ({exc.strerror or exc})") from None
    return path


def add(p: argparse.ArgumentParser | argparse._ArgumentGroup, name: str, *, what: str = "",
        **given: Any) -> argparse.Action:
    """Add the option ``name`` to ``p``, its help saying ``what`` it writes; ``given`` overrides the table."""
    from ..model.options import RunOptions

    o = option(name)
    default = getattr(RunOptions(), o.name, None) if o.default is RUN_DEFAULT else o.default
    if o.name == "processes":
        default = (default, RunOptions().max_processes)
    fill = {"default": _shown(default), "what": what}
    if o.name == "backends":
        from ..backends import SPECS
        fill["others"] = ",".join(b for b in SPECS if b not in default)
    if o.const is not None:
        # A preset as the options it stands for: ``--processes 2 --max-time 0.25 ...``.
        fill["preset"] = " ".join(f"--{dashed(k)} {_shown(v)}" for k, v in PRESETS[o.const].items())
    kw: dict[str, Any] = {"help": o.help.format(**fill), "default": default, "dest": o.dest or o.name}
    kw.update({k: getattr(o, k) for k in ("type", "metavar", "action", "const") if getattr(o, k) is not None})
    if o.choices is not None:
        kw["choices"] = o.choices() if callable(o.choices) else o.choices
    return p.add_argument(*o.flags, **{**kw, **given})


#: What ``run``'s --csv, --markdown and --store write (other commands say their own).
RUN_WRITES = {"csv": "the table as CSV (results.csv)", "store": "the finished run is appended to",
              "markdown": "the table as Markdown, with its notes and findings (results.md)"}


def add_run_options(p: argparse.ArgumentParser) -> None:
    """The options of ``run`` (and of ``sweep`` and ``timeit``), in ``--help``'s sections."""
    groups: dict[str, Any] = {}
    for o in on(CLI):
        if o.group not in groups:
            groups[o.group] = p.add_argument_group(o.group)
        target = groups[o.group]
        if o.dest == "preset":  # one preset at a time
            if "preset" not in groups:
                groups["preset"] = target.add_mutually_exclusive_group()
            target = groups["preset"]
        add(target, o.name, what=RUN_WRITES.get(o.name, ""))


#: What ``show`` and ``history`` may narrow to, each a repeatable comma-separated list.
FILTERS = {"workloads": "only these workloads (repeatable)", "backends": "only these libraries (repeatable)",
           "sizes": "only these sizes: labels (small) or element counts (100)"}


def add_filters(p: argparse.ArgumentParser, *names: str) -> None:
    """``--workloads``, ``--sizes``, ``--backends`` (``names``), kept as ``filter_<name>``."""
    for name in names:
        p.add_argument(f"--{name}", dest=f"filter_{name}", type=csv_list, action=CsvExtend, default=[],
                       metavar="LIST", help=FILTERS[name])


def store_location(args: argparse.Namespace) -> str | None:
    """The store a reading command uses: typed, else the project's, else None (the default)."""
    project = getattr(args, "project", None)
    typed = getattr(args, "store", None)
    return typed if typed is not None or project is None else project.values.get("store")


def _shown(v: Any) -> str:
    """A default as ``--help`` writes it: ``3:6`` (or ``2`` where both ends agree), ``a,b``, ``0.25``."""
    if isinstance(v, tuple):
        return str(v[0]) if v[0] == v[1] else f"{v[0]}:{v[1]}"
    return ",".join(v) if isinstance(v, list) else f"{v:g}" if isinstance(v, float) else str(v)
