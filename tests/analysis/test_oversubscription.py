"""A machine loaded on purpose: spinning processes on every CPU while PyTorch's multi-threaded
matmul is measured through the API. Its pool outnumbers the cores they leave it; the findings say
so, with the fix, only where the run measured what that cost."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import arraybench
from arraybench.analysis.oversubscription import (SLOWDOWN_WORTH_SAYING, ran_several_threads, oversubscribed,
                                                  pool_threads)

SPIN = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


# A thread pool on a machine the test loads itself.
pytestmark = pytest.mark.slow


def test_a_thread_pool_on_a_loaded_machine_is_told_it_competed_for_cores_and_how_to_stop():
    cpus = os.cpu_count() or 1
    if cpus < 2:
        pytest.skip("one CPU: a library here has no thread pool to oversubscribe")
    # The spinners outlive the run if it hangs (the timeout), never the test: killed below.
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=60)]) for _ in range(cpus)]
    try:
        time.sleep(0.3)  # let them start spinning
        results = arraybench.run(["matmul"], backends=["torch"], devices=["cpu"], sizes=["small"],
                                 processes=1, max_time=0.05, min_samples=3, plots=False, store=False)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    (rec,) = results.records
    assert rec.status == "ok" and rec.busy is True
    threads = pool_threads(rec, results.environment)
    if threads is None or threads < 2:
        pytest.skip(f"PyTorch runs {threads} thread here: no pool to oversubscribe")
    # Every process competed (one process, spinners on every CPU) and no run with fewer threads:
    # a note only where the samples themselves measured the cost, with a pool that ran threads.
    for found in oversubscribed(results.records, results.environment):
        assert found.threads == threads and found.left < threads - 0.5
        assert found.slowdowns and max(found.slowdowns) >= SLOWDOWN_WORTH_SAYING
        assert found.split is not None and ran_several_threads(list(found.record.replicates))
        (text,) = [f for f in results.findings() if "competed for cores" in f]
        assert text.startswith("The thread pool of PyTorch CPU competed for cores on matmul small (n = 100): "
                               f"{threads} threads on the ")
        n = found.threads_to_use
        assert f"threads={n} here, torch.set_num_threads({n}) in your own program." in text  # the API's name
    if not oversubscribed(results.records, results.environment):
        assert not any("competed for cores" in f for f in results.findings())
