"""``arraybench timeit``: one expression run as the workload a file would define, and bad input
refused in one line before any worker starts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import arraybench
from arraybench.workloads.expression import expression_workload
from arraybench.workloads.definition import define
from arraybench.workloads.inputs import make_inputs

from ..conftest import run_here

#: The same workload as ``timeit 'xp.sort(a)' --setup 'a = randn(n)' --sizes 20000 --name sort_a``.
WORKLOAD_FILE = '''
import arraybench


@arraybench.workload(sizes=[20_000], inputs=lambda n, rng: {"a": rng.standard_normal(n)})
def sort_a(xp, a):
    return xp.sort(a)
'''
#: Short, and side by side as every run: two processes give pairs a verdict where they can.
SETTINGS = ("--backends", "numpy,torch", "--devices", "cpu", "--processes", "2", "--max-time", "0.1",
            "-q", "--no-store")


def _outcome(folder: Path) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """A run's cells with their status, and its pairs with their verdict."""
    results = arraybench.load_results(folder)
    return {r.key: r.status for r in results.records}, {(p.a, p.b): p.verdict for p in results.pairs}


@pytest.mark.slow
def test_timeit_gives_the_cells_checks_and_verdicts_of_a_workload_file(tmp_path: Path):
    pytest.importorskip("torch")
    (tmp_path / "sort_file.py").write_text(WORKLOAD_FILE)
    from_file = run_here("run", "--workload-file", str(tmp_path / "sort_file.py"), *SETTINGS,
                         "-o", str(tmp_path / "file"), cwd=tmp_path)
    assert from_file.returncode == 0, from_file.stderr
    timed = run_here("timeit", "xp.sort(a)", "--setup", "a = randn(n)", "--sizes", "20000",
                     "--name", "sort_a", *SETTINGS, "-o", str(tmp_path / "timeit"), cwd=tmp_path)
    assert timed.returncode == 0, timed.stderr
    cells, pairs = _outcome(tmp_path / "timeit")
    file_cells, file_pairs = _outcome(tmp_path / "file")
    # The same cells, each checked against the NumPy float64 reference and found right.
    assert cells == file_cells and set(cells.values()) == {"ok"} and len(cells) == 2
    # The same pair, judged from the same kind of turns: the two verdicts never contradict.
    assert set(pairs) == set(file_pairs) and len(pairs) == 1
    for key, verdict in pairs.items():
        assert {verdict, file_pairs[key]} != {"faster", "slower"}, (verdict, file_pairs[key])
    # The same report.
    assert (tmp_path / "timeit" / "report.html").is_file() and (tmp_path / "file" / "report.html").is_file()


def test_timeit_prints_the_table_and_writes_no_folder_unless_told(tmp_path: Path):
    done = run_here("timeit", "xp.sort(a)", "-s", "a = randn(n)", "-n", "1000", "--backends", "numpy",
                    "--devices", "cpu", "--processes", "1", "--max-time", "0.05", "--no-store", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "sort-a" in done.stdout and "NumPy CPU" in done.stdout
    assert done.stdout.rstrip().endswith("as run does") and list(tmp_path.iterdir()) == []


def test_the_expression_gets_the_inputs_a_workload_file_gets(registry_restored):
    timed = expression_workload("xp.matmul(a, b) + c", "a = randn(n, 3); b = rand(3, n); c = arange(n)",
                                    sizes=[7], name="mm")
    written = define(name="mm", sizes=[7], inputs=lambda n, rng: (
        rng.standard_normal((n, 3)), rng.random((3, n)), np.arange(n, dtype=float)))(lambda xp, a, b, c: 0)
    for ours, theirs in zip(make_inputs(timed, 7, "float32", seed=3).arrays,
                            make_inputs(written, 7, "float32", seed=3).arrays, strict=True):
        assert ours.dtype == np.float32 and np.array_equal(ours, theirs)
    assert timed.fn(np, *make_inputs(timed, 7, "float64").arrays).shape == (7, 7)


def test_a_setup_that_does_not_read_n_has_its_largest_inputs_size(registry_restored):
    wl = expression_workload("a @ b", "a = randn(30, 20)\nb = randn(20)")
    assert wl.sizes == {"600": 600}
    assert expression_workload("xp.sort(a)", "a = randn(n)").sizes == {"small": 1_000, "large": 1_000_000}
    assert expression_workload("xp.sort(a)", "a = randn(n)", sizes="1e3,16:64").sizes == \
        {"1000": 1000, "16": 16, "32": 32, "64": 64}


def test_numbers_the_setup_binds_are_settings_of_each_size(registry_restored):
    wl = expression_workload("xp.roll(a, k)", "a = randn(n); k = n // 2", sizes=[10, 20])
    assert wl.params_for(10) == {"k": 5} and wl.params_for(20) == {"k": 10}
    (a,) = make_inputs(wl, 10, "float64").arrays  # k is no input
    assert a.shape == (10,)
    assert expression_workload("a * k", "a = randn(n); k = 2.5", sizes=[10]).params_for(10) == {"k": 2.5}


BAD = [
    (["xp.sort(a"], "the expression is not valid Python: '(' was never closed"),
    ([""], "the expression is empty"),
    (["xp.sort(a)", "--setup", "a = = randn(n)"], "--setup is not valid Python"),
    (["xp.sort(b)", "--setup", "a = randn(n)"], "unknown name 'b' in the expression"),
    (["np.sort(a)", "--setup", "a = randn(n)"], "write xp, each library's namespace"),
    (["xp.sort(a)"], "unknown name 'a' in the expression: it reads xp and what --setup binds (nothing)"),
    (["xp.sort(a)", "--setup", "a = randn(n) * scale"], "--setup failed at n = 1000: NameError: name 'scale'"),
    (["xp.sort(a)", "-s", "a = randn(n)\nb = 1 / 0"], "ZeroDivisionError: division by zero (line 2: b = 1 / 0)"),
    (["xp.sum(a)", "--setup", "a = [1.0, 2.0]"], "binds a to a list: the expression's names must be NumPy arrays"),
    (["xp.sort(a)", "--setup", "a = randn(100)", "--sizes", "10"], "--sizes gives n, which --setup does not read"),
    (["xp.sort(a)", "--setup", "a = randn(n)", "-n", "0"], "size 0 must be positive"),
    (["xp.sort(a)", "--setup", "a = randn(n)", "--name", "sort"], "a built-in workload has that name"),
    (["xp.sort(a)", "--setup", "a = randn(n)", "--workloads", "matmul"], "--workloads does not go with it"),
    (["xp.sort(a)", "--setup", "a = randn(n)", "--resume", "x"], "arraybench run --resume DIR"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[m for _, m in BAD])
def test_bad_input_gets_one_line_and_status_2(args, message, tmp_path: Path):
    result = run_here("timeit", *args, "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("arraybench: error: ") and message in line, line
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "out").exists()  # refused before a folder or a worker
