"""Naming a stored run by its id: a whole id names its run even where it is another's prefix, and
case counts (an imported run whose id differs only in case must not make the real one unnameable)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from arraybench.store import open_store
from arraybench.store import StoreError
from arraybench.store.refs import run_id_of, stored_results

from ..synthetic import timed_run


def _with_id(day: int, rid: str):
    run = timed_run(day)
    return replace(run, environment={**run.environment, "run_id": rid})


def test_exact_ids_and_case_name_one_run_each(tmp_path: Path):
    real, imported, longer = "abcd1234abcd1234", "ABCD1234abcd1234", "abcd1234abcd1234ff"
    with open_store(tmp_path / "store.sqlite") as store:
        for day, rid in ((1, real), (2, imported), (3, longer)):
            store.add(_with_id(day, rid))
        assert run_id_of(store, real) == real  # whole, though a prefix of `longer`
        assert stored_results(store, real).environment["run_id"] == real
        assert store.results(imported).environment["run_id"] == imported
        assert store.results(real).environment["run_id"] == real
        assert run_id_of(store, "abcd1234abcd1234f") == longer
        with pytest.raises(StoreError, match="holds 2 runs"):
            run_id_of(store, "abcd1234")  # the lower-case two; never the imported one
