"""A run that checks itself: the first configuration measured against its twin (A/A)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import arraybench
from arraybench.analysis.pairs import SelfCheck
from arraybench.model.cell import Cell
from arraybench.model.results import Pair
from arraybench.model.results import Results
from arraybench.render.findings import self_check_lines

from ..conftest import run_here


def test_a_self_checked_run_measures_a_twin_beside_it_and_says_what_the_pairs_found(tmp_path: Path):
    out = tmp_path / "run"
    done = run_here("run", "--backends", "numpy", "--workloads", "sort,elementwise", "--sizes", "small",
                    "--processes", "2", "--max-time", "0.05", "--min-samples", "3", "--self-check",
                    "--no-plots", "-q", "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    results = arraybench.load_results(out)
    # The twin is kept apart: no table, finding or gate reads it as a configuration of the run.
    assert {r.environment for r in results.records} == {""}
    assert {r.environment for r in results.twins} == {"twin"} and len(results.twins) == 2
    assert all("twin" not in (p.a.environment, p.b.environment) for p in results.pairs)
    # One A/A pair a case, each measured as the run's own pairs are: as many processes a side.
    assert sorted(p.case for p in results.self_check) == sorted({p.case for p in results.self_check})
    assert len(results.self_check) == 2
    originals = {r.cell.workload: r for r in results.records}
    for twin in results.twins:
        assert twin.n_replicates == originals[twin.workload].n_replicates == 2
    first = results.findings()[0]
    assert first.startswith("Self-check: NumPy CPU against itself in 2 cases: ")
    assert "[twin]" not in results.table()
    saved = json.loads((out / "results.json").read_text())
    assert len(saved["self_check"]["pairs"]) == 2 and len(saved["self_check"]["records"]) == 2
    assert first in (out / "findings.md").read_text() and first.split(":")[0] in (out / "report.html").read_text()


def _pair(ratio: float, low: float, high: float, verdict: str) -> Pair:
    original = Cell("sort", "small", 100, "numpy", "cpu", "float64", "latency")
    return Pair(replace(original, environment="twin"), original, "NumPy CPU [twin]", "NumPy CPU",
                ratio, low, high, verdict, 3, 30, "t over 3 processes")  # type: ignore[arg-type]


def test_a_false_a_a_verdict_marks_the_run_unreliable_and_says_by_how_much():
    calm = SelfCheck((_pair(1.01, 0.98, 1.03, "level"), _pair(0.97, 0.8, 1.2, "undecided")))
    assert calm.pairs and calm.level == 1 and not calm.false
    moved = SelfCheck((_pair(1.01, 0.98, 1.03, "level"), _pair(1.3, 1.1, 1.5, "slower")))
    assert moved.false and moved.worst == 1.3
    results = Results(environment={}, settings={}, records=[], self_check=list(moved.pairs))
    [line] = self_check_lines(results)
    assert "1 level, 0 undecided, 1 called faster or slower" in line
    assert "(up to 1.30×). This run's verdicts are unreliable" in line
    assert self_check_lines(Results(environment={}, settings={}, records=[])) == []
