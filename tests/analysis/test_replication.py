"""How many processes a cell gets: the rule on known replicates, --processes as typed, and real
adaptive runs (a cell whose processes disagree for life gets more; a steady one stops at the
least), resumed with replicate indices beyond the initial count."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import arraybench
from arraybench.analysis.policy import (BUDGET, CONVERGED, ENDED, FIXED, MOST, Policy, decide,
                                        policy_for, timer_settings)
from arraybench.model.replicate import Replicate
from arraybench.model.options import RunOptions

from ..conftest import ROOT, run_here
from ..synthetic import spread

DATA = Path(__file__).resolve().parents[1] / "data"


def _rep(median: float, n: int = 20, number: int = 1) -> Replicate:
    return Replicate(samples_s=spread(median, n=n, width=0.01), number=number, max_rel_error=0.0,
                     tolerance=1e-14)


ADAPTIVE = Policy(least=3, most=6, rel_ci=0.02, budget_s=1.0)


def test_fewer_than_the_least_always_want_the_least():
    assert decide([], ADAPTIVE).wanted == 3 and decide([_rep(1e-3)], ADAPTIVE).stop == ""


def test_processes_that_agree_stop_at_the_least():
    d = decide([_rep(1e-3), _rep(1.001e-3), _rep(0.999e-3)], ADAPTIVE)
    assert (d.wanted, d.stop) == (3, CONVERGED)


def test_processes_that_disagree_want_one_more_until_the_most():
    reps = [_rep(1e-3), _rep(1.2e-3), _rep(0.9e-3)]
    assert decide(reps, ADAPTIVE) .wanted == 4
    six = reps + [_rep(1.1e-3), _rep(0.95e-3), _rep(1.15e-3)]
    assert decide(six, ADAPTIVE).wanted == 6 and decide(six, ADAPTIVE).stop == MOST


def test_the_budget_stops_a_slow_cell_before_the_most():
    # Each process sampled 20 x 20 ms = 0.4 s: a fourth would take the cell past its 1 s.
    reps = [_rep(20e-3), _rep(24e-3), _rep(18e-3)]
    d = decide(reps, ADAPTIVE)
    assert (d.wanted, d.stop) == (3, BUDGET)


def test_an_added_process_pays_its_whole_cost_from_the_budget():
    # A jitted gradient: 20 samples of 5 ms each (0.1 s), after a 1.3 s compilation.
    def compiled(median: float) -> Replicate:
        rep = _rep(median, n=20)
        rep.elapsed_s = 1.4
        return rep

    cheap = [_rep(5e-3), _rep(6e-3), _rep(4.5e-3)]
    for r in cheap:
        r.elapsed_s = 0.15
    assert decide(cheap, ADAPTIVE).wanted == 4  # 0.3 s sampled + 0.15 s for the next: fits
    assert decide([compiled(5e-3), compiled(6e-3), compiled(4.5e-3)], ADAPTIVE).stop == BUDGET


def test_a_fixed_count_and_a_failed_process_add_nothing():
    fixed = Policy(least=3, most=3, rel_ci=0.02, budget_s=1.0)
    assert decide([_rep(1e-3), _rep(2e-3), _rep(3e-3)], fixed).stop == FIXED
    failed = [_rep(1e-3), Replicate.ended("failed", "worker crashed"), _rep(2e-3)]
    assert decide(failed, ADAPTIVE) == decide(failed, ADAPTIVE) and decide(failed, ADAPTIVE).stop == ENDED


def test_options_give_the_policy_and_each_process_its_share():
    default = RunOptions()
    assert default.adaptive and default.processes_text == "3:6"
    assert policy_for(default) == Policy(3, 6, 0.02, 1.0)
    each = timer_settings(default)
    assert (each.budget_s, each.min_samples) == (1.0 / 6, 3)  # the budget over the most processes
    fixed = RunOptions(processes=3, max_processes=None)
    assert not fixed.adaptive and fixed.processes_text == "3"
    each = timer_settings(fixed)
    assert (each.budget_s, each.min_samples) == (1.0 / 3, 4)  # as before adaptive replication
    # A journal written before adaptive replication resumes with its fixed count; one written
    # before the options were named as --processes is, reads back under the new names.
    old = {k: v for k, v in RunOptions(processes=5).to_dict().items() if k != "max_processes"}
    assert not RunOptions.from_dict(old).adaptive
    renamed = {("replicates" if k == "processes" else k): v for k, v in old.items()}
    assert RunOptions.from_dict(renamed).processes == 5 and not RunOptions.from_dict(renamed).adaptive
    legacy = {**renamed, "max_replicates": 8}
    assert RunOptions.from_dict(legacy).processes_text == "5:8"
    # One saved while a run could measure one worker after another reads back: every run takes turns.
    assert RunOptions.from_dict({**old, "side_by_side": False}) == RunOptions.from_dict(old)
    assert "side_by_side" not in RunOptions().to_dict()


def test_the_api_treats_processes_alone_as_a_fixed_count():
    from arraybench.api import options_from

    assert options_from(processes=1).max_processes is None
    assert options_from(processes=4, max_processes=8).processes_text == "4:8"
    assert options_from().processes_text == "3:6"


def test_the_api_still_takes_the_old_name_replicates_with_a_deprecation_warning():
    from arraybench.api import options_from

    with pytest.warns(DeprecationWarning, match="replicates= is now called processes="):
        assert options_from(replicates=1).processes == 1
    # Both old names, each warned of: the outer one catches what the inner one does not match.
    with pytest.warns(DeprecationWarning, match="replicates= is now called processes="), \
            pytest.warns(DeprecationWarning, match="max_replicates= is now called max_processes="):
        assert options_from(replicates=4, max_replicates=8).processes_text == "4:8"


@pytest.mark.parametrize("value, message", [
    ("1:5", "MIN must be at least 2"),
    ("5:3", "MAX must be at least MIN"),
    ("0", "must be at least 1"),
    ("lots", "not a whole number"),
    ("3:2000", "--processes must be at most 1000, not 2000"),
])
def test_bad_processes_get_one_line_and_status_2(value, message, tmp_path: Path):
    result = run_here("run", "--processes", value, "--backends", "numpy", "-o", str(tmp_path / "o"),
                      cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def adaptive_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("adaptive")
    shutil.copy(DATA / "usage_workloads.py", folder / "usage_workloads.py")
    out = folder / "run"
    result = run_here("run", "--workload-file", str(folder / "usage_workloads.py"),
                      "--workloads", "process_effect,sleeps", "--backends", "numpy",
                      "--processes", "3:6", "--rel-ci", "0.5", "--max-time", "5", "--min-samples", "3",
                      "--no-plots", "-q", "-o", str(out), cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    return out


def test_a_cell_whose_processes_disagree_gets_more_and_a_steady_one_stops(adaptive_run):
    results = arraybench.load_results(adaptive_run)
    by = {r.workload: r for r in results.records}
    wide, steady = by["process_effect"], by["sleeps"]
    # 4 ms and 20 ms in turns: the interval over processes never reaches +-50%, so the cell takes
    # processes to the most allowed; sleeping 4 ms is steadier, and stops with fewer. (How many
    # fewer moves with the machine's load: on a loaded machine a sleep is not steady either.)
    assert wide.n_replicates == 6 and wide.replication_stop == MOST
    assert (wide.ci_high_s - wide.ci_low_s) / (2 * wide.median_s) > 0.5
    assert any("no more processes because it reached the most processes allowed" in w for w in wide.warnings)
    assert 3 <= steady.n_replicates < wide.n_replicates and steady.replication_stop != MOST
    assert results.settings["max_processes"] == 6 and results.settings["processes"] == 3
    # The headline is a per-call time between the two modes.
    assert 4e-3 < wide.median_s < 20e-3


def test_resume_measures_the_processes_beyond_the_initial_count(adaptive_run, tmp_path: Path):
    copy = tmp_path / "run"
    shutil.copytree(adaptive_run, copy)
    journal = copy / "journal.jsonl"
    lines = journal.read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    before = {r.workload: r.n_replicates for r in arraybench.load_results(adaptive_run).records}
    cut = [i for i, e in enumerate(entries)
           if e.get("type") == "replicate" and e["key"].startswith("process_effect") and e["index"] >= 3]
    assert len(cut) == 3  # indices 3 to 5: beyond the 3 processes every cell starts with
    journal.write_text("".join(line + "\n" for i, line in enumerate(lines) if i not in cut))
    # Named: the module's run was sealed under another data folder, so it is not this test's own.
    result = run_here("run", "--resume", str(copy), "--workload-file",
                      str(adaptive_run.parent / "usage_workloads.py"), "-q", "--no-plots", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    resumed = {r.workload: r for r in arraybench.load_results(copy).records}
    assert resumed["process_effect"].n_replicates == 6 and resumed["sleeps"].n_replicates == before["sleeps"]
    indices = sorted(json.loads(line)["index"] for line in journal.read_text().splitlines()
                     if '"replicate"' in line and "process_effect" in line)
    assert indices == [0, 1, 2, 3, 4, 5]
    # And a complete adaptive run has nothing left to resume.
    again = run_here("run", "--resume", str(copy), "-q", "--no-plots", cwd=tmp_path)
    assert again.returncode == 0 and "nothing to resume" in again.stderr


def test_a_results_file_saved_under_the_old_option_names_reads_back_under_the_new(tmp_path):
    import json

    from arraybench import load_results

    # The docs' example run, its settings written as before the options were renamed.
    data = json.loads((ROOT / "docs" / "example-cpu" / "results.json").read_text())
    data["settings"] = {{"processes": "replicates", "max_processes": "max_replicates"}.get(k, k): v
                        for k, v in data["settings"].items()}
    saved = tmp_path / "results.json"
    saved.write_text(json.dumps(data))
    assert '"replicates": 3' in saved.read_text()
    settings = load_results(saved).settings
    assert settings["processes"] == 3 and settings["max_processes"] == 6
    assert "replicates" not in settings and "max_replicates" not in settings
