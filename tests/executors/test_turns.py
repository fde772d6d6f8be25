"""Turns between configurations, for real: every sample of a cell that took turns belongs to a
round, so that the pairs compare samples taken seconds apart, never a sample taken alone."""

from __future__ import annotations

import os
import time

import arraybench
from arraybench.executors.worker_process import WorkerProcess
from arraybench.model.cell import Cell
from arraybench.model.results import Results
from arraybench.model.timer_settings import TimerSettings
from arraybench.worker.protocol import PREPARE, Job, Prepared, Ready, Start


@arraybench.workload(sizes={"small": 8}, namespace="native", reference=lambda x: x + 0.0)
def slow_call(xp, x):
    """A call slow enough (>= 0.1 s) that its warm-up call would be kept as a sample."""
    time.sleep(0.1)
    return x + 0.0


def test_a_slow_cells_warm_up_call_is_no_sample_of_its_turns(tmp_path):
    results: Results = arraybench.run(
        [slow_call], backends="numpy", devices="cpu", variants={"a": {}, "b": {"ARRAYBENCH_UNUSED": "1"}},
        processes=2, max_time=0.6, min_samples=6, output_dir=tmp_path / "out", store=False, plots=False)
    records = [r for r in results.records if r.status == "ok"]
    assert len(records) == 2
    for record in records:
        for rep in record.replicates:
            # One round per sample: the i-th sample was taken in the i-th round.
            assert len(rep.rounds) == len(rep.samples_s) >= 2
    [pair] = results.pairs
    assert pair.rounds == sum(len(rep.samples_s) for rep in records[0].replicates)


def test_a_worker_waiting_to_be_told_to_prepare_is_not_taken_for_stuck(tmp_path):
    """Each worker of an index prepares alone, one after another: the time a worker waited for
    its turn to prepare (its messages last read at ``Ready``) is no time without progress."""
    cell = Cell(workload="sort", size_label="1k", size=1000, backend="numpy", device="cpu",
                dtype="float64", mode="latency")
    job = Job(backend="numpy", device="cpu", cells=(cell,), turns=True,
              timer=TimerSettings(min_samples=3, budget_s=0.05, warmup_s=0.0))
    worker = WorkerProcess(job, env=os.environ, cpus=None, log_path=tmp_path / "worker.log")
    try:
        messages = worker.messages(0.5, startup_timeout=120)
        assert isinstance(next(messages), Ready)
        time.sleep(1.0)  # another worker prepares meanwhile, for longer than the allowance
        worker.send(PREPARE.to_json())
        kinds = []
        for msg in messages:
            kinds.append(type(msg))
            if isinstance(msg, Prepared):
                break
        assert kinds == [Start, Prepared]
    finally:
        worker.kill()
        worker.close()
