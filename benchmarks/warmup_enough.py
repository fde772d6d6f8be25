"""Whether a run's warm-up was long enough: are the first samples after it slower than the rest?

    python benchmarks/warmup_enough.py RUN/results.json [OTHER/results.json ...]

For every process of every timed cell it takes the median of the first three samples over the
median of the samples after them (1.00: the first samples are as fast as the rest). A warm-up too
short for some library shows as first samples systematically slower, cell after cell. It prints,
per library, how many processes, the median of that ratio and its 90th percentile, and how many
processes' first samples were over 10% slower; then the same for the run as a whole.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict


def first_over_rest(samples: list[float]) -> float | None:
    """The median of the first three samples over the median of the later ones."""
    if len(samples) < 8:
        return None
    return statistics.median(samples[:3]) / statistics.median(samples[3:])


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__.strip().splitlines()[2])
        return 2
    for path in paths:
        with open(path) as f:
            records = json.load(f)["records"]
        by_lib: dict[str, list[float]] = defaultdict(list)
        for rec in records:
            for rep in rec.get("replicates", []):
                r = first_over_rest(rep.get("samples_s") or [])
                if r is not None:
                    by_lib[rec["backend"]].append(r)
        print(path, f"(warm-up {json.load(open(path))['settings'].get('warmup')} s)")
        every = [r for rs in by_lib.values() for r in rs]
        for name, rs in [*sorted(by_lib.items()), ("all", every)]:
            if not rs:
                continue
            q90 = statistics.quantiles(rs, n=10)[-1] if len(rs) >= 10 else max(rs)
            slow = sum(r > 1.10 for r in rs)
            print(f"  {name:<8} {len(rs):>4} processes  first/rest median {statistics.median(rs):.3f}"
                  f"  p90 {q90:.3f}  over 1.10: {slow}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
