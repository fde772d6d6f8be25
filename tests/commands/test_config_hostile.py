"""Hostile configuration and locations: ``ARRAYBENCH_CONFIG`` naming a named
pipe, a device or a huge file; a ``--store`` that is a symlink loop; ``--since`` beyond the
calendar. Each is one line and a non-zero exit (or a plain success), never a hang or a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arraybench import config
from arraybench.commands.main import build_parser
from arraybench.commands.compare import parse_since
from arraybench.errors import UsageError

from ..conftest import run_cli, run_here


def _one_error_line(done) -> str:
    assert done.returncode == 2, (done.stdout[-1000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr[-2000:]
    return done.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_project_file_that_is_not_a_regular_file_is_refused_at_once(kind, tmp_path: Path):
    if kind == "fifo":
        target = tmp_path / "pyproject.toml"
        os.mkfifo(target)  # nobody ever writes it: opening it for reading used to block for ever
    else:
        target = Path(kind)  # reading it used to go on until the memory ran out
        if not target.exists():
            pytest.skip("no /dev/zero here")
    done = run_cli("list", env={"ARRAYBENCH_CONFIG": str(target)}, cwd=tmp_path, timeout=60)
    assert "is not a regular file" in _one_error_line(done)


def test_a_huge_project_file_is_refused_without_reading_it(tmp_path: Path):
    huge = tmp_path / "pyproject.toml"
    with open(huge, "wb") as f:
        f.truncate(config.MAX_BYTES + 1)  # sparse: no disk used
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    with pytest.raises(UsageError, match="larger than"):
        config.load(run_parser, huge)


def test_a_store_that_is_a_symlink_loop_is_one_line(tmp_path: Path):
    (tmp_path / "a.sqlite").symlink_to(tmp_path / "b.sqlite")
    (tmp_path / "b.sqlite").symlink_to(tmp_path / "a.sqlite")
    (tmp_path / "run").mkdir()
    for command in (["history", "--no-plots"], ["store", "list"], ["store", "import", str(tmp_path / "run")]):
        done = run_here(*command, "--store", str(tmp_path / "a.sqlite"), cwd=tmp_path)
        assert "a.sqlite" in _one_error_line(done)


def test_since_beyond_the_calendar_means_every_run():
    assert parse_since("99999999999d") is None
    assert parse_since("9" * 5000 + "h") is None  # more digits than Python reads as an int
    assert parse_since("2d") < parse_since("1d")
