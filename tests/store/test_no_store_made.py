"""A command that only reads a store (history, store list, compare by run id) never makes one:
a mistyped ``--store`` gets one line saying there is no store there, and no file or folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from arraybench.store import StoreError, open_store

from ..conftest import run_here


@pytest.mark.parametrize("command", [["history", "--no-plots"], ["store", "list"],
                                     ["compare", "last~1", "last"]], ids=["history", "list", "compare"])
def test_a_reading_command_at_a_mistyped_store_says_there_is_none(tmp_path: Path, command: list[str]):
    mistyped = tmp_path / "nonexistent" / "dir" / "store.sqlite"
    done = run_here(*command, "--store", str(mistyped), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"arraybench: error: no store at {mistyped}: nothing was ever stored there (a mistyped path?)"]
    assert not (tmp_path / "nonexistent").exists()


def test_the_default_store_not_yet_made_is_said_so_and_a_writer_still_makes_one(tmp_path: Path):
    with pytest.raises(StoreError, match="no run has been stored yet"):
        open_store(None, create=False)  # the test's own fresh data folder holds none
    made = tmp_path / "new" / "store.sqlite"
    with open_store(made) as store:  # storing a run makes the store, as before
        assert store.runs() == []
    with open_store(made, create=False) as store:  # and reading finds it
        assert store.runs() == []
