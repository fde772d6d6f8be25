"""How accurate is arraybench on code that updates its inputs in place? Figures for issue 14.

The in-place GEMM of ``examples/gemm_inplace.py`` (``C *= beta; C += alpha * (A @ B)``, NumPy)
timed four ways, each in its own fresh process, in alternating rounds:

- ``arraybench run`` as a user runs it (its default way of restoring ``C``), the figure issue 14
  holds to 3% of the hand-written loop;
- arraybench's worker code with each way of restoring ``C`` forced: ``pool`` (a pool of copies
  refilled before each batch) and ``per_call`` (``C`` restored before every call, clock stopped,
  the clock reads subtracted);
- the hand-written reference: ``timeit.Timer("gemm(A, B, C, alpha=alpha, beta=beta)",
  setup="C[...] = C0").repeat(number=1)``: the same code, ``C`` restored in timeit's setup,
  outside its timer, before every call.

The machine's speed drifts over minutes (a shared VM), so each figure is compared with the
reference of its own round, and the verdict uses the median of the per-round ratios.

Run from the repository root: ``python benchmarks/inplace.py`` (``--rounds 5``, ``--sizes 256,32``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EXAMPLE = ROOT / "examples" / "gemm_inplace.py"
sys.path.insert(0, str(ROOT))

from arraybench.host.threads import worker_cpus, worker_env

#: Every child builds the example's own inputs (same seed, same values) through arraybench.
_INPUTS = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from arraybench.workloads.userfile import import_workload_file
from arraybench.workloads import REGISTRY
from arraybench.workloads.inputs import build_inputs
import_workload_file({str(EXAMPLE)!r})
wl = REGISTRY["gemm_inplace"]
A, B, C0 = build_inputs(wl, {{n}}, "float64", seed={{seed}})
params = wl.params_for({{n}})
"""

TIMEIT_CHILD = _INPUTS + """
import json, statistics, timeit
alpha, beta = params["alpha"], params["beta"]
C = C0.copy()


def gemm(A, B, C, *, alpha, beta):  # the example's code, as a user would call it
    C *= beta
    C += alpha * (A @ B)


t = timeit.Timer("gemm(A, B, C, alpha=alpha, beta=beta)", setup="C[...] = C0", globals=globals())
t.repeat(repeat=3, number=1)  # warm-up, as arraybench's
repeat = max(20, min(2000, int(0.35 / (t.timeit(1) or 1e-6))))  # ~ arraybench's time per process
print(json.dumps(statistics.median(t.repeat(repeat=repeat, number=1))))
"""

WORKER_CHILD = _INPUTS + """
import json, dataclasses
from arraybench import backends
from arraybench.analysis.policy import timer_settings
from arraybench.model.options import RunOptions
from arraybench.model.cell import Cell
from arraybench.worker.prepare import ReferenceCache, finish, prepare
from arraybench.worker.sampling import gc_paused
settings = dataclasses.replace(timer_settings(RunOptions()), restore={restore!r})
backend = backends.load("numpy")("cpu")
prepared = prepare(backend, wl, Cell("gemm_inplace", str({n}), {n}, "numpy", "cpu", "float64", "latency",
                                    params=params), settings, ReferenceCache(), seed={seed})
with gc_paused():
    while not prepared.run.done:
        prepared.run.take_turn()
rep = finish(backend, prepared)
assert rep.status == "ok", rep.reason
samples = sorted(rep.samples_s)
print(json.dumps([samples[len(samples) // 2], rep.number, rep.restore_overhead_s]))
"""


#: Threads for every side (``--threads``); None: the libraries' defaults.
THREADS: int | None = 1


def _python(code: str) -> object:
    """Run ``code`` in a fresh process with the thread limit and CPU affinity a worker would get."""
    env = worker_env(os.environ, threads=THREADS, backend="numpy", device="cpu", allow_tf32=False)
    cpus = worker_cpus(THREADS)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env=env, preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    return json.loads(out.stdout.strip().splitlines()[-1])


def arraybench_run(tmp: Path, n: int, seed: int) -> float:
    """The median ``arraybench run`` reports, as a user runs it (three worker processes)."""
    out = tmp / f"run-{n}-{seed}"
    threads = ["--threads", str(THREADS)] if THREADS else []
    subprocess.run([sys.executable, "-m", "arraybench", "run", "-q", "--no-plots", "--workload-file",
                    str(EXAMPLE), "--backends", "numpy", "--devices", "cpu", "--sizes", str(n), *threads,
                    "--seed", str(seed), "--output-dir", str(out)], check=True, cwd=ROOT,
                   capture_output=True)
    (rec,) = json.loads((out / "results.json").read_text())["records"]
    assert rec["status"] == "ok", rec["reason"]
    return rec["median_s"]


#: ``--max-load``: before each round, wait (up to ``MAX_WAIT_S``) for the load average to fall below it.
MAX_LOAD: float | None = None
MAX_WAIT_S = 600.0


def _wait_for_calm() -> float:
    """The 1-minute load average once it is below ``MAX_LOAD`` (or the wait is over)."""
    waited = 0.0
    while MAX_LOAD is not None and os.getloadavg()[0] >= MAX_LOAD and waited < MAX_WAIT_S:
        time.sleep(5)
        waited += 5
    return os.getloadavg()[0]


def _fmt(seconds: float) -> str:
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def measure(tmp: Path, n: int, rounds: int) -> None:
    rows: dict[str, list[float]] = {"arraybench run": [], "worker, pool": [], "worker, per_call": []}
    refs: list[float] = []
    overheads: list[float] = []
    numbers: dict[str, list[int]] = {"pool": [], "per_call": []}
    order = random.Random(n)
    loads: list[float] = []
    for k in range(rounds):
        loads.append(_wait_for_calm())
        # Within a round, the four run in a random order: no one of them always follows another.
        for what in order.sample(["timeit", "run", "pool", "per_call"], 4):
            if what == "timeit":
                refs.append(float(_python(TIMEIT_CHILD.format(n=n, seed=k))))
            elif what == "run":
                rows["arraybench run"].append(arraybench_run(tmp, n, k))
            else:
                median, number, overhead = _python(WORKER_CHILD.format(n=n, seed=k, restore=what))
                rows[f"worker, {what}"].append(median)
                numbers[what].append(number)
                if overhead is not None:
                    overheads.append(overhead)
    ref = statistics.median(refs)
    print(f"\nin-place GEMM, NumPy float64, n = {n}: hand-written timeit (restore in setup, number=1) "
          f"{_fmt(ref)} (median of {rounds} rounds)")
    print(f"{'arraybench':<20}{'median':>10}{'ratio':>8}   ratios by round        verdict")
    for label, values in rows.items():
        ratios = sorted(v / r for v, r in zip(values, refs))
        ratio = statistics.median(ratios)
        verdict = "within ±3%" if abs(ratio - 1) <= 0.03 else "OUTSIDE ±3%"
        print(f"{label:<20}{_fmt(statistics.median(values)):>10}{ratio:>8.3f}   "
              f"{' '.join(f'{r:.3f}' for r in ratios):<22} {verdict}")
    print(f"1-minute load average at the start of each round: {' '.join(f'{x:.1f}' for x in loads)}")
    print(f"calls per sample: pool {sorted(numbers['pool'])}, per_call {sorted(numbers['per_call'])}; "
          f"clock reads subtracted per call (per_call): "
          f"{_fmt(statistics.median(overheads)) if overheads else '-'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--sizes", default="256,32", help="matrix orders (default 256,32)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads (and cores) for every side; 0: the libraries' defaults (default 1: "
                             "on a shared 2-core VM a 2-thread BLAS is bimodal, its times set by the "
                             "neighbours' load)")
    parser.add_argument("--max-load", type=float, default=None,
                        help="before each round, wait (up to 10 min) until the 1-minute load average "
                             "is below this: a batch of calls and a single call suffer a busy "
                             "machine differently, so rounds on a busy one compare badly")
    args = parser.parse_args()
    global THREADS, MAX_LOAD
    THREADS = args.threads or None
    MAX_LOAD = args.max_load
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}; "
          f"threads: {THREADS or 'library defaults'}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            measure(Path(tmp), n, args.rounds)


if __name__ == "__main__":
    main()
