"""Runs started within one second keep their order: ``last`` is the one that started last."""

from __future__ import annotations

from arraybench.host import machine
from arraybench.model.runs import run_id
from arraybench.store.refs import run_id_of
from arraybench.store.store import open_store

from ..synthetic import timed_run


def test_two_runs_in_one_second_are_ordered_by_when_they_started(tmp_path):
    first, second = timed_run(1), timed_run(1, torch_s=3e-3)
    first.environment["timestamp"] = "2026-01-01T00:00:00.900000+00:00"
    second.environment["timestamp"] = "2026-01-01T00:00:00.950000+00:00"
    with open_store(tmp_path / "runs.sqlite") as store:
        # Stored in the order whose run ids would sort the other way round, if they do.
        for res in sorted((first, second), key=run_id, reverse=True):
            store.add(res)
        assert [r.run_id for r in store.runs()] == [run_id(first), run_id(second)]
        assert run_id_of(store, "last") == run_id(second) and run_id_of(store, "last~1") == run_id(first)


def test_a_run_records_when_it_started_to_the_microsecond():
    stamp = machine.collect(None)["timestamp"]
    assert len(stamp.split("T")[1].split("+")[0].split(".")[1]) == 6, stamp
