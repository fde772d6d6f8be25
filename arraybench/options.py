"""Every option of a run, declared once (``OPTIONS``), with the value types that parse them: from it
come the command line, the pytest plugin's options, ``[tool.arraybench]``'s keys and ``run``'s keywords,
one spelling each (``--max-time``, ``--arraybench-max-time``, ``max-time = 2``, ``max_time=2``). Only the
standard library is imported here: the plugin loads in every pytest session.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .errors import UsageError

# -- value types: each turns text into a value or one clear error, the same on every surface --

def csv_list(text: str) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``."""
    return [p.strip() for p in text.split(",") if p.strip()]


def file_path(text: str) -> str:
    """A path as given; one no file can have (a NUL character) is refused here, in one line."""
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"{text!r} is no file name: it holds a NUL character")
    return text


def _number(text: str, kind: Callable[[str], Any], hint: str) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {hint}") from None


def _at_least(kind: Callable[[str], Any], hint: str, ok: Callable[[Any], bool], must: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value = _number(text, kind, hint)
        if not ok(value):
            raise argparse.ArgumentTypeError(f"{text!r} must be {must}")
        return value
    return parse


def _share(text: str) -> float:
    """``2%`` or ``0.02`` -> 0.02."""
    raw = text.strip()
    return float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)


positive_float = _at_least(float, "a number", lambda v: math.isfinite(v) and v > 0, "a positive number")
#: Seconds that may be none, as a warm-up.
non_negative_float = _at_least(float, "a number", lambda v: math.isfinite(v) and v >= 0, "0 or more seconds")
positive_int = _at_least(int, "a whole number", lambda v: v >= 1, "at least 1")
#: NumPy's generators refuse negative seeds.
seed = _at_least(int, "a whole number", lambda v: v >= 0, "0 or more")
#: ``0.02`` or ``2%``: strictly between 0 and 1.
fraction = _at_least(_share, "a fraction (0.02) or a percentage (2%)", lambda v: 0 < v < 1,
                     "between 0 and 1 (or 0% and 100%)")
#: ``10%`` or ``0.1`` -> 0.1; any positive amount (``150%`` is allowed).
percent = _at_least(_share, "a percentage (10%) or a fraction (0.1)", lambda v: math.isfinite(v) and v > 0,
                    "a positive percentage")


def processes(text: str) -> tuple[int, int | None]:
    """``--processes``: ``auto`` (the default range), ``N`` (exactly N) or ``MIN:MAX`` (adaptive)
    -> ``(least, most)``; ``most`` is None for a fixed count."""
    from .model.options import RunOptions

    raw = text.strip().lower()
    if raw == "auto":
        return RunOptions().processes, RunOptions().max_processes
    if ":" in raw:
        lo, hi = (_number(part, int, "a whole number") for part in raw.split(":", 1))
        if lo < 2:
            raise argparse.ArgumentTypeError(
                f"{text!r}: MIN must be at least 2 (one process cannot show the variation between processes)")
        if hi < lo:
            raise argparse.ArgumentTypeError(f"{text!r}: MAX must be at least MIN")
        return lo, hi
    value = _number(raw, int, "a whole number (give auto, N or MIN:MAX)")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value, None


def assignment(text: str) -> tuple[str, str]:
    """``[WORKLOAD.]NAME=VALUE`` -> ``(NAME, VALUE)``; the value stays text until the workload's own
    type is known."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name.rpartition(".")[2].isidentifier() or name.startswith("."):
        raise argparse.ArgumentTypeError(f"{text!r} is not [WORKLOAD.]NAME=VALUE (e.g. tsteps=50)")
    return name, value.strip()


def _environment(parser: str, flag: str) -> Callable[[str], Any]:
    """``--pythons``/``--variants``' value type: ``host.environments``' ``parser``, its message the option's."""
    def convert(text: str) -> Any:
        from .host import environments

        try:
            return getattr(environments, parser)(text)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{flag} {text!r}: ")) from None
    return convert


#: ``--pythons LABEL=INTERPRETER`` -> ``(LABEL, INTERPRETER)``.
python_assignment = _environment("parse_python", "--pythons")
#: ``--variants LABEL:VAR=VALUE[,VAR=VALUE]`` -> ``(LABEL, {VAR: VALUE})``.
variant_assignment = _environment("parse_variant", "--variants")


class CsvExtend(argparse.Action):
    """A comma-separated list, repeatable: ``--workloads a --workloads b,c`` is all three, and what
    is typed replaces a project file's list."""

    def _items(self, namespace: argparse.Namespace) -> list[Any]:
        current = getattr(namespace, self.dest, None)
        # The default object itself (argparse's, or [tool.arraybench]'s) until the first typed one.
        return [] if current is self.default or current is None else list(current)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        items = self._items(namespace)
        setattr(namespace, self.dest, [*items, *(v for v in values if v not in items)])


class Assignments(CsvExtend, argparse._AppendAction):
    """``--params NAME=VALUE``, repeatable: each NAME once (a second is refused, not silently the
    last), and what is typed replaces a project file's list."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        items = [*self._items(namespace), values]
        try:
            unique_assignments(items, "")
        except UsageError as exc:
            raise argparse.ArgumentError(self, str(exc)) from None
        setattr(namespace, self.dest, items)


def unique_assignments(pairs: list[tuple[str, str]], what: str = "--params") -> dict[str, str]:
    """``[(NAME, VALUE)]`` as a dict, refusing a NAME given twice (a project file's list, say)."""
    out: dict[str, str] = {}
    for name, value in pairs:
        if name in out:
            raise UsageError(f"{what} {name}".strip() + f" is given twice ({name}={out[name]}, then "
                             f"{name}={value}); give it once")
        out[name] = value
    return out


CLI, PYTEST, FILE, API = "command line", "pytest", "project file", "api"
WHAT, HOW = "what to run", "how to measure"
WHERE, OUT = "where to run (a Ray cluster: docs/cluster.md)", "output"
GATE = "gate (a CI job in one command, as asv continuous)"
#: Taken from ``RunOptions``, where the run keeps the value (None for an option it lacks).
RUN_DEFAULT: Any = object()
DEFAULT_OUTPUT_DIR = "benchmark_plots"
RUN, CF = frozenset({CLI, FILE, API}), frozenset({CLI, FILE})
PLUGIN, ONLY_API = frozenset({PYTEST}), frozenset({API})
_CODE, _RESULTS = "the code run", "where results go"
#: ``--allocator``: both states, or one of ``model/replicate.STATES`` alone.
ALLOCATOR_CHOICES: tuple[str, ...] = ("both", "reused", "fresh")


@dataclass(frozen=True)
class Option:
    """One option. ``name`` is its one spelling: the API keyword, ``--`` and the name with dashes
    on the command line, the name with dashes or underscores as a project file's key. ``aliases``:
    older spellings, still taken; ``own``: what a project file setting it would choose (only the
    user's own file may: ``config``); ``pytest_help``: where the plugin's help says more."""

    name: str
    help: str = ""
    group: str | None = None
    type: Callable[[str], Any] | None = None
    metavar: str | None = None
    choices: Sequence[str] | Callable[[], Sequence[str]] | None = None
    action: Any = None
    default: Any = RUN_DEFAULT
    aliases: tuple[str, ...] = ()
    short: str | None = None
    dest: str | None = None
    const: Any = None
    on: frozenset[str] = RUN
    own: str | None = None
    pytest_help: str | None = None

    @property
    def flags(self) -> list[str]:
        """Its command-line spellings, the one to use first."""
        return ["--" + dashed(n) for n in (self.name, *self.aliases)] + ([self.short] if self.short else [])


def dashed(name: str) -> str:
    """``max_time`` as the command line and a project file spell it: ``max-time``."""
    return name.replace("_", "-")


def _dtypes() -> Sequence[str]:
    from .model.cell import DTYPES
    return DTYPES


def _flag(name: str, help: str, group: str | None = None, **kw: Any) -> Option:
    return Option(name, help, group, action="store_true", default=False, **kw)


OPTIONS: tuple[Option, ...] = (
    Option("backends", "libraries, comma-separated (default: {default}; also: {others})", WHAT, csv_list, "LIST",
           on=RUN | {PYTEST}, pytest_help="libraries to measure, comma-separated (default: numpy,torch,jax,cupy "
           "where installed, as arraybench run)"),
    Option("devices", "cpu, gpu or both (default: cpu,gpu)", WHAT, csv_list, "LIST"),
    Option("workloads", "workloads (default: the built-in suite, or with --workload-files the files' workloads; "
           "see `arraybench list`)", WHAT, csv_list, "LIST", action=CsvExtend, default=[]),
    Option("workload_files", "a Python file of @arraybench.workload functions, your own workloads (repeatable; "
           "see examples/)", WHAT, file_path, "FILE", action="append", default=[], aliases=("workload_file",),
           own=_CODE),
    Option("sizes", "size labels (small,large), element counts (100,1000) or a range LO:HI[:STEPS] (default: "
           "each workload's own sizes, small,large for the built-ins)", WHAT, metavar="LIST", default=None),
    Option("dtype", "floating dtype for every library (default: float64, as the seed)", WHAT, choices=_dtypes),
    Option("modes", "latency (sync after every call), throughput (sync once per batch), compiled (jax.jit / "
           "torch.compile / mx.compile; NumPy: numba.njit); default: latency", WHAT, csv_list, "LIST",
           aliases=("mode",)),
    Option("params", "a setting for every selected workload that has one of that name, in its own type, e.g. "
           "--params tsteps=50, or for one workload: --params jacobi_2d.tsteps=50 (repeatable, each name once; "
           "see docs/workloads.md)", WHAT, assignment, "[WORKLOAD.]NAME=VALUE", action=Assignments, default=[],
           aliases=("param",)),
    Option("pythons", "run each backend also (or only) under another Python, e.g. --pythons "
           "np126=.venv126/bin/python, side by side with the others (repeatable; docs/environments.md)", WHAT,
           python_assignment, "LABEL=INTERPRETER", action=Assignments, default=[], aliases=("python",), own=_CODE),
    Option("against", "measure a git ref's code beside the work tree's, side by side in this one run (like asv "
           "continuous): the workload files and your package from REF, each pair of the two one verdict", WHAT,
           metavar="REF", own=_CODE),
    Option("variants", "run each backend once per set of environment variables, e.g. --variants "
           "t1:OPENBLAS_NUM_THREADS=1 (repeatable; with --pythons, every interpreter under every variant; LABEL: "
           "alone is the inherited set)", WHAT, variant_assignment, "LABEL:VAR=VALUE[,VAR=VALUE]",
           action=Assignments, default=[], aliases=("variant",), own=_CODE),
    _flag("include_transfer", "also time GPU calls from host NumPy data to a host result", WHAT),
    _flag("roofline", "also measure the machine's ceilings (memory bandwidth, peak matmul) and report each "
          "result's share of them", WHAT),
    Option("processes", "worker processes per cell, each one replicate: N exactly, or from MIN up to MAX, adding "
           "processes while the cell's interval is wider than --rel-ci (default: auto = {default})", HOW,
           processes, "auto|N|MIN:MAX", on=RUN | {PYTEST}, pytest_help="worker processes per cell, as "
           "arraybench run --processes (default: auto); one process cannot show a regression"),
    Option("max_time", "sampling budget per cell, all processes together (default: {default})", HOW,
           positive_float, "SECONDS", on=RUN | {PYTEST},
           pytest_help="seconds of sampling per cell (default: 1, as arraybench run)"),
    Option("min_samples", "fewest samples per cell (default: {default})", HOW, positive_int, "N"),
    Option("warmup", "seconds of untimed calls per cell and process before its samples, two calls at least "
           "(default: {default})", HOW, non_negative_float, "SECONDS"),
    Option("rel_ci", "stop sampling once the median's 95%% CI is within this (default: 0.02 = 2%%)", HOW,
           fraction, "FRACTION", on=RUN | {PYTEST}, pytest_help="stop sampling a cell once its median's 95%% CI "
           "is within this (default: 5%%, where arraybench run has 2%%: a session's cells are gated, not "
           "published, and ±5%% takes about half the processes)"),
    Option("threads", "CPU threads for every library (default: all cores)", HOW, positive_int, "N"),
    Option("allocator", "the C allocator's state on the CPU: memory reused between calls (the headline), fresh "
           "pages, or both, large outputs timed in each (default: {default}; one state needs no second worker)",
           HOW, choices=ALLOCATOR_CHOICES, on=RUN | {PYTEST}, pytest_help="the C allocator's state large outputs are "
           "timed in: reused, fresh or both (default: reused, where arraybench run has both: a gate compares the "
           "headline's state, and the other takes a worker more per library)"),
    _flag("cold", "evict caches before every sample", HOW),
    _flag("allow_tf32", "let GPUs use TF32 for float32 matmuls (off: full precision, recorded)", HOW),
    _flag("self_check", "measure the first library against itself beside the run (A/A): how often this machine, "
          "now, calls identical configurations faster or slower", HOW),
    Option("fast", "a quick look, as pyperf's --fast: {preset}", HOW, action="store_const", const="fast",
           dest="preset", on=CF),
    Option("rigorous", "tighter numbers for longer, as pyperf's --rigorous: {preset}", HOW, action="store_const",
           const="rigorous", dest="preset", on=CF),
    Option("timeout", "kill a worker silent this long on one cell (default: {default})", HOW, positive_float,
           "SECONDS"),
    Option("seed", "seed for inputs and ordering (0 or more)", HOW, seed),
    Option("cluster", "run on the Ray cluster at ADDRESS (auto, HOST:PORT, ray://HOST:10001), one shard "
           "(workload and size) per node at a time; needs arraybench[ray]", WHERE, metavar="ADDRESS", own=_CODE),
    Option("on", "every-node: the whole plan on each node (machines compared); any-node: the plan split across "
           "identical nodes (default: every-node)", WHERE, choices=("every-node", "any-node")),
    Option("gpu_type", "only nodes with this Ray accelerator type, e.g. H100", WHERE, metavar="TYPE"),
    Option("node_wait", "with --resume: how long an every-node run waits for a node it needs (default: "
           "{default})", WHERE, positive_float, "SECONDS", default=60.0, on=CF),
    Option("output_dir", "where results.json, the journal and the plots go (default: {default})", OUT,
           metavar="DIR", short="-o", default=DEFAULT_OUTPUT_DIR, on=CF, own=_RESULTS),
    _flag("overwrite", "replace the run in the output folder (finished or interrupted): what it wrote there is "
          "removed first; without it, a folder that holds a run is refused", OUT, on=CF,
          own="which results are removed"),
    Option("resume", "continue an interrupted run in DIR with its own settings", OUT, metavar="DIR",
           on=frozenset({CLI})),
    _flag("quiet", "print nothing while running", OUT, short="-q", on=CF),
    _flag("json", "stream one JSON record per line on stdout as each cell finishes", OUT, on=CF),
    _flag("no_plots", "skip the SVG plots (report.html, results.md and results.csv are still written)", OUT,
          on=CF),
    Option("csv", "also write to PATH {what} (as hyperfine's --export-csv)", OUT, file_path, "PATH",
           dest="csv_path", on=CF, own=_RESULTS),
    Option("markdown", "also write to PATH {what} (as hyperfine's --export-markdown)", OUT, file_path, "PATH",
           dest="markdown_path", on=CF, own=_RESULTS),
    Option("store", "the results store {what}: an SQLite file or a postgresql:// URL (default: [tool.arraybench] "
           "store, else results.sqlite in your data folder, e.g. ~/.local/share/arraybench)", OUT,
           metavar="PATH|URL", on=CF | {PYTEST}, own="where results go and baselines come from",
           pytest_help="the results store: an SQLite file or a postgresql:// URL (default: results.sqlite in "
           "your data folder)"),
    _flag("no_store", "do not append the run to the results store (results.json is written as always)", OUT,
          on=CF),
    Option("context", "a label saved with the run, e.g. --context machine_room=B (repeatable; in a git work tree "
           "the commit, branch and dirty state are recorded without it); history attributes changes to it",
           OUT, metavar="KEY=VALUE", action="append", default=[], on=CF),
    Option("compare", "compare the finished run with a stored run: last (the latest complete run of these cells "
           "on this machine), last~N, or a run id", GATE, metavar="REF", on=CF | {PYTEST},
           pytest_help="git:REF measures REF's code beside this code in this session (like asv continuous); "
           "otherwise, compare this session's run with a stored run: the last one on this machine that "
           "measured any of the same cells, the N-th before it, or a run id"),
    Option("fail_above", "with --compare: exit with status 1 if a cell is significantly slower by more than this "
           "(e.g. 10%%), broke, or nothing could be compared", GATE, percent, "PERCENT", on=CF | {PYTEST},
           pytest_help="fail the session on a significant slowdown above this (e.g. 10%%) against "
           "--arraybench-compare, or on a cell that broke"),
    # -- the API's alone: set with another option, or by the run itself --
    Option("max_processes", "the most worker processes a cell may get (with processes=)", on=ONLY_API),
    Option("target_sample", "seconds one sample aims to take", on=ONLY_API),
    Option("shipped_workloads", "workloads sent to the workers by value", on=ONLY_API),
    # -- the pytest plugin's alone --
    _flag("memory", "with --arraybench-fail-above, also fail on a peak memory per call grown above that limit",
          on=PLUGIN),
    _flag("save", "store this session's run in the results store (a baseline for later sessions)", on=PLUGIN),
    _flag("skip", "skip the tests that measure (use the arraybench_run fixture)", on=PLUGIN),
    _flag("only", "run only the tests that measure (use the arraybench_run fixture) and skip the others, as "
          "pytest-benchmark's --benchmark-only", on=PLUGIN),
    _flag("disable", "run the tests that measure as checks only, as pytest-benchmark's --benchmark-disable: each "
          "cell's workload called once in the pytest process (no worker starts), nothing timed, compared or "
          "stored", on=PLUGIN),
    Option("json", "write the session's run to PATH as a results.json (as pytest-benchmark's --benchmark-json)",
           metavar="PATH", on=PLUGIN),
)


def on(surface: str) -> list[Option]:
    """The options ``surface`` takes, in the table's order."""
    return [o for o in OPTIONS if surface in o.on]


def option(name: str, surface: str = CLI) -> Option:
    """The option ``name`` (or an older spelling of it) on ``surface``."""
    return next(o for o in on(surface) if name in (o.name, *o.aliases))


#: The API's keywords: the fields of ``RunOptions``.
KEYWORDS: tuple[str, ...] = tuple(o.name for o in on(API))
#: The project file's keys only the user's own file may set (each spelling), with what they choose.
OWN_KEYS: dict[str, str] = {dashed(n): o.own for o in on(FILE) if o.own for n in (o.name, *o.aliases)}
#: How the pytest plugin spells an option, by the API's keyword.
PYTEST_NAMES: dict[str, str] = {o.name: "--arraybench-" + dashed(o.name) for o in on(PYTEST)}
PYTEST_NAMES["max_processes"] = PYTEST_NAMES["processes"]  # --processes sets both


def pytest_options() -> list[tuple[str, dict[str, Any]]]:
    """The plugin's options, as pytest's ``addoption`` takes them; values stay text, parsed in
    ``pytest.suite.read`` so that a bad one is one line, not argparse's usage block."""
    return [(PYTEST_NAMES[o.name], {"help": o.pytest_help or o.help,
             **({"action": "store_true"} if o.action == "store_true" else {"metavar": o.metavar})})
            for o in on(PYTEST)]


#: pyperf-style presets: budgets for options ``how to measure`` already has; an option typed beside
#: a preset wins over it.
PRESETS: dict[str, dict[str, object]] = {
    "fast": {"processes": (2, 2), "max_time": 0.25, "min_samples": 5, "rel_ci": 0.05},
    "rigorous": {"processes": (5, 20), "max_time": 4.0, "min_samples": 20, "rel_ci": 0.01},
}


def apply_preset(args: argparse.Namespace) -> None:
    """Set the preset's budgets on ``args``, except for the options given beside it: typed, or,
    for a preset the project file sets, set in that same file."""
    name = getattr(args, "preset", None)
    if name is None:
        return
    if getattr(args, "resume", None):
        raise UsageError(f"--{name} and --resume: a resumed run keeps its own settings; give one of them")
    typed = set(getattr(args, "typed", set()))
    project = getattr(args, "project", None)
    if "preset" not in typed and project is not None:
        typed |= set(project.values)
    for dest, value in PRESETS[name].items():
        if dest not in typed:
            setattr(args, dest, value)
