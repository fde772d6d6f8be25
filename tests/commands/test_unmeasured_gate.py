"""A gate never passes a cell it could not measure: a library whose import breaks between two
runs leaves its cells skipped in the new run, and ``compare --fail-above`` fails, saying which; so
does a cell the new run lacks, one that cannot be compared, an interrupted new run, and in
``history --fail-above`` a series the latest run left out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arraybench.store import open_store

from ..conftest import FAST, run_here
from ..synthetic import timed_run


def test_a_library_whose_import_breaks_fails_the_gate(real_run, tmp_path: Path):
    shadow = tmp_path / "shadow" / "torch"
    shadow.mkdir(parents=True)
    # Found before the real torch by every worker: the install broke since the base run.
    (shadow / "__init__.py").write_text("raise ImportError('libtorch_cpu.so: cannot open shared object file')\n")
    new = tmp_path / "new"
    path = os.pathsep.join(p for p in (str(shadow.parent), os.environ.get("PYTHONPATH", "")) if p)
    done = run_here("run", "--backends", "numpy,torch", "--workloads", "matmul,sort", "--sizes", "small",
                    *FAST, "--no-plots", "--no-store", "-o", str(new), cwd=tmp_path,
                    env={"PYTHONPATH": path})
    assert done.returncode == 0, done.stderr  # a run is not a gate: skipped cells are said, not failed
    plain = run_here("compare", str(real_run.out), str(new), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    gated = run_here("compare", str(real_run.out), str(new), "--fail-above", "10%", cwd=tmp_path)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    line = next(x for x in gated.stderr.splitlines() if "not measured in the new run" in x)
    assert line.startswith("arraybench: 2 cells measured in the base run were not measured")
    assert "matmul small PyTorch CPU" in line and "libtorch_cpu.so" in line
    assert "--fail-above passes nothing unseen" in line


def _saved(res, folder: Path) -> str:
    folder.mkdir(parents=True)
    res.save(folder / "results.json")
    return str(folder)


def _without_torch(res):
    """The run chose PyTorch (its settings, as a real run's), and its PyTorch cell is gone."""
    res.records = [r for r in res.records if r.backend != "torch"]
    res.settings = {**res.settings, "backends": ["numpy", "torch"], "devices": ["cpu"], "modes": ["latency"]}
    return res


@pytest.mark.parametrize("complete", [True, False])
def test_a_cell_missing_from_the_new_run_fails_the_gate(tmp_path: Path, complete: bool):
    base = _saved(timed_run(1), tmp_path / "base")
    new = _saved(_without_torch(timed_run(2, complete=complete)), tmp_path / "new")
    gated = run_here("compare", base, new, "--fail-above", "10%", cwd=tmp_path)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    line = next(x for x in gated.stderr.splitlines() if "missing from the new run" in x)
    assert "1 cell measured in the base run is missing from the new run: matmul small PyTorch CPU" in line
    assert ("the new run is incomplete" in gated.stderr) is (not complete)
    as_json = run_here("compare", base, new, "--fail-above", "10%", "--json", cwd=tmp_path)
    assert as_json.returncode == 1 and "missing from the new run" in as_json.stdout


def test_an_interrupted_new_run_fails_the_gate_even_with_every_cell(tmp_path: Path):
    base = _saved(timed_run(1), tmp_path / "base")
    new = _saved(timed_run(2, complete=False), tmp_path / "new")
    gated = run_here("compare", base, new, "--fail-above", "10%", cwd=tmp_path)
    assert gated.returncode == 1
    assert gated.stderr.startswith("arraybench: the new run is incomplete")


def test_an_ok_cell_that_cannot_be_compared_fails_the_gate(tmp_path: Path):
    base = _saved(timed_run(1), tmp_path / "base")
    new = timed_run(2)
    new.records[1].size = 1000  # "small" means another size on the new side: not comparable
    new = _saved(new, tmp_path / "new")
    assert run_here("compare", base, new, cwd=tmp_path).returncode == 0
    gated = run_here("compare", base, new, "--fail-above", "10%", cwd=tmp_path)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert gated.stderr.startswith("arraybench: 1 cell measured in the base run could not be compared: "
                                   "matmul small PyTorch CPU (sizes differ")


def test_history_gate_fails_a_series_missing_from_the_latest_run(tmp_path: Path):
    store = str(tmp_path / "s.sqlite")
    with open_store(store) as s:
        s.add(timed_run(1))
        s.add(timed_run(2))
    args = ("history", "--store", store, "--no-plots", "--fail-above", "10%")
    assert run_here(*args, cwd=tmp_path).returncode == 0
    with open_store(store) as s:
        s.add(_without_torch(timed_run(3)))
    gated = run_here(*args, cwd=tmp_path)
    assert gated.returncode == 1
    assert gated.stderr.startswith("arraybench: 1 series measured in the run before the latest was not "
                                   "measured in the latest run: matmul small PyTorch CPU")
    with open_store(store) as s:
        s.add(timed_run(4))
        s.add(timed_run(5, complete=False))  # history leaves it out: the gate must not judge day 4
    gated = run_here(*args, cwd=tmp_path)
    assert gated.returncode == 1
    assert "was interrupted before every cell was measured" in gated.stderr


def test_run_compare_gate_judges_what_the_run_chose_and_lists_the_rest(tmp_path: Path):
    run = ("run", "--devices", "cpu", "--sizes", "small", *FAST, "--no-plots",
           "--store", str(tmp_path / "store.sqlite"))
    first = run_here(*run, "--backends", "numpy", "--workloads", "sort,matmul", "-o", str(tmp_path / "a"),
                     cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    # A narrower run (pytest's -k, --workloads sort) chose not to measure matmul: nothing unseen.
    narrower = run_here(*run, "--backends", "numpy", "--workloads", "sort", "-o", str(tmp_path / "b"),
                        "--compare", "last", "--fail-above", "1000%", cwd=tmp_path)
    assert narrower.returncode == 0, narrower.stderr
    assert "missing from the new run" not in narrower.stderr


def _busy(res, cores: float):
    from arraybench.model.replicate import Usage

    for rep in (rep for r in res.records for rep in r.replicates):  # what each process counted
        rep.usage = Usage(calls=40, wall_s=0.04, user_s=0.04, machine_busy_s=0.04 * (1 + cores),
                          machine_total_s=0.08, machine_cpus=2).derive()
    return res


def test_a_slowdown_measured_while_others_loaded_the_machine_is_undecided_not_failed(tmp_path: Path):
    """README's gate failed unchanged code as 1.52x slower under a bursty tenant: a stored baseline
    is another moment of the machine. Where either side was measured busy, the gate says it
    cannot decide and how to (side by side, --against); measured quiet, it fails as before."""
    base = _saved(timed_run(1), tmp_path / "base")
    loaded = _saved(_busy(timed_run(2, numpy_s=1.5e-3, torch_s=3e-3), cores=1.2), tmp_path / "loaded")
    said = run_here("compare", base, loaded, "--fail-above", "10%", cwd=tmp_path)
    assert said.returncode == 0, said.stderr
    assert ("cannot decide whether matmul small NumPy CPU is slower (1.500): other processes used 1.2 of 2 "
            "cores while one of the two runs measured it, which can make a time up to 2.0× slower") in said.stderr
    assert "(--against REF) to decide it" in said.stderr
    # A slowdown beyond what the load can make fails, busy or not (a planted 20x regression).
    worse = _saved(_busy(timed_run(2, numpy_s=3e-3, torch_s=6e-3), cores=1.2), tmp_path / "worse")
    assert run_here("compare", base, worse, "--fail-above", "10%", cwd=tmp_path).returncode == 1
    quiet = _saved(_busy(timed_run(2, numpy_s=1.5e-3, torch_s=3e-3), cores=0.1), tmp_path / "quiet")
    failed = run_here("compare", base, quiet, "--fail-above", "10%", cwd=tmp_path)
    assert failed.returncode == 1 and "significant slowdowns above 10%" in failed.stderr


def test_cells_that_all_moved_together_are_the_machines_drift_not_a_slowdown():
    from arraybench.analysis.compare import compare
    from arraybench.analysis.gate import judge_gate
    from arraybench.render.comparison import gate_failures

    from ..synthetic import record, results, spread

    def run(day: int, factor: float, sort_factor: float = 1.0):
        recs = [record(w, "numpy", samples=spread(t * factor * (sort_factor if w == "sort" else 1.0)),
                       replicates=3) for w, t in (("matmul", 1e-3), ("sort", 2e-3), ("fft", 3e-3), ("add", 4e-3))]
        return results(recs, timestamp=f"2026-01-0{day}T00:00:00+00:00")

    drifted = compare(run(1, 1.0), run(2, 1.4))
    moved = judge_gate(drifted, 0.1)
    assert not gate_failures(drifted, 0.1) and len(moved.undecided) == 4 and not moved.slower
    assert moved.undecided[0].cells == 4 and abs(moved.undecided[0].drift - 1.4) < 0.01
    # One cell slower beyond the rest: the code's, whatever the machine did.
    slower = compare(run(1, 1.0), run(2, 1.0, sort_factor=1.5))
    one = judge_gate(slower, 0.1)
    assert gate_failures(slower, 0.1) and [c.new.workload for c in one.slower] == ["sort"]
