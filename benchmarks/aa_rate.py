"""How often a default run calls a library faster or slower than itself (A/A), at four loads.

Every library of the default CPU suite is measured twice in one run, under two labels whose
configurations are identical (``--variant a: --variant b:UNUSED=1``): every pair of a library with
its own twin is an A/A pair, whose honest verdicts are ``level`` or ``undecided``. For each load it
prints the A/A pairs, how many were called faster or slower (the false-verdict rate; a 95%
interval gives about 5%) and the largest such ratio, the share called level, the median pair
interval (its half-width, as ±%), and each run's wall time:

- quiet: the machine as it is (run this script alone);
- tenant: one core busy in random bursts (busy 0.5-3 s, idle 0.2-1.5 s);
- hogs 2x / 4x: steady busy loops on twice / four times the cores.

Then, with ``--gate N``, README's gate on unchanged code under the tenant, N times: a run stored,
then ``run --compare last --fail-above 10%`` on the same code; how many of the N failed.

    python benchmarks/aa_rate.py                     # 3 runs at each of the four loads
    python benchmarks/aa_rate.py --runs 1 --loads quiet,tenant
    python benchmarks/aa_rate.py --loads tenant --runs 0 --gate 10

The machine must be otherwise quiet: two benchmarks on 2 cores measure each other.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from busy_machine import Tenant, _arraybench  # noqa: E402  (a sibling script, not a package)

LOADS = ("quiet", "tenant", "hogs2x", "hogs4x")


def _hog(stop: "multiprocessing.synchronize.Event") -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


@contextmanager
def load(name: str) -> Iterator[None]:
    """The machine under load ``name`` for the duration of the block."""
    with ExitStack() as stack:
        if name == "tenant":
            stack.enter_context(Tenant())
        elif name.startswith("hogs"):
            stop = multiprocessing.Event()
            hogs = [multiprocessing.Process(target=_hog, args=(stop,), daemon=True)
                    for _ in range(int(name[4]) * (os.cpu_count() or 1))]
            for h in hogs:
                h.start()
            stack.callback(lambda: [stop.set(), *(h.join(10) for h in hogs)])
        yield


def aa_pairs(results: Path) -> list[dict]:
    """The run's pairs of a configuration with its twin (labels equal but for [a] / [b])."""
    data = json.loads(results.read_text())
    out = []
    for p in data.get("pairs", []):
        a, b = p["a_label"], p["b_label"]
        if {a[-3:], b[-3:]} == {"[a]", "[b]"} and a[:-3] == b[:-3]:
            out.append(p)
    return out


def report(name: str, pairs: list[dict], walls: list[float]) -> None:
    n = len(pairs)
    false = [p for p in pairs if p["verdict"] in ("faster", "slower")]
    level = sum(1 for p in pairs if p["verdict"] == "level")
    worst = max((max(p["ratio"], 1 / p["ratio"]) for p in false), default=1.0)
    halves = [(math.sqrt(p["ci_high"] / p["ci_low"]) - 1) * 100 for p in pairs if p["ci_low"] > 0]
    print(f"{name}: {n} A/A pairs in {len(walls)} runs; faster/slower {len(false)} "
          f"({len(false) / n:.1%}), largest {worst:.2f}x; level {level} ({level / n:.0%}); "
          f"median interval ±{statistics.median(halves):.1f}%; wall "
          + ", ".join(f"{w:.0f} s" for w in walls) if n else f"{name}: no A/A pairs")
    for p in false:
        print(f"    false: {p['a_label']} vs {p['b_label']} on {p['case']}: {p['ratio']:.3f} "
              f"[{p['ci_low']:.3f}, {p['ci_high']:.3f}], {p['method']}")


def gate(times: int, tmp: Path) -> None:
    """README's gate on unchanged code under the tenant, ``times`` times."""
    failed = 0
    for i in range(times):
        store = tmp / f"gate{i}.sqlite"
        with load("tenant"):
            _arraybench("run", "--backends", "numpy", "--workloads", "sort,matmul", "-q", "--no-plots",
                        "--store", str(store), "-o", str(tmp / f"g{i}a"))
            wall, code, out = _arraybench("run", "--backends", "numpy", "--workloads", "sort,matmul", "-q",
                                          "--no-plots", "--store", str(store), "-o", str(tmp / f"g{i}b"),
                                          "--compare", "last", "--fail-above", "10%")
        failed += code != 0
        print(f"  gate {i + 1}: exit {code} in {wall:.0f} s" + (f": {out.strip().splitlines()[-1]}" if code else ""))
    print(f"gate on unchanged code under the tenant: {failed} of {times} failed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="default runs at each load (default 3)")
    ap.add_argument("--loads", default=",".join(LOADS), help=f"comma-separated, of {', '.join(LOADS)}")
    ap.add_argument("--gate", type=int, default=0, help="README's gate on unchanged code, N times")
    args = ap.parse_args()
    loads = [x for x in args.loads.split(",") if x]
    unknown = [x for x in loads if x not in LOADS]
    if unknown:
        ap.error(f"unknown load {unknown[0]!r}; choose from {', '.join(LOADS)}")
    with tempfile.TemporaryDirectory(prefix="aa-rate-") as tmp:
        for name in loads:
            pairs, walls = [], []
            for i in range(args.runs):
                out = Path(tmp) / f"{name}{i}"
                with load(name):
                    start = time.perf_counter()
                    wall, code, text = _arraybench("run", "--variant", "a:", "--variant", "b:UNUSED=1", "-q",
                                                   "--no-plots", "--no-store", "-o", str(out))
                walls.append(time.perf_counter() - start)
                if not (out / "results.json").exists():
                    print(f"{name} run {i + 1}: exit {code}, no results: {text.strip()[-300:]}")
                    continue
                pairs += aa_pairs(out / "results.json")
            if args.runs:
                report(name, pairs, walls)
        if args.gate:
            gate(args.gate, Path(tmp))


if __name__ == "__main__":
    main()
