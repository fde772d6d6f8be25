"""What the pytest plugin, ``arraybench report`` and ``--version`` cost, beside pytest-benchmark.

    python benchmarks/plugin_cost.py               # 5 rounds
    python benchmarks/plugin_cost.py --rounds 3

Every figure is the wall time of a whole process started afresh (pytest, or the command), as a
user waits for it. Each round runs every variant once, the order reversed every other round, so
that a machine's drift falls on both sides of each comparison; the figures are the median over
the rounds and their range. Beside each, the CPU time the process and its children took (user and
system): on a shared machine the wall time grows with the others' load, the CPU time much less, so
it says what a process costs when the wall time cannot. The two test functions are the same NumPy code for both tools, on the
same input (a standard-normal vector of 100,000 float64). Nothing here touches the user's store:
every process gets a data folder of its own (``XDG_DATA_HOME``), and bytecode is cached in the
run's folder, made once before the rounds. ``--arraybench-processes=1`` is printed for scale only:
it shows what the plugin's processes cost, and measures less than the plugin does by design.
Each measuring session also says where its seconds went (before its first test, sampling, the
rest of measuring, after its last test; CPU in pytest and in its workers), and importing the
libraries a disabled session calls is timed alone: the floor of ``--arraybench-disable``.

Goals: the plugin within 1.5x of pytest-benchmark on the same two functions; ``--arraybench-disable``
at most pytest-benchmark's time; the same 2-cell session at the plugin's defaults (every installed
library) within 10 s;
``arraybench report DIR`` of a finished 4-cell run within 3 s; ``--version`` and ``--help``
within 0.3 s.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N = 100_000

ANCHOR = f"""
import numpy as np

x = np.random.default_rng(0).standard_normal({N})

def softplus(xp, x):
    return xp.log1p(xp.exp(x))

def norm(xp, x):
    return xp.sqrt(xp.sum(x * x))

def test_softplus(benchmark):
    benchmark(softplus, np, x)

def test_norm(benchmark):
    benchmark(norm, np, x)
"""

#: The same two functions as the plugin's tests: one cell each. ``{marker}`` names the libraries.
PLUGIN = f"""
import arraybench
import pytest

@arraybench.workload(sizes=[{N}])
def softplus(xp, x):
    return xp.log1p(xp.exp(x))

@arraybench.workload(sizes=[{N}])
def norm(xp, x):
    return xp.sqrt(xp.sum(x * x))

{{marker}}
def test_softplus(arraybench_run):
    arraybench_run(softplus)

{{marker}}
def test_norm(arraybench_run):
    arraybench_run(norm)
"""

#: What each plugin session spent, written as it ends (one line a session, tab-separated): its
#: arguments, the worker processes it kept (its pool's logs, one per worker), the seconds its
#: workers sampled (the replicates' own sampling time), the CPU of the pytest process and of its
#: children, and the wall-clock moments its first test began, its last test ended and it ended.
SESSION_FACTS = """
import glob, os, resource, tempfile, time
import pytest

_facts = {}

def pytest_runtest_setup(item):
    _facts.setdefault("first", time.time())

def pytest_runtest_teardown(item):
    _facts["last"] = time.time()

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    from arraybench.pytest.plugin import _SUITE
    suite = session.config.stash.get(_SUITE, None)
    if suite is None or not suite.runs or suite.settings.disable:
        return
    _facts["workers"] = len(glob.glob(os.path.join(tempfile.gettempdir(), f"arraybench-workers-{os.getpid()}-*", "*.log")))
    reps = [rep for run in suite.runs for rec in run.records for rep in rec.replicates]
    # The fresh-pages side's turns too: its calls' own wall time (it says no elapsed time).
    _facts["sampling"] = sum(rep.elapsed_s or 0.0 for rep in reps) + sum(
        rep.other_allocator.usage.wall_s for rep in reps if rep.other_allocator and rep.other_allocator.usage)
    _facts["args"] = " ".join(session.config.invocation_params.args)

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if "args" not in _facts:
        return
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    values = (_facts["workers"], _facts["sampling"], own.ru_utime + own.ru_stime,
              children.ru_utime + children.ru_stime, _facts["first"], _facts["last"], time.time())
    with open("sessions.txt", "a") as f:
        f.write(_facts["args"] + "".join(f"\\t{v}" for v in values) + "\\n")
"""

#: A finished 4-cell run for ``report`` to rebuild (measured once, before the rounds).
MAKE_RUN = """
import sys, arraybench
arraybench.run(workloads=["elementwise"], backends=["numpy"], sizes=[1_000, 10_000, 100_000, 1_000_000],
               processes=2, max_time=0.1, output_dir=sys.argv[1], progress=False)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternated rounds (default 5)")
    args = parser.parse_args()
    if importlib.util.find_spec("pytest_benchmark") is None:  # the anchor every figure is set against
        print("plugin_cost: pytest-benchmark is not installed: pip install -e '.[bench]'", file=sys.stderr)
        return 2

    folder = Path(tempfile.mkdtemp(prefix="plugin-cost-"))
    try:
        return _measure(folder, args.rounds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _measure(folder: Path, rounds: int) -> int:
    """Every variant, ``rounds`` alternated rounds, in ``folder``; prints the figures."""
    (folder / "pytest.ini").write_text("[pytest]\n")  # this folder's own: no project's addopts
    (folder / "test_anchor.py").write_text(ANCHOR)
    (folder / "test_numpy.py").write_text(PLUGIN.format(marker='@pytest.mark.arraybench(backends="numpy")'))
    (folder / "test_defaults.py").write_text(PLUGIN.format(marker=""))
    (folder / "conftest.py").write_text(SESSION_FACTS)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "ARRAYBENCH_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env["XDG_DATA_HOME"] = str(folder / "data")
    # Bytecode cached, as an installed package has it, in this folder (not beside the sources):
    # without it every process compiles what it imports, which is no cost of either tool.
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    bindir = Path(sys.executable).parent
    arraybench = [str(bindir / "arraybench")] if (bindir / "arraybench").exists() else [sys.executable, "-m", "arraybench"]
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]

    warm = "import arraybench.api, arraybench.render.report, arraybench.commands.report, arraybench.render.plots, " \
           "arraybench.worker.main, numpy"
    for command in ([sys.executable, "-c", warm], [*pytest, "--collect-only", "test_anchor.py", "test_numpy.py"]):
        subprocess.run(command, cwd=folder, env=env, capture_output=True)  # the bytecode, made once
    # A worker writes no bytecode unless told (PYTHONDONTWRITEBYTECODE set empty): one session
    # whose workers may write it caches what only a worker imports (its modules, array_api_compat and the
    # NumPy submodules it touches), which each worker of every round compiled anew (0.25-0.45 s of
    # CPU a worker, beside the 0.4 s of the rest of its start).
    # The every-library session's imports too (each library's, in the pytest process).
    for args in (["test_numpy.py", "--arraybench-processes=1", "--arraybench-max-time=0.05"],
                 ["test_defaults.py", "--arraybench-disable"]):
        subprocess.run([*pytest, *args], cwd=folder, env={**env, "PYTHONDONTWRITEBYTECODE": ""}, capture_output=True)
    (folder / "sessions.txt").unlink(missing_ok=True)
    run_dir = folder / "run"
    made = subprocess.run([sys.executable, "-c", MAKE_RUN, str(run_dir)], cwd=folder, env=env,
                          capture_output=True, text=True)
    if made.returncode != 0:
        print(made.stdout, made.stderr, sep="\n")
        return 1

    variants: dict[str, list[str]] = {
        "pytest-benchmark, 2 NumPy functions": [*pytest, "test_anchor.py"],
        "plugin, the same 2, NumPy named": [*pytest, "test_numpy.py"],
        "plugin at its defaults, every installed library": [*pytest, "test_defaults.py"],
        "plugin --arraybench-processes=1 (for scale only)": [*pytest, "test_numpy.py", "--arraybench-processes=1"],
        "pytest-benchmark --benchmark-disable": [*pytest, "test_anchor.py", "--benchmark-disable"],
        "plugin --arraybench-disable, NumPy named": [*pytest, "test_numpy.py", "--arraybench-disable"],
        "plugin --arraybench-disable, every installed library": [*pytest, "test_defaults.py", "--arraybench-disable"],
        "arraybench report DIR (4 cells, no measuring)": [*arraybench, "report", str(run_dir), "-q"],
        "arraybench --version": [*arraybench, "--version"],
        "arraybench --help": [*arraybench, "--help"],
        "pytest --version (for scale)": [*pytest[:3], "--version"],
        "python -c pass (for scale)": [sys.executable, "-c", "pass"],
    }
    # What a disabled session at the defaults cannot do without: each library it calls, imported.
    libraries = ", ".join(m for m in ("numpy", "torch", "jax") if importlib.util.find_spec(m) is not None)
    variants[f"python -c 'import {libraries}' (for scale)"] = [sys.executable, "-c", f"import {libraries}"]
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    sessions: dict[str, list[list[float]]] = {name: [] for name in variants}  # SESSION_FACTS, by variant
    facts = folder / "sessions.txt"
    for round_ in range(rounds):
        order = list(variants) if round_ % 2 == 0 else list(reversed(variants))
        for name in order:
            before, started, began = _children_cpu(), time.perf_counter(), time.time()
            done = subprocess.run(variants[name], cwd=folder, env=env, capture_output=True, text=True)
            took = time.perf_counter() - started
            if facts.exists():
                values = [float(v) for v in facts.read_text().split("\t")[1:]]
                facts.unlink()
                sessions[name].append([began, began + took, *values])
            cpu[name].append(_children_cpu() - before)  # its workers too: reaped by it, then it by us
            if done.returncode != 0:
                print(f"{name}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
                return 1
            times[name].append(took)
        print(f"round {round_ + 1} of {rounds} done", file=sys.stderr)

    median = {name: statistics.median(t) for name, t in times.items()}
    print("where a measuring plugin session's wall time went (medians over the rounds; sampling: the "
          "seconds its processes sampled, one at a time; measuring's rest: starting, preparing and "
          "ending worker processes, and the parent's bookkeeping):")
    for name, rows in sessions.items():
        if not rows:
            continue
        parts = {"before the first test": [r[6] - r[0] for r in rows], "sampling": [r[3] for r in rows],
                 "measuring's rest": [r[7] - r[6] - r[3] for r in rows],
                 "after the last test": [r[1] - r[7] for r in rows]}
        workers = sorted(int(r[2]) for r in rows)
        print(f"  {name}: " + ", ".join(f"{what} {statistics.median(v):.2f} s" for what, v in parts.items())
              + f"; CPU {statistics.median(r[4] for r in rows):.2f} s in pytest, "
              f"{statistics.median(r[5] for r in rows):.2f} s in its {workers} worker processes "
              "(one per library and replicate index, shared by its tests)")
    print(f"{rounds} alternated rounds, wall time of each whole process; median [range]; CPU time, median "
          f"(its ratio to pytest-benchmark's)")
    anchor_cpu = statistics.median(cpu["pytest-benchmark, 2 NumPy functions"])
    for name, t in times.items():
        used = statistics.median(cpu[name])
        print(f"  {name:<56} {median[name]:7.2f} s  [{min(t):.2f}-{max(t):.2f}]  CPU {used:6.2f} s "
              f"({used / anchor_cpu:.2f}x)")
    anchor, plugin = median["pytest-benchmark, 2 NumPy functions"], median[
        "plugin, the same 2, NumPy named"]
    checks = [
        ("plugin / pytest-benchmark on the same 2 functions", plugin / anchor, 1.5, "x"),
        ("  its floor: the plugin's sampling alone / pytest-benchmark",
         statistics.median(r[3] for r in sessions["plugin, the same 2, NumPy named"])
         / anchor, None, "x"),
        ("--arraybench-disable (NumPy named) / pytest-benchmark timed",
         median["plugin --arraybench-disable, NumPy named"] / anchor, 1.0, "x"),
        ("--arraybench-disable (every library) / pytest-benchmark timed",
         median["plugin --arraybench-disable, every installed library"] / anchor, 1.0, "x"),
        ("  its floor: importing its libraries alone / pytest-benchmark",
         median[f"python -c 'import {libraries}' (for scale)"] / anchor, None, "x"),
        ("--arraybench-disable (NumPy named) / --benchmark-disable",
         median["plugin --arraybench-disable, NumPy named"] / median["pytest-benchmark --benchmark-disable"],
         None, "x"),
        ("a 2-cell session at the plugin's defaults (every library)",
         median["plugin at its defaults, every installed library"], 10.0, " s"),
        ("arraybench report DIR, 4 cells", median["arraybench report DIR (4 cells, no measuring)"], 3.0, " s"),
        ("arraybench --version", median["arraybench --version"], 0.3, " s"),
        ("arraybench --help", median["arraybench --help"], 0.3, " s"),
    ]
    print("goals (on the medians)")
    for what, value, goal, unit in checks:
        verdict = "" if goal is None else ("  met" if value <= goal else "  NOT met") + f" (goal <= {goal:g}{unit})"
        print(f"  {what:<64} {value:6.2f}{unit}{verdict}")
    return 0


def _children_cpu() -> float:
    """CPU seconds (user and system) of every child process reaped so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


if __name__ == "__main__":
    sys.exit(main())
