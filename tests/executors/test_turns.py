"""Turns between configurations, for real: every sample of a cell that took turns belongs to a
round, so that the pairs compare samples taken seconds apart, never a sample taken alone."""

from __future__ import annotations

import os
import signal
import time

import pytest

import arraybench
from arraybench.executors.worker_process import WorkerProcess
from arraybench.model.cell import Cell
from arraybench.model.results import Results
from arraybench.model.replicate import TimerSettings
from arraybench.worker.protocol import FINISH, Job, Prepare, Prepared, Ready, ReplicateDone, Sampled, Turn


# Configurations taking turns in real workers.
pytestmark = pytest.mark.slow


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
    job = Job(backend="numpy", device="cpu", cells=(cell,),
              timer=TimerSettings(min_samples=3, budget_s=0.05, warmup_s=0.0))
    worker = WorkerProcess(job, env=os.environ, cpus=None, log_path=tmp_path / "worker.log")
    try:
        messages = worker.messages(0.5, startup_timeout=120)
        assert isinstance(next(messages), Ready)
        time.sleep(1.0)  # another worker prepares meanwhile, for longer than the allowance
        worker.send(Prepare().to_json())
        kinds = []
        for msg in messages:
            kinds.append(type(msg))
            if isinstance(msg, Prepared):
                break
        assert kinds == [Prepared]
    finally:
        worker.kill()
        worker.close()


def test_a_worker_measures_the_cells_it_is_told_and_judges_those_not_judged_before(tmp_path):
    # A worker started before the run knew which of its cells it would need (the other
    # allocator state's, before the first process said which outputs are large).
    cells = tuple(Cell(workload="sort", size_label=f"n{n}", size=n, backend="numpy", device="cpu",
                       dtype="float64", mode="latency") for n in (1000, 1001, 1002))
    job = Job(backend="numpy", device="cpu", cells=cells,
              timer=TimerSettings(min_samples=3, budget_s=0.05, warmup_s=0.0))
    worker = WorkerProcess(job, env=os.environ, cpus=None, log_path=tmp_path / "worker.log")
    try:
        messages = worker.messages(30, startup_timeout=120)
        assert isinstance(next(messages), Ready)
        worker.send(Prepare(only=[0, 1], judged=[0]).to_json())
        _until(messages, Prepared)
        for i in range(2):
            worker.send(Turn(i, 0).to_json())
            assert isinstance(_until(messages, Sampled)[-1], Sampled)
        worker.send(FINISH.to_json())
        done = {m.key: m.replicate for m in _until(messages, type(None)) if isinstance(m, ReplicateDone)}
        assert set(done) == {cells[0].key, cells[1].key}
        assert done[cells[0].key].status == done[cells[1].key].status == "ok"
        assert done[cells[0].key].max_rel_error is None and done[cells[0].key].samples_s
        assert done[cells[1].key].max_rel_error == 0.0  # the same sort, judged against NumPy's
    finally:
        worker.kill()
        worker.close()


def test_a_worker_started_early_and_never_used_waits_in_the_sessions_pool_for_a_later_job(tmp_path):
    # A pytest session's worker started ahead for a process its cell did not get: the next test
    # that wants that process takes it, its library imported already, instead of starting one.
    from arraybench.executors.pool import EarlyWorkers, WorkerPool, sharing

    def job(n: int) -> Job:
        cell = Cell(workload="sort", size_label=f"n{n}", size=n, backend="numpy", device="cpu",
                    dtype="float64", mode="latency")
        return Job(backend="numpy", device="cpu", cells=(cell,), reuse=True,
                   timer=TimerSettings(min_samples=3, budget_s=0.05, warmup_s=0.0))

    pool, early = WorkerPool(), EarlyWorkers()
    worker = WorkerProcess(job(1000), env=os.environ, cpus=None, log_path=tmp_path / "worker.log")
    worker.pool_key = "numpy, index 4"
    try:
        early["numpy", 4, ""] = worker
        with sharing(pool):
            early.close(4)
        assert not early and worker.alive() and worker.paused
        assert pool.take("numpy, index 4") is worker  # kept, not ended
        worker.assign(job(1001))
        messages = worker.messages(30, startup_timeout=120)
        assert isinstance(next(messages), Ready)
        worker.send(Prepare().to_json())
        _until(messages, Prepared)
        worker.send(Turn(0, 0).to_json())
        _until(messages, Sampled)
        worker.send(FINISH.to_json())
        [done] = [m for m in _until(messages, type(None)) if isinstance(m, ReplicateDone)]
        assert done.key == job(1001).cells[0].key and done.replicate.status == "ok"
    finally:
        pool.close()
        worker.kill()
        worker.close()


def test_an_early_worker_that_was_asked_to_stop_is_not_kept(tmp_path):
    # Ctrl-C reaches every worker: one whose job a stop ended is no worker for a later test.
    from arraybench.executors.pool import EarlyWorkers, WorkerPool, sharing

    cell = Cell(workload="sort", size_label="1k", size=1000, backend="numpy", device="cpu",
                dtype="float64", mode="latency")
    worker = WorkerProcess(Job(backend="numpy", device="cpu", cells=(cell,), reuse=True,
                               timer=TimerSettings(min_samples=3, budget_s=0.05)),
                           env=os.environ, cpus=None, log_path=tmp_path / "worker.log")
    worker.pool_key = "numpy, index 1"
    pool, early = WorkerPool(), EarlyWorkers()
    early["numpy", 1, ""] = worker
    try:
        worker.wait_started(120)
        os.kill(worker.proc.pid, signal.SIGTERM)
        with sharing(pool):
            early.close()
        assert not worker.alive() and pool.take("numpy, index 1") is None
    finally:
        worker.kill()
        pool.close()


def _until(messages, kind):
    """The messages up to and including the first of ``kind`` (all of them, for ``NoneType``)."""
    out = []
    for msg in messages:
        out.append(msg)
        if isinstance(msg, kind):
            break
    return out


def test_a_cell_is_judged_once_in_the_first_process_whose_result_was_right():
    from arraybench.executors.local import judged_before
    from arraybench.model.replicate import Replicate

    right = Replicate(status="ok", samples_s=[1e-3], number=1, max_rel_error=0.0)
    failed = Replicate.ended("failed", "the worker crashed")
    assert not judged_before({}, 0)
    assert judged_before({0: right}, 1) and judged_before({0: right}, 2)
    assert not judged_before({0: failed}, 1)  # the second process judges it
    assert not judged_before({0: right}, 0)  # a resumed first process judges its own
    unjudged = Replicate(status="ok", samples_s=[1e-3], number=1)  # no reference to judge by
    assert not judged_before({0: unjudged}, 1)


def test_the_next_process_starts_early_only_where_the_run_wants_it_or_likely_will():
    from arraybench.executors.local import early_indices
    from arraybench.model.options import RunOptions

    adaptive = RunOptions(processes=3, max_processes=6)
    assert list(early_indices(adaptive, 0, 3)) == [1, 2]  # the first processes: those wanted
    assert list(early_indices(adaptive, 2, 3)) == []  # the last of them: nothing more is wanted yet
    assert list(early_indices(adaptive, 3, 4)) == [4]  # an extra process: the next beside it
    assert list(early_indices(adaptive, 3, 5)) == [4]  # the next is wanted already: no more
    assert list(early_indices(adaptive, 4, 5)) == [5]
    assert list(early_indices(adaptive, 5, 6)) == []  # the sixth is the most allowed
    fixed = RunOptions(processes=3, max_processes=3)
    assert list(early_indices(fixed, 0, 3)) == [1, 2]  # a fixed count
    assert list(early_indices(fixed, 2, 3)) == []


def test_one_worker_of_a_configuration_reports_its_code_paths_and_the_record_keeps_them(tmp_path):
    """PyTorch's code paths come from MKL's verbose mode, which takes 0.6 s to start in every
    process that asks: one worker of the run asks, and neither the later workers' reports nor a
    resume lose what it said."""
    import json

    import pytest

    from arraybench import backends
    from arraybench.model import journal

    if backends.SPECS["torch"].preflight("cpu") is not None:
        pytest.skip("PyTorch is not installed")
    out = tmp_path / "out"
    results: Results = arraybench.run(
        ["elementwise"], backends="torch", devices="cpu", sizes="small", processes=2, max_time=0.05,
        min_samples=3, allocator="reused", output_dir=out, store=False, plots=False)
    entries = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    reports = [e["info"] for e in entries if e["type"] == "worker" and e["backend"] == "torch"]
    assert len(reports) == 2
    assert [("cpu_capability" in info) for info in reports].count(True) == 1
    assert results.environment["backends"]["torch/cpu"]["cpu_capability"]
    assert journal.read(out).worker_info[("torch", "cpu", "")]["cpu_capability"]


_CALLS = 0


@arraybench.workload(sizes={"small": 8}, namespace="native", reference=lambda x: x + 0.0)
def fast_after_eight_calls(xp, x):
    """Variant "late": 12 ms a call for its first eight calls (the first, two warm-up calls, five
    samples), then microseconds; otherwise 6 ms a call throughout."""
    global _CALLS
    _CALLS += 1
    if not os.environ.get("ARRAYBENCH_TEST_LATE"):
        time.sleep(0.006)
    elif _CALLS <= 8:
        time.sleep(0.012)
    return x + 0.0


def test_a_cell_whose_batch_grew_after_its_own_sampling_ended_samples_again(tmp_path):
    """The "late" side ends its own sampling on 12 ms calls and pairs on beside the 6 ms side;
    its next call takes microseconds, so its batch grows and its samples go back as warm-up. It
    then samples by its own rule again: a cell left with the rounds it paired on for ended with
    no sample at all (PyTorch's 100x100 matmul, calibrated under a tenant's burst)."""
    results: Results = arraybench.run(
        [fast_after_eight_calls], backends="numpy", devices="cpu",
        variants={"late": {"ARRAYBENCH_TEST_LATE": "1"}, "steady": {"ARRAYBENCH_TEST_LATE": ""}},
        processes=1, max_time=0.05, min_samples=3, rel_ci=1e-4, output_dir=tmp_path / "out", store=False,
        plots=False)
    for record in results.records:
        [rep] = record.replicates
        assert rep.status == "ok" and rep.stop_reason in ("budget", "converged")
        assert len(rep.samples_s) >= 3 and len(rep.rounds) == len(rep.samples_s)
    late = next(r for r in results.records if r.environment == "late")
    if late.replicates[0].number > 1:  # it regrew: its samples are of the fast calls alone
        assert max(late.replicates[0].samples_s) < 1e-3


def test_a_stopping_worker_gets_longer_to_send_its_cells_where_processes_queue_for_cores(monkeypatch):
    from arraybench.executors import worker_process

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    assert worker_process.stop_grace_s() == worker_process.STOP_GRACE_S  # a core each: the plain grace
    monkeypatch.setattr(os, "getloadavg", lambda: (16.0, 1.0, 1.0))
    assert worker_process.stop_grace_s() == 8 * worker_process.STOP_GRACE_S  # eight processes a core
    monkeypatch.setattr(os, "getloadavg", lambda: (400.0, 1.0, 1.0))
    assert worker_process.stop_grace_s() == worker_process.STOP_GRACE_MOST_S

