"""The cluster channel's messages, both ways, without Ray: what the head sends a node's agent and
what the agent answers read back as they were sent, and what does not have its shape refused."""

from __future__ import annotations

import pytest

from arraybench.executors import cluster as sp
from arraybench.model.cell import Cell, Config
from arraybench.model.replicate import Replicate
from arraybench.model.schema import SchemaError

CELL = Cell("matmul", "small", 100, "numpy", "cpu", "float64", "latency")
MEASURED = Replicate(status="ok", samples_s=[1e-3, 1.1e-3, 0.9e-3], number=1, first_call_s=2e-3)


def test_a_shard_job_reads_back_as_it_was_sent():
    job = sp.ShardJob(options={"processes": 2, "backends": ["numpy"]}, cells=(CELL,),
                      files=(("mine.py", "print('hi')"),), shipped=b"\x00\x01 shipped",
                      done={CELL.key: {1: MEASURED}}, node="node-b", interpreters={"/usr/bin/python3": ""},
                      command_line=True)
    back = sp.ShardJob.from_dict(job.to_dict())
    assert back == job
    assert back.done[CELL.key][1].samples_s == MEASURED.samples_s and back.cells[0].key == CELL.key


@pytest.mark.parametrize("change, named", [({"cells": [{"workload": "matmul"}]}, "shard job.cells[0]"),
                                           ({"files": [["a.py", 3]]}, "shard job.files[0][1]"),
                                           ({"shipped": "text"}, "shard job.shipped"),
                                           ({"done": {"k": {"x": {}}}}, "shard job.done.k"),
                                           ({"options": None}, "shard job.options")])
def test_a_shard_job_without_its_shape_names_the_field(change, named):
    data = {**sp.ShardJob(options={}, cells=(CELL,)).to_dict(), **change}
    with pytest.raises(SchemaError) as refused:
        sp.ShardJob.from_dict(data)
    assert str(refused.value).startswith(named), refused.value


MESSAGES = [sp.Started(time=1700000000.5, pid=4242),
            sp.WorkerStarted("torch", "cpu", "np2", index=1, cells=3),
            sp.WorkerInfo("numpy", "cpu", "", index=0, info={"numpy": "2.0.0", "blas": {"name": "openblas"}}, pid=77),
            sp.Interpreters({"/opt/py/bin/python": "not found", "/usr/bin/python3": ""}),
            sp.ReplicateSent(CELL.key, 2, MEASURED),
            sp.Unavailable("cupy", "gpu", "", "no CUDA device"),
            sp.Ended(time=1700000009.0, outcome="error", reason="ValueError: boom", logs={"numpy-cpu-0.log": "tail"})]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_each_message_reads_back_as_it_was_sent(message):
    data = sp.encode(message)
    assert data["event"] == message.EVENT
    assert sp.parse(data) == message


def test_the_configs_of_messages_are_the_cells():
    assert sp.WorkerStarted("numpy", "cpu", "", 0, 1).config == CELL.config == Config("numpy", "cpu", "")
    assert sp.Unavailable("numpy", "cpu", "", "gone").config == CELL.config


def test_a_message_without_its_shape_is_not_acted_on():
    assert sp.parse({"event": "started", "time": "noon", "pid": 1}) is None
    assert sp.parse({"event": "ended", "time": 1.0, "outcome": "exploded"}) is None
    assert sp.parse({"event": "worker_started", "backend": "numpy", "device": "cpu", "environment": "",
                     "index": "0", "cells": 1}) is None
    assert sp.parse({"event": "no such event"}) is None and sp.parse(["started"]) is None
    assert sp.parse({"event": "replicate", "key": CELL.key, "index": True, "replicate": {}}) is None


def test_a_malformed_replicate_fails_its_cell_naming_the_node():
    data = sp.encode(sp.ReplicateSent(CELL.key, 0, MEASURED))
    data["replicate"] = {**data["replicate"], "samples_s": "fast"}
    message = sp.parse(data, "node b")
    assert isinstance(message, sp.ReplicateSent) and message.key == CELL.key and message.index == 0
    assert message.replicate.status == "failed"
    assert message.replicate.reason.startswith("node b sent a malformed measurement (")
