"""What the results store costs a run: appending one run, and reading the history of many.

Prints figures; asserts nothing (the machine is shared and noisy).

    .venv/bin/python benchmarks/store_overhead.py [RESULTS.json] [N]
"""

from __future__ import annotations

import copy
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from arraybench.analysis.history import history  # noqa: E402
from arraybench.store import open_store  # noqa: E402


def main() -> None:
    from synthetic import timed_run

    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    if len(sys.argv) > 1:
        from arraybench.model.results import load, resolve

        template = load(resolve(sys.argv[1]))
    else:
        template = timed_run(1)
    path = Path(tempfile.mkdtemp()) / "store.sqlite"
    adds = []
    with open_store(path) as store:
        for i in range(n):
            run = copy.deepcopy(template)
            run.environment["timestamp"] = f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}+00:00"
            t0 = time.perf_counter()
            store.add(run)
            adds.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        entries, runs = store.entries()
        found = history(entries, runs)
        read = time.perf_counter() - t0
    print(f"{n} runs of {len(template.records)} records into {path} ({path.stat().st_size / 1e6:.1f} MB)")
    print(f"append one run: median {statistics.median(adds) * 1e3:.1f} ms, max {max(adds) * 1e3:.1f} ms")
    print(f"read and analyse the whole history: {read * 1e3:.0f} ms "
          f"({len(found.series)} series, {found.tested} pairs tested, {len(found.steps)} steps)")


if __name__ == "__main__":
    main()
