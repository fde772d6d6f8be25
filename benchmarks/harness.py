"""How far can arraybench's numbers be trusted? Figures for issue 3's targets, measured in one run.

1. Accuracy of the harness: for ops from ~1 µs to ~100 ms, arraybench's median next to a tight
   ``timeit`` loop and next to ``pyperf`` / ``torch.utils.benchmark`` (each reference in its own
   fresh process, as arraybench's workers are), printed as ratios.
2. Stability: two back-to-back default runs; the share of cells whose medians agree within 5%.
3. Cost: the default CPU suite's wall time next to what the seed's fixed iteration counts would
   take (sum over cells of iterations x median, plus each cell's first call and one start-up per
   library), computed from the same run's records.

Run from the repository root: ``python benchmarks/harness.py`` (add ``--skip-stability`` for part 1
only). Needs ``pip install -e '.[cpu,bench]'`` for the pyperf column.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from arraybench import Results, load_results  # noqa: E402

#: The seed article's fixed iteration counts per workload and size: what its script would spend.
SEED_ITERATIONS = {
    "elementwise": {"small": 500, "large": 100},
    "matmul": {"small": 200, "large": 50},
    "gradient": {"small": 100, "large": 20},
    "fft": {"small": 500, "large": 50},
    "sort": {"small": 200, "large": 50},
}

OPS = [
    # label, arraybench workload/size/backend, setup code for the references, statement
    ("NumPy add, 1,000", ("add", "1000", "numpy"),
     "import numpy as np; r = np.random.default_rng(0); a = r.standard_normal(1000); b = r.standard_normal(1000)",
     "a + b"),
    ("torch add, 1,000", ("add", "1000", "torch"),
     "import torch, numpy as np; r = np.random.default_rng(0); a = torch.from_numpy(r.standard_normal(1000)).clone(); "
     "b = torch.from_numpy(r.standard_normal(1000)).clone()",
     "a + b"),
    ("NumPy matmul, 100", ("matmul", "100", "numpy"),
     "import numpy as np; r = np.random.default_rng(0); a = r.standard_normal((100, 100)); b = r.standard_normal((100, 100))",
     "a @ b"),
    ("NumPy matmul, 1,000", ("matmul", "1000", "numpy"),
     "import numpy as np; r = np.random.default_rng(0); a = r.standard_normal((1000, 1000)); b = r.standard_normal((1000, 1000))",
     "a @ b"),
]

TIMEIT_CHILD = """
import json, statistics, timeit
{setup}
t = timeit.Timer({stmt!r}, globals=globals())
number, _ = t.autorange()
number = max(1, number // 40)  # ~5 ms per repeat, as arraybench's samples
samples = [t.timeit(number) / number for _ in range({repeats})]
print(json.dumps(statistics.median(samples)))
"""

TORCH_CHILD = """
import json, torch.utils.benchmark as tb
{setup}
m = tb.Timer({stmt!r}, globals=dict(a=a, b=b)).blocked_autorange(min_run_time={seconds})
print(json.dumps(m.median))
"""


def _python(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def timeit_median(setup: str, stmt: str, processes: int = 3, repeats: int = 60) -> float:
    """Median over fresh processes of the per-call median of a tight timeit loop."""
    values = sorted(_python(TIMEIT_CHILD.format(setup=setup, stmt=stmt, repeats=repeats))
                    for _ in range(processes))  # one fresh process each, like a worker
    return values[len(values) // 2]


def pyperf_median(setup: str, stmt: str) -> float | None:
    try:
        import pyperf  # noqa: F401
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        subprocess.run([sys.executable, "-m", "pyperf", "timeit", "--fast", "--quiet", "-s", setup,
                        stmt, "-o", str(out)], check=True, capture_output=True)
        import pyperf

        return pyperf.Benchmark.load(str(out)).median()


def torch_benchmark_median(setup: str, stmt: str) -> float | None:
    if "torch" not in setup:
        return None
    return _python(TORCH_CHILD.format(setup=setup, stmt=stmt, seconds=1.0))


def arraybench_run(out: Path, *args: str) -> tuple[Results, float]:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "arraybench", "run", "-q", "--output-dir", str(out), *args],
                   check=True, cwd=ROOT)
    return load_results(out / "results.json"), time.perf_counter() - t0


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def _ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else f"{a / b:.3f}"


def _arraybench_median(tmp: Path, label: str, key: tuple[str, str, str], round_: int) -> float:
    workload, size, backend = key
    extra = ["--workload-file", str(HERE / "harness_workloads.py")] if workload == "add" else []
    res, _ = arraybench_run(tmp / f"{label}-{round_}".replace(" ", "_").replace(",", ""), *extra,
                            "--workloads", workload, "--backends", backend, "--devices", "cpu",
                            "--sizes", size, "--seed", str(round_))
    (rec,) = res.records
    return rec.median_s


def accuracy(tmp: Path, rounds: int) -> None:
    """Each op timed by arraybench and by a tight timeit loop, alternately, ``rounds`` times.

    The machine's speed drifts over minutes (a shared VM), so the two are measured side by side,
    round after round, and compared round by round; the verdict uses the median of the ratios.
    """
    print(f"1. arraybench's median next to reference harnesses, {rounds} alternating rounds "
          "(ratio = arraybench / reference)")
    header = (f"{'operation':<22}{'arraybench':>12}{'timeit':>11}{'ratio':>8}{'ratios by round':>24}"
              f"{'pyperf':>11}{'ratio':>8}{'torch.ub':>11}{'ratio':>8}  verdict")
    print(header)
    print("-" * len(header))
    for label, key, setup, stmt in OPS:
        ours, refs = [], []
        for k in range(rounds):
            ours.append(_arraybench_median(tmp, label, key, k))
            refs.append(timeit_median(setup, stmt, processes=1))
        ratios = sorted(a / b for a, b in zip(ours, refs))
        ratio = ratios[len(ratios) // 2]
        mine = sorted(ours)[len(ours) // 2]
        t_ref = sorted(refs)[len(refs) // 2]
        p_ref = pyperf_median(setup, stmt)
        u_ref = torch_benchmark_median(setup, stmt)
        band = 0.05 if t_ref >= 5e-6 else 0.10
        ok = abs(ratio - 1) <= band
        by_round = " ".join(f"{r:.2f}" for r in ratios)
        print(f"{label:<22}{_fmt(mine):>12}{_fmt(t_ref):>11}{ratio:>8.3f}{by_round:>24}"
              f"{_fmt(p_ref):>11}{_ratio(mine, p_ref):>8}{_fmt(u_ref):>11}{_ratio(mine, u_ref):>8}"
              f"  {'within' if ok else 'OUTSIDE'} ±{band:.0%} of timeit")


def seed_estimate(res: Results) -> float:
    """What the seed's fixed iteration counts would cost, from this run's own medians."""
    total = 0.0
    for r in res.records:
        if r.status != "ok" or r.median_s is None:
            continue
        iters = SEED_ITERATIONS.get(r.workload, {}).get(r.size_label, 0)
        total += iters * r.median_s + (r.first_call_s or 0.0)
    starts = {k.split("/")[0]: v.get("startup_s", 0.0) for k, v in res.environment.get("backends", {}).items()}
    return total + sum(starts.values())


def stability(tmp: Path, args: list[str]) -> None:
    print("\n2-3. Two back-to-back default runs (NumPy, PyTorch, JAX on the CPU; small and large)")
    runs = []
    for i in (1, 2):
        res, wall = arraybench_run(tmp / f"suite{i}", "--devices", "cpu", "--no-plots", *args)
        runs.append((res, wall))
        est = seed_estimate(res)
        ok = [r for r in res.records if r.status == "ok"]
        missed = [r for r in ok if any("CI of the median" in w for w in r.warnings)]
        print(f"run {i}: wall {wall:.1f} s; the seed's fixed iterations would take ~{est:.1f} s "
              f"({wall / est:.2f}x); {len(ok)} ok cells, {len(ok) - len(missed)} met the CI target, "
              f"{len(missed)} say why not")
    a = {r.key: r for r in runs[0][0].records if r.status == "ok"}
    b = {r.key: r for r in runs[1][0].records if r.status == "ok"}
    common = sorted(set(a) & set(b))
    diffs = [(k, b[k].median_s / a[k].median_s - 1) for k in common]
    agree = [k for k, d in diffs if abs(d) <= 0.05]
    print(f"cells whose medians agree within 5%: {len(agree)}/{len(common)} = {len(agree) / len(common):.0%}")
    for k, d in sorted(diffs, key=lambda kd: -abs(kd[1]))[:8]:
        if abs(d) > 0.05:
            print(f"   {k}: {d:+.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-stability", action="store_true")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per op (default 3)")
    parser.add_argument("run_args", nargs="*", help="extra options for the stability runs (after --)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_accuracy:
            accuracy(Path(tmp), args.rounds)
        if not args.skip_stability:
            stability(Path(tmp), args.run_args)


if __name__ == "__main__":
    main()
