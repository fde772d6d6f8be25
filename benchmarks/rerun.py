"""Do arraybench's numbers hold on a re-run? The figures of issue 11, from real back-to-back runs.

Runs the default suite (``arraybench run -q --no-plots``) twice back to back with today's defaults,
and the baseline (the defaults before adaptive replication: ``--processes 3``, or an older commit
with ``--baseline-commit``) before and after them, then prints:

- each run's wall time, and the new default's against the baseline's (target: at most 1.5x);
- the share of cells whose two medians agree within 5% (target: 90% or more);
- calibration: the share of cells where |m1 - m2| <= sqrt(h1^2 + h2^2), h being each interval's
  half-width on the side facing the other median (target: 90% or more; honest 95% intervals give
  about 95%);
- the median CI half-width (target: 3% or less: wider-than-true intervals are no answer);
- ``arraybench compare`` of the two runs: cells with no significant change (target: 29 of 30).

With ``--reference-processes 12`` (issue 23) a run of this code with 12 processes follows, and
the script counts the pairs of libraries (one workload and size) it separates by 5% or more, and
how many of them both default runs (and both baseline runs) order the same way (target: all).

The same figures are printed for the baseline pair, for reference. Run from the repository root::

    python benchmarks/rerun.py                          # baseline: --processes 3 (same code)
    python benchmarks/rerun.py --baseline-commit 240fd81 # baseline: that commit's own code
    python benchmarks/rerun.py --baseline-commit a8d32a3 --reference-processes 12

On a shared machine the figures are noisy: say so next to them. A script that prints figures, not
a test (tests never time anything).
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

import arraybench  # noqa: E402
from scipy.stats import mannwhitneyu  # noqa: E402
from arraybench.numeric import medians as stats
from arraybench.analysis.compare import NOT_SIGNIFICANT, SAME  # noqa: E402
from arraybench.model.results import Results

TARGETS = {"agree": 0.90, "calibrated": 0.90, "half_width": 0.03, "wall_ratio": 1.5, "no_change": 29 / 30}


def run(out: Path, args: list[str], root: Path = ROOT) -> tuple[Results, float]:
    """One default run into ``out`` with ``args``, from the code in ``root``; (results, wall s)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "arraybench", "run", "-q", "--no-plots", "-o", str(out), *args],
                          cwd=root, env=env)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 1):  # 1: a cell was wrong; its results are still all there
        raise SystemExit(f"arraybench run into {out} exited with {done.returncode}")
    results = arraybench.load_results(out)
    for r in results.records:
        if r.status in ("wrong", "failed"):
            # Left out of every figure below (they compare ok cells only): said, not hidden.
            print(f"  {out.name}: {r.key} {r.status}: {(r.reason or '')[:160]}")
    return results, wall


def _facing(lo: float, hi: float, m: float, other: float) -> float:
    return (m - lo) if other < m else (hi - m)


def pair_figures(a: Results, b: Results) -> dict[str, float]:
    """Agreement, calibration and the median half-width over the cells valid in both runs."""
    x = {r.key: r for r in a.records if r.status == "ok" and r.median_s}
    y = {r.key: r for r in b.records if r.status == "ok" and r.median_s}
    common = sorted(set(x) & set(y))
    agree = calibrated = 0
    widths = []
    for k in common:
        r1, r2 = x[k], y[k]
        m1, m2 = r1.median_s, r2.median_s
        agree += abs(m2 / m1 - 1) <= 0.05
        h1 = _facing(r1.ci_low_s, r1.ci_high_s, m1, m2)
        h2 = _facing(r2.ci_low_s, r2.ci_high_s, m2, m1)
        calibrated += abs(m1 - m2) <= (h1 * h1 + h2 * h2) ** 0.5
        widths += [(r.ci_high_s - r.ci_low_s) / (2 * r.median_s) for r in (r1, r2)]
    widths.sort()
    n = len(common)
    # The test compare used before issue 11, on the same data: Mann-Whitney U on the pooled samples
    # at p < 0.05 with non-overlapping intervals, no correction for the number of cells.
    old_calls = 0
    for k in common:
        s1, s2 = x[k].samples_s, y[k].samples_s
        if s1 and s2:
            ratio = stats.median(s2) / stats.median(s1)
            (lo1, hi1), (lo2, hi2) = stats.median_ci(s1), stats.median_ci(s2)
            apart = lo2 > hi1 or hi2 < lo1
            old_calls += (mannwhitneyu(s1, s2, method="asymptotic").pvalue < 0.05 and apart
                          and (ratio > 1.02 or ratio < 1 / 1.02))
    comparison = arraybench.compare(a, b)
    compared = comparison.comparable
    return {"cells": n, "agree": agree / n, "calibrated": calibrated / n,
            "half_width": widths[len(widths) // 2] if widths else float("nan"),
            "no_change": sum(c.verdict in (SAME, NOT_SIGNIFICANT) for c in compared) / max(len(compared), 1),
            "no_change_n": sum(c.verdict in (SAME, NOT_SIGNIFICANT) for c in compared), "compared": len(compared),
            "method": comparison.method, "old_calls": old_calls}


def separated_pairs(reference: Results, runs: list[Results], min_ratio: float = 1.05) -> tuple[int, int]:
    """Of the pairs of libraries (one workload and size) that ``reference`` (a run with many
    processes) separates by ``min_ratio`` or more, how many every run of ``runs`` orders the same
    way: (same, pairs)."""
    def medians(res: Results) -> dict[tuple[str, str], dict[str, float]]:
        out: dict[tuple[str, str], dict[str, float]] = {}
        for r in res.records:
            if r.status == "ok" and r.median_s:
                out.setdefault((r.workload, r.size_label), {})[r.config_label] = r.median_s
        return out

    ref, others = medians(reference), [medians(r) for r in runs]
    same = pairs = 0
    for case, times in ref.items():
        labels = sorted(times)
        for i, a in enumerate(labels):
            for b in labels[i + 1:]:
                ratio = times[b] / times[a]
                if max(ratio, 1 / ratio) < min_ratio:
                    continue
                pairs += 1
                same += all(case in o and a in o[case] and b in o[case]
                            and (o[case][b] > o[case][a]) == (ratio > 1) for o in others)
    return same, pairs


def _mark(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def print_pair(name: str, f: dict[str, float]) -> None:
    n = int(f["cells"])
    print(f"{name}: {n} cells valid in both runs")
    print(f"  medians within 5%:           {f['agree'] * n:.0f}/{n} = {f['agree']:.0%}  "
          f"({_mark(f['agree'] >= TARGETS['agree'])} >= 90%)")
    print(f"  calibration |m1-m2| <= sqrt(h1^2+h2^2): {f['calibrated'] * n:.0f}/{n} = {f['calibrated']:.0%}  "
          f"({_mark(f['calibrated'] >= TARGETS['calibrated'])} >= 90%)")
    print(f"  median CI half-width:        ±{f['half_width']:.1%}  "
          f"({_mark(f['half_width'] <= TARGETS['half_width'])} <= 3%)")
    print(f"  compare run 1 -> run 2:      no change on {int(f['no_change_n'])}/{int(f['compared'])}  "
          f"({_mark(f['no_change'] >= TARGETS['no_change'])} >= 29 of 30)")
    print(f"  ({f['method']})")
    print(f"  the test compare used before (Mann-Whitney U on pooled samples, no correction) would "
          f"call {int(f['old_calls'])} of these cells changed")


def baseline_root(commit: str | None, tmp: Path) -> Path:
    """The code the baseline runs: this checkout, or ``commit``'s files exported into ``tmp``
    (``git archive``: the repository itself is not touched)."""
    if commit is None:
        return ROOT
    folder = tmp / "baseline-code"
    folder.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline-commit", default=None,
                        help="run the baseline from this commit's code (default: this code with --processes 3)")
    parser.add_argument("--baseline-args", default="--processes 3",
                        help="options of the baseline runs with this code (default: '--processes 3', "
                             "the defaults before adaptive replication)")
    parser.add_argument("--one-baseline", action="store_true",
                        help="one baseline run before the new ones, not one on each side of them")
    parser.add_argument("--reference-processes", type=int, default=0,
                        help="also a run with this many processes (e.g. 12), and how many pairs of "
                             "libraries it separates by >= 5%% both new runs order the same way")
    parser.add_argument("--no-baseline", action="store_true", help="only the two new runs")
    parser.add_argument("run_args", nargs="*", help="extra options for every run (after --)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start; "
          f"python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        root = baseline_root(args.baseline_commit, tmp)
        base_args = [] if args.baseline_commit else args.baseline_args.split()
        label = f"commit {args.baseline_commit}" if args.baseline_commit else " ".join(base_args)
        walls: dict[str, float] = {}
        results: dict[str, Results] = {}
        order = [("baseline 1", root, base_args), ("new 1", ROOT, []), ("new 2", ROOT, [])]
        if not args.one_baseline:
            order.append(("baseline 2", root, base_args))
        if args.no_baseline:
            order = [o for o in order if not o[0].startswith("baseline")]
        if args.reference_processes:
            order.append(("reference", ROOT, ["--processes", str(args.reference_processes)]))
        for name, code, extra in order:
            results[name], walls[name] = run(tmp / name.replace(" ", "-"), [*extra, *args.run_args], code)
            what = "default" if not extra and code == ROOT else (" ".join(extra) if code == ROOT else label)
            print(f"{name:<11} ({what}): "
                  f"wall {walls[name]:.1f} s, load average {os.getloadavg()[0]:.1f} after")
        base_walls = [walls[k] for k in walls if k.startswith("baseline")]
        new_walls = [walls["new 1"], walls["new 2"]]
        if base_walls:
            ratio = (sum(new_walls) / 2) / (sum(base_walls) / len(base_walls))
            print(f"\nwall time: new default {new_walls[0]:.1f} s and {new_walls[1]:.1f} s; baseline "
                  + " and ".join(f"{w:.1f} s" for w in base_walls)
                  + f": {ratio:.2f}x ({_mark(ratio <= TARGETS['wall_ratio'])} <= 1.5x)")
        print()
        print_pair("new default, run 1 vs run 2", pair_figures(results["new 1"], results["new 2"]))
        if "reference" in results:
            same, pairs = separated_pairs(results["reference"], [results["new 1"], results["new 2"]])
            print(f"  pairs of libraries the {args.reference_processes}-process run separates by >= 5%: "
                  f"{pairs}; both new runs order {same} of them the same way "
                  f"({_mark(same == pairs)} all)")
        if "baseline 2" in results:
            print()
            print_pair(f"baseline ({label}), before vs after the new runs (not back to back)",
                       pair_figures(results["baseline 1"], results["baseline 2"]))
            if "reference" in results:
                same, pairs = separated_pairs(results["reference"], [results["baseline 1"], results["baseline 2"]])
                print(f"  pairs of libraries the {args.reference_processes}-process run separates by >= 5%: "
                      f"{pairs}; both baseline runs order {same} of them the same way")


if __name__ == "__main__":
    main()
