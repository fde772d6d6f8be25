"""The worker protocol: a typed job in, typed messages out, each checked where it is read; and real
workers (NumPy on the CPU) doing each kind of job through ``WorkerProcess``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arraybench.executors.worker_process import WorkerExited, WorkerProcess
from arraybench.model.replicate import Replicate, TimerSettings
from arraybench.model.schema import SchemaError
from arraybench.model.cell import Cell
from arraybench.worker.protocol import (FINISH, CheckDone, Done, Job, Prepare, Prepared, Ready, ReplicateDone,
                                        Sampled, Turn, Unavailable, encode, parse)

CELL = Cell(workload="sort", size_label="1k", size=1000, backend="numpy", device="cpu",
            dtype="float32", mode="latency", params={"k": 3})
SORT = Cell(workload="sort", size_label="1k", size=1000, backend="numpy", device="cpu",
            dtype="float32", mode="latency")


def test_a_job_reads_back_as_it_was_written():
    job = Job(backend="numpy", device="cpu", replicate=2, cells=(CELL,),
              timer=TimerSettings(min_samples=7, budget_s=0.25, cold=True), seed=5, shuffle_seed=9,
              threads=2, workload_files=("/tmp/w.py",), shipped="/tmp/shipped")
    back = Job.from_json(job.to_json())
    assert back == job
    assert back.cells[0].key == CELL.key and isinstance(back.timer, TimerSettings)


@pytest.mark.parametrize("line, message", [
    ('{"backend": "numpy"}', "job.device: missing"),
    ('{"backend": "numpy", "device": "cpu", "task": "bake"}', "job.task: 'bake' is not one of"),
    ('{"backend": "numpy", "device": "cpu", "only": ["nope"]}', "job.only[0]: 'nope' is not one of"),
    ('{"backend": "numpy", "device": "cpu", "threads": 0}', "job.threads: 0 is below 1"),
    ('{"backend": "numpy", "device": "cpu", "timer": {"budget_s": "long"}}', "job.timer.budget_s"),
    ('{"backend": "numpy", "device": "cpu", "cells": {}}', "job.cells: expected a list"),
    ('[]', "job: expected an object"),
    ('not json', "job: not JSON"),
])
def test_a_job_that_does_not_fit_is_refused_naming_the_field(line: str, message: str):
    with pytest.raises(SchemaError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Job.from_json(line)


def test_a_cell_of_a_job_is_checked_by_the_cells_own_reader():
    bad = Job(backend="numpy", device="cpu", cells=(CELL,)).to_json().replace('"size": 1000', '"size": 0')
    with pytest.raises(SchemaError, match=r"job.cells\[0\].size: 0 is not a positive size"):
        Job.from_json(bad)


@pytest.mark.parametrize("message", [
    Ready(info={"version": "2.0", "threads": 4}, pid=123),
    Unavailable("no GPU"),
    Unavailable("torch failed to start: OSError", broken=True),
    ReplicateDone(CELL.key, Replicate.ended("failed", "boom")),
    CheckDone("sync", "passed", "fine"),
    Done(stopped=True),
])
def test_each_message_is_one_line_that_parses_back_to_itself(message):
    line = encode(message)
    assert "\n" not in line
    assert parse(line) == message
    assert parse(line.encode()) == message


@pytest.mark.parametrize("line", [
    "a library printing", "[1, 2]", '{"event": "gossip"}', '{"event": "ready", "info": []}',
    '{"event": "check", "check": "sync", "status": "great", "detail": ""}',
    '{"event": "replicate", "replicate": {}}',
])
def test_a_line_that_is_no_message_is_not_acted_on(line: str):
    assert parse(line) is None


def test_a_malformed_replicate_still_answers_its_cell_as_failed():
    msg = parse('{"event": "replicate", "key": "k", "replicate": {"status": "fine"}}')
    assert isinstance(msg, ReplicateDone) and msg.key == "k"
    assert msg.replicate.status == "failed"
    assert msg.replicate.reason.startswith("the worker sent a malformed measurement (replicate.status")


def _messages(job: Job, tmp_path: Path) -> list:
    worker = WorkerProcess(job, env=os.environ, cpus=None, log_path=tmp_path / "worker.log")
    try:
        return list(worker.messages(120))
    finally:
        worker.close()


def test_a_probe_job_opens_the_library_and_measures_nothing(tmp_path: Path):
    messages = _messages(Job(backend="numpy", device="cpu", task="probe"), tmp_path)
    assert [type(m) for m in messages] == [Ready, Done]
    assert messages[0].pid != os.getpid() and messages[0].info["startup_s"] > 0


def test_a_selfcheck_job_streams_the_checks_that_apply(tmp_path: Path):
    job = Job(backend="numpy", device="cpu", task="selfcheck", only=("float64", "events"))
    messages = _messages(job, tmp_path)
    assert [type(m) for m in messages] == [Ready, CheckDone, Done]
    assert messages[1].check == "float64" and messages[1].status == "passed", messages[1].detail


def test_a_measure_job_answers_each_cell_once_its_turns_are_over(tmp_path: Path):
    job = Job(backend="numpy", device="cpu", cells=(SORT,),
              timer=TimerSettings(min_samples=3, budget_s=0.05, warmup_s=0.0))
    worker = WorkerProcess(job, env=os.environ, cpus=None, log_path=tmp_path / "worker.log")
    try:
        received = worker.messages(120)
        messages = [next(received)]
        worker.send(Prepare().to_json())
        messages.append(next(received))
        for round_ in range(1000):  # alone: every round is this cell's turn, until it is done
            worker.send(Turn(0, round_).to_json())
            sampled = next(received)
            assert isinstance(sampled, Sampled) and sampled.round == round_
            if sampled.done:
                break
        worker.send(FINISH.to_json())
        messages += list(received)
    finally:
        worker.close()
    assert [type(m) for m in messages] == [Ready, Prepared, ReplicateDone, Done]
    assert messages[2].key == SORT.key
    replicate = messages[2].replicate
    assert replicate.status == "ok", replicate.reason
    assert len(replicate.samples_s) >= 3
    assert len(replicate.rounds) == len(replicate.samples_s) and replicate.rounds == sorted(set(replicate.rounds))
    assert messages[-1].stopped is False


def test_a_library_that_is_not_there_is_unavailable(tmp_path: Path):
    messages = _messages(Job(backend="numpy", device="gpu", task="probe"), tmp_path)
    assert len(messages) == 1 and isinstance(messages[0], Unavailable) and not messages[0].broken


def test_a_worker_refuses_a_job_that_does_not_fit_in_one_line(tmp_path: Path):
    job = Job(backend="numpy", device="cpu", task="selfcheck", only=("nope",))  # type: ignore[arg-type]
    with pytest.raises(WorkerExited) as caught:
        _messages(job, tmp_path)
    assert caught.value.returncode == 2
    assert "the job does not fit the protocol: job.only[0]: 'nope' is not one of" in str(caught.value)
    assert "Traceback" not in (tmp_path / "worker.log").read_text()
