"""What a run writes it can read back: a setting the journal and results.json
could not hold so that ``report`` and ``--resume`` read them (a seed of 2**63, 10**400, a uint64
default, nan, inf) is refused in one line before the output folder is touched; a header that
cannot be written never truncates a finished run's journal. The writer's rule is the reader's."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import arraybench
from arraybench import api
from arraybench.errors import SaveError, UsageError
from arraybench.model.journal import JOURNAL_NAME, Journal, read
from arraybench.model.schema import NotPlainJson, dumps, loads, problem

from .conftest import FAST, ROOT, run_here

NAN_DEFAULT = """
import arraybench

@arraybench.workload(sizes={"small": 8})
def readback_nan(xp, a, *, alpha=float("nan")):
    return a * alpha
"""


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("readback")
    out = root / "run"
    done = run_here("run", "--workloads", "sort", "--sizes", "16", "--backends", "numpy",
                    "--devices", "cpu", *FAST, "--no-plots", "--no-store", "-o", str(out), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63) + 1, 2**63, -(2**63), 2**64 - 1, 10**400,
                                   1e308, math.nan, math.inf, -math.inf, [[[0]]], "x" * 10])
def test_the_writer_refuses_exactly_what_the_reader_refuses(value):
    readable = True
    try:
        loads(json.dumps({"v": value}))
    except (NotPlainJson, ValueError):
        readable = False
    assert (problem({"v": value}) is None) == readable
    if readable:
        assert loads(dumps({"v": value})) == {"v": value}
    else:
        with pytest.raises(NotPlainJson, match="^v is "):
            dumps({"v": value})


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("arraybench: error: "), stderr
    return lines[0]


def test_settings_a_run_could_not_read_back_are_refused_before_the_folder_is_touched(finished, tmp_path):
    journal = (finished / JOURNAL_NAME).read_bytes()
    seed = run_here("run", "--workloads", "sort", "--backends", "numpy", "--seed", str(2**63),
                    "-o", str(finished), "--no-store", cwd=tmp_path)
    assert seed.returncode == 2
    assert "--seed is 9223372036854775808, beyond the 64-bit" in _one_error_line(seed.stderr)
    wl = tmp_path / "nan.py"
    wl.write_text(NAN_DEFAULT)
    nan = run_here("run", "--workload-file", str(wl), "--backends", "numpy", "-o", str(finished),
                   "--no-store", cwd=tmp_path)
    assert nan.returncode == 2
    assert "workload readback_nan's setting alpha is nan" in _one_error_line(nan.stderr)
    assert (finished / JOURNAL_NAME).read_bytes() == journal  # the finished run, whole
    assert not (tmp_path / "fresh").exists()


def test_through_the_api_too(registry_restored):
    @arraybench.workload(sizes={"small": 8})
    def readback_uint(xp, a, *, k=np.uint64(2**64 - 1)):
        return a

    @arraybench.workload(sizes={"small": 8})
    def readback_big(xp, a, *, k=None):  # untyped: a setting keeps the value it is given
        return a

    opts = api.options_from(readback_uint, backends="numpy")
    with pytest.raises(UsageError, match="readback_uint's setting k is 18446744073709551615"):
        api.plan(opts)
    with pytest.raises(UsageError, match="--params k is a number of 401 digits"):
        api.plan(api.options_from(readback_big, backends="numpy", params={"k": 10**400}))
    with pytest.raises(UsageError, match="--params readback_big.k is inf"):
        api.plan(api.options_from(readback_big, backends="numpy", params={"readback_big.k": math.inf}))


def test_a_header_that_cannot_be_written_leaves_the_journal_whole(finished, tmp_path):
    """Whatever gets past the checks: the new journal is written beside the old and renamed."""
    state = read(finished)
    before = (finished / JOURNAL_NAME).read_bytes()
    with pytest.raises(SaveError, match="environment.bad is nan"):
        Journal.create(finished, state.options, state.cells, {**state.environment, "bad": math.nan})
    assert (finished / JOURNAL_NAME).read_bytes() == before
    assert [p.name for p in finished.iterdir() if p.name.endswith(".tmp")] == []
