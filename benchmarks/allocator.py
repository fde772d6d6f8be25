"""Does arraybench time both allocator states as a plain ``timeit`` process in that state does?

Issue 23: a large-output call takes 2-3x longer when glibc hands its freed output back to the
kernel ("fresh pages") than when it keeps it ("reused memory"), and a process lands in either by
accident. arraybench's workers start with glibc's variables for reused memory, and large-output
CPU cells are measured again by workers started with fresh pages. This script checks both
numbers against the plainest reference, cell by cell (a shared machine's load drifts, so each
cell's arraybench run comes just before its plain processes):

1. ``arraybench run`` of one built-in workload at its large size on one library's CPU
   (``--processes``, ``--threads``, default 1, 0 for every core, the same for every process below);
2. if it was timed in both states, ``--plain-processes`` plain Python processes per state, each
   started with glibc's own variables for that state (``model/replicate.SETTINGS``:
   ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``), the same thread variables and CPU
   affinity as arraybench's worker, timing the very same call (the workload bound as arraybench
   binds it, its result waited for) with ``timeit``: ``autorange``, then ``--repeats`` batches,
   the median per call, and the page faults per call; ``--default`` adds processes with no
   variable (glibc left alone);
3. prints, per cell and state, arraybench's median, the plain processes' (the median of their
   medians), their ratio, the faults per call of both and the load average, and flags a ratio
   outside 1 ± ``--tolerance`` (default 10%).

A script that prints figures, not a test. Run from the repository root::

    python benchmarks/allocator.py                        # numpy,torch,jax; the built-ins, large
    python benchmarks/allocator.py --backends numpy --workloads fft --processes 3
    python benchmarks/allocator.py --results DIR           # an existing run's cells, measured earlier

On a shared machine the figures are noisy: say so next to them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import arraybench  # noqa: E402
from arraybench.host.threads import worker_cpus, worker_env  # noqa: E402
from arraybench.model import replicate as allocator  # noqa: E402
from arraybench.model.record import Record  # noqa: E402

#: The plain process: the same bound call as arraybench's worker, timed by ``timeit`` alone.
CHILD = r"""
import json, resource, statistics, sys, timeit
from arraybench import backends
from arraybench.workloads import REGISTRY
from arraybench.workloads.inputs import bind
from arraybench.workloads.inputs import make_inputs

name, backend_name, size, threads, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
backend = backends.load(backend_name)("cpu", allow_tf32=False)
if threads != "all":
    backend.limit_threads(int(threads))
wl = REGISTRY.get(name)
params = wl.call_settings(size, {})
host = make_inputs(wl, size, "float64", 0, params).arrays
arrays = tuple(backend.asarray(h) for h in host)
bound = bind(wl, backend, "latency", arrays, "float64", params)
op, args, kwargs, sync = bound.op, bound.args, bound.kwargs, backend.sync

def call():
    result = op(*args, **kwargs)
    if sync is not None:
        sync(result)

timer = timeit.Timer(call)
number, _ = timer.autorange()
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
times = [timer.timeit(number) / number for _ in range(repeats)]
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / (number * repeats)
print(json.dumps({"median_s": statistics.median(times), "faults_per_call": faults, "number": number}))
"""


def plain(record: Record, state: str | None, threads: int | None, repeats: int) -> dict[str, float]:
    """The plain process's median and faults per call for ``record``'s cell in ``state`` (None:
    glibc left alone)."""
    env = worker_env(os.environ, threads=threads, backend=record.backend, device="cpu", allow_tf32=False)
    for name in allocator.USER_VARIABLES:
        env.pop(name, None)
    if state is not None:
        env.update(allocator.environment(state))  # type: ignore[arg-type]
    env["PYTHONPATH"] = str(ROOT)
    cpus = worker_cpus(threads)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, record.workload, record.backend, str(record.size),
         "all" if threads is None else str(threads), str(repeats)],
        env=env, cwd=ROOT, capture_output=True, text=True, check=True,
        preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _one_cell(workload: str, backend: str, args: argparse.Namespace) -> Record | None:
    """arraybench's record of ``workload`` at its large size on ``backend``'s CPU, where it was
    timed in both allocator states (None otherwise: a small output, or not ok)."""
    out = Path(tempfile.mkdtemp(prefix="allocator-"))
    cmd = [sys.executable, "-m", "arraybench", "run", "-q", "--no-plots", "--no-store", "-o", str(out),
           "--backends", backend, "--devices", "cpu", "--sizes", "large", "--workloads", workload,
           "--processes", args.processes, *(["--threads", str(args.threads)] if args.threads else [])]
    subprocess.run(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True)
    try:
        (record,) = arraybench.load_results(out).records
    except Exception:
        return None
    return record if record.status == "ok" and record.other_median_s is not None else None


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:9.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="numpy,torch,jax")
    parser.add_argument("--workloads", default="", help="default: the built-ins with large outputs")
    parser.add_argument("--threads", type=int, default=1,
                        help="for every process (default 1; 0: every core, as a default run has; with "
                             "--results, the run's own)")
    # Five a side: with three, a group's median moved by more than 10% on a 2-core VM with the
    # same page faults on both sides (21 of 24 pairs in range, against 24 of 24 with five).
    parser.add_argument("--processes", default="5", help="arraybench's --processes (default 5)")
    parser.add_argument("--repeats", type=int, default=15, help="timeit batches per plain process")
    parser.add_argument("--plain-processes", type=int, default=5,
                        help="plain processes per state; the median of their medians (default 5)")
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--default", action="store_true", help="also a plain process left alone")
    parser.add_argument("--results", type=Path, help="an arraybench run to check instead of a new one")
    args = parser.parse_args()
    args.threads = args.threads or None  # 0: the libraries' own default, every core

    if args.results is not None:
        given = arraybench.load_results(args.results)
        records = [r for r in given.records if r.status == "ok" and r.other_median_s is not None]
        # The plain processes get the run's own thread setting (a default run's: every core).
        args.threads = given.settings.get("threads")
    else:
        records = []
    # The built-ins whose large size returns 128 KiB or more (stats and gradient return less).
    workloads = args.workloads.split(",") if args.workloads else ["elementwise", "matmul", "fft", "sort"]
    backends = args.backends.split(",")
    when = ("each cell's arraybench run just before its plain processes (a shared machine's load drifts)"
            if args.results is None else f"arraybench's figures from {args.results}, measured before the plain "
            "processes: each ratio holds the machine's drift between the two moments (without --results, "
            "each cell is measured just before its plain processes)")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start; threads "
          f"{args.threads}; {when}")
    print(f"{'cell':38} {'state':7} {'arraybench ms':>13} {'timeit ms':>10} {'ratio':>6} "
          f"{'faults/call (ab, timeit)':>26}  load")
    flagged = 0
    ratios = []
    cases = [(r.workload, r.backend, r) for r in records] or [(w, b, None) for w in workloads for b in backends]
    for workload, backend, given in cases:
        r = given or _one_cell(workload, backend, args)
        if r is None:
            continue
        own_faults = r.usage.minor_faults_per_call if r.usage is not None else None
        measured = {r.allocator: (r.median_s, own_faults),
                    r.other_allocator: (r.other_median_s, r.other_faults_per_call)}
        states: list[str | None] = list(allocator.STATES) + ([None] if args.default else [])
        for state in states:
            refs = [plain(r, state, args.threads, args.repeats) for _ in range(args.plain_processes)]
            ref = {"median_s": statistics.median(x["median_s"] for x in refs),
                   "faults_per_call": statistics.median(x["faults_per_call"] for x in refs)}
            ours, faults = measured.get(state, (None, None)) if state is not None else (None, None)
            ratio = ours / ref["median_s"] if ours else None
            bad = ratio is not None and abs(ratio - 1) > args.tolerance
            flagged += bad
            if ratio is not None:
                ratios.append(ratio)
            label = f"{r.workload} {r.size_label} {r.config_label}"
            fa = "—" if faults is None else f"{faults:,.0f}"
            print(f"{label:38} {state or 'default':7} {_ms(ours):>13} {_ms(ref['median_s']):>10} "
                  f"{'' if ratio is None else f'{ratio:6.3f}':>6} {fa:>12}, {ref['faults_per_call']:>11,.0f}"
                  f"  {os.getloadavg()[0]:4.1f}"
                  + ("  << outside ±{:.0%}".format(args.tolerance) if bad else ""), flush=True)
    within = sum(abs(x - 1) <= args.tolerance for x in ratios)
    print(f"\n{within} of {len(ratios)} (cell, state) pairs within ±{args.tolerance:.0%} of plain timeit; "
          f"{flagged} flagged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
