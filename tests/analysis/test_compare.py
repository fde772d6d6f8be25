"""compare: verdicts from known samples, the geometric mean, one-sided cells, the CI gate, the
test and correction (Welch on the processes' log medians, Benjamini–Hochberg) on synthetic runs,
and "cannot tell", never faster or slower, where a single process measured a side."""

from __future__ import annotations

import math
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from arraybench.analysis.compare import (CANNOT_TELL, FASTER, NOT_COMPARABLE, NOT_SIGNIFICANT, SAME, SLOWER,
                                       compare, compare_records)
from arraybench.analysis.compare import q_values as benjamini_hochberg, welch
from arraybench.model.replicate import Replicate
from arraybench.model.cell import Cell

from ..conftest import run_here
from ..synthetic import record, results, spread


def test_a_clear_slowdown_is_slower_and_a_clear_speedup_is_faster():
    slow = compare_records(record(samples=spread(1e-3), replicates=4),
                           record(samples=spread(1.2e-3), replicates=4))
    assert slow.verdict == SLOWER
    assert slow.ratio == pytest.approx(1.2)
    assert slow.p_value < 1e-6 and slow.ci_overlap is False and slow.significant
    fast = compare_records(record(samples=spread(1e-3), replicates=4),
                           record(samples=spread(0.5e-3), replicates=4))
    assert fast.verdict == FASTER and fast.ratio == pytest.approx(0.5)


def test_identical_samples_are_not_significant():
    same = compare_records(record(samples=spread(1e-3), replicates=4),
                           record(samples=spread(1e-3), replicates=4))
    assert same.verdict == NOT_SIGNIFICANT and same.ratio == pytest.approx(1.0) and same.p_value == 1.0


def test_a_significant_change_below_the_threshold_is_no_change():
    # 1% slower, on tight clusters: the test is sure, but 1% is under the 2% threshold.
    tiny = compare_records(record(samples=spread(1e-3, width=0.001), replicates=4),
                           record(samples=spread(1.01e-3, width=0.001), replicates=4))
    assert tiny.significant and tiny.verdict == SAME
    # The same change with a 0.5% threshold is called.
    assert compare_records(tiny.base, tiny.new, threshold=0.005).verdict == SLOWER


def _processes(*medians: float, n: int = 30, width: float = 0.01) -> list[Replicate]:
    """One replicate per median, its samples a tight cluster around it."""
    return [Replicate(samples_s=spread(m, n=n, width=width), number=1, max_rel_error=0.0,
                      tolerance=1e-14) for m in medians]


def _record_of(replicates: list[Replicate], workload: str = "matmul"):
    from arraybench.analysis.aggregate import aggregate

    return aggregate(Cell(workload, "small", 100, "numpy", "cpu", "float64", "latency"), replicates,
                     len(replicates), rel_ci=1.0)


def test_a_large_change_between_disagreeing_processes_is_not_called():
    # Each process is tight inside, but the processes disagree by 2x: 30% between the runs is
    # within what a fresh set of processes gives. The samples pooled, as compare once tested them,
    # would call it at p < 0.001.
    base = _record_of(_processes(1.0e-3, 1.6e-3, 0.7e-3))
    new = _record_of(_processes(1.3e-3, 2.1e-3, 0.9e-3))
    change = compare_records(base, new)
    assert change.ratio > 1.2
    assert scipy.stats.mannwhitneyu(base.samples_s, new.samples_s, method="asymptotic").pvalue < 1e-3
    assert change.p_value > 0.3 and not change.significant and change.verdict == NOT_SIGNIFICANT


def test_a_single_process_on_a_side_cannot_tell_and_says_so():
    base = record(samples=[1e-3, 3e-3, 0.5e-3, 2e-3, 1.5e-3])
    new = record(samples=[1.3e-3, 3.5e-3, 0.6e-3, 2.5e-3, 1.95e-3])
    change = compare_records(base, new)
    assert change.ratio > 1.2 and change.p_value is None
    assert change.ci_overlap is True and not change.significant and change.verdict == CANNOT_TELL
    assert "single process" in change.note


def test_a_single_process_is_never_faster_or_slower_even_with_its_intervals_apart():
    # One process each, tight samples: the intervals are far apart, and compare once called this
    # slower. They hold each process's own samples only; a second process may sit 2x away.
    base, new = record(samples=spread(1e-3)), record(samples=spread(2e-3))
    assert base.n_replicates == new.n_replicates == 1 and new.ci_low_s > 1.5 * base.ci_high_s
    change = compare_records(base, new)
    assert change.ci_overlap is False and not change.significant
    assert change.verdict == CANNOT_TELL and change.one_process
    # One process on one side is enough to leave the change unjudged.
    mixed = compare_records(record(samples=spread(1e-3), replicates=4), new)
    assert mixed.verdict == CANNOT_TELL and mixed.p_value is None
    # Within the threshold it is "negligible", as for every cell, whatever the processes.
    assert compare_records(base, record(samples=spread(1.01e-3))).verdict == SAME
    comparison = compare(results([base]), results([new]))
    assert comparison.counts()[CANNOT_TELL] == 1 and comparison.slowdowns_above(0.1) == []
    text = comparison.summary()
    assert "0 faster, 0 slower, 0 not significant, 1 cannot tell" in text
    assert text.endswith("1 cell measured with one process on a side: no change over 2% can be called; "
                         "measure with processes=2 or more.")  # in Python, the API's name


def test_a_ci_gate_does_not_pass_a_slowdown_it_could_not_judge(capsys):
    from arraybench.commands.compare import gate

    base, new = record(samples=spread(1e-3)), record(samples=spread(2e-3))  # one process each, 2x
    assert gate(compare(results([base]), results([new])), 0.1) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 cell slower than 10% could not be judged" in err[0]
    assert "--processes 2 or more" in err[0] and "(2.000)" in err[0]
    # Below the limit, or faster, it is nothing to gate on.
    assert gate(compare(results([base]), results([new])), 1.5) == 0
    assert gate(compare(results([new]), results([base])), 0.1) == 0


def test_single_process_noise_is_never_called_faster_or_slower():
    # 30 unchanged cells, each process off by ~5% for its whole life, 20 pairs of runs with one
    # process each: every ratio beyond 2% is "cannot tell", none faster or slower.
    rng = random.Random(3)
    cells = {f"cell{i}": 1.0 for i in range(30)}
    verdicts = [c.verdict for _ in range(20)
                for c in compare(_synthetic_run(rng, cells, processes=1),
                                 _synthetic_run(rng, cells, processes=1)).changes]
    assert set(verdicts) == {SAME, CANNOT_TELL} and verdicts.count(CANNOT_TELL) > 400


def test_welch_matches_a_hand_computation():
    # Log-scale means 0 and log(1.1), equal spreads over 4 values each: t = log(1.1) / (s sqrt(2/4))
    # on 6 degrees of freedom, just under the 5% critical value 2.447 of the tables.
    a = [math.exp(v) for v in (-0.05, 0.05, -0.05, 0.05)]
    b = [1.1 * x for x in a]
    test = welch(a, b)
    s = math.sqrt(sum(v * v for v in (-0.05, 0.05, -0.05, 0.05)) / 3)
    assert test.t == pytest.approx(math.log(1.1) / (s * math.sqrt(2 / 4)))
    assert test.df == pytest.approx(6.0)
    assert test.t < 2.447 and 0.05 < test.p_value < 0.07
    assert welch([1.0], [2.0, 2.1]) is None  # one process cannot show the variation between them


def test_welch_is_scipys_welch_on_the_log_medians():
    base = [1.0e-3, 1.04e-3, 0.97e-3, 1.01e-3]
    new = [1.08e-3, 1.15e-3, 1.02e-3]
    expected = scipy.stats.ttest_ind(np.log(new), np.log(base), equal_var=False)
    test = welch(base, new)
    assert test.t == pytest.approx(float(expected.statistic), rel=1e-12)
    assert test.p_value == pytest.approx(float(expected.pvalue), rel=1e-9)
    assert test.df == pytest.approx(float(expected.df), rel=1e-9)


def test_benjamini_hochberg_by_hand():
    # p sorted: 0.001 0.008 0.039 0.041 0.042 0.06 0.074 0.205; m = 8.
    p = [0.041, 0.001, 0.205, 0.039, 0.008, 0.074, 0.042, 0.06]
    q = benjamini_hochberg(p)
    assert q[1] == pytest.approx(0.008) and q[4] == pytest.approx(0.032)
    # 0.039*8/3 = 0.104 but 0.042*8/5 = 0.0672 is smaller further up: the running minimum wins.
    assert q[3] == pytest.approx(0.0672) and q[0] == pytest.approx(0.0672) and q[6] == pytest.approx(0.0672)
    assert q[2] == pytest.approx(0.205)
    assert all(qi >= pi for qi, pi in zip(q, p))


def test_benjamini_hochberg_is_scipys():
    from scipy.stats import false_discovery_control

    rng = random.Random(7)
    for m in (1, 2, 5, 40):
        p = [rng.random() ** 3 for _ in range(m)] + [0.5, 0.5]  # ties too
        assert benjamini_hochberg(p) == pytest.approx(list(false_discovery_control(p, method="bh")), rel=1e-12)


def _synthetic_run(rng: random.Random, effects: dict[str, float], processes: int = 4,
                   process_sd: float = 0.05):
    """Results of ``len(effects)`` cells, each process slower or faster for its whole life."""
    recs = []
    for name, effect in effects.items():
        medians = [1e-3 * effect * math.exp(rng.gauss(0, process_sd)) for _ in range(processes)]
        recs.append(_record_of(_processes(*medians, n=10, width=0.005), workload=name))
    return results(recs)


def test_false_discoveries_are_controlled_across_cells():
    # 20 unchanged cells and 10 that are 30% slower, each process off by ~5% for its whole life.
    rng = random.Random(11)
    null = {f"same{i}": 1.0 for i in range(20)}
    changed = {f"slower{i}": 1.3 for i in range(10)}
    trials, false_calls, any_false, called, true_calls = 60, 0, 0, 0, 0
    for _ in range(trials):
        base = _synthetic_run(rng, {**null, **{k: 1.0 for k in changed}})
        new = _synthetic_run(rng, {**null, **changed})
        comparison = compare(base, new, threshold=0.02, alpha=0.05)
        flagged = [c for c in comparison.changes if c.verdict not in (SAME, NOT_SIGNIFICANT)]
        wrong = [c for c in flagged if c.key.startswith("same")]
        false_calls += len(wrong)
        any_false += bool(wrong)
        called += len(flagged)
        true_calls += len([c for c in flagged if c.key.startswith("slower") and c.verdict == SLOWER])
    # The false discovery proportion, averaged, stays near or under alpha; most true changes are found.
    assert false_calls / max(called, 1) <= 0.06
    assert true_calls / (10 * trials) >= 0.8
    # Without the correction, 20 null cells at p < 0.05 would give a false call in ~64% of runs.
    assert any_false / trials <= 0.35


def test_two_runs_of_the_same_code_are_no_change_on_every_cell_most_of_the_time():
    rng = random.Random(5)
    cells = {f"cell{i}": 1.0 for i in range(30)}
    clean = 0
    for _ in range(40):
        comparison = compare(_synthetic_run(rng, cells), _synthetic_run(rng, cells))
        clean += all(c.verdict in (SAME, NOT_SIGNIFICANT) for c in comparison.changes)
        assert "Welch" in comparison.summary() and "Benjamini" in comparison.summary()
    assert clean / 40 >= 0.9


def test_records_without_samples_are_judged_on_their_intervals():
    base = record(samples=spread(1e-3), replicates=4)
    new = record(samples=spread(1.5e-3), replicates=4)
    for r in (base, new):  # as a version 1 file without processes' medians reads back
        r.replicates, r.replicate_medians_s = [], []
    change = compare_records(base, new)
    assert change.p_value is None and change.verdict == SLOWER
    assert "confidence intervals" in change.note


def test_invalid_and_resized_cells_are_not_comparable_with_the_reason():
    failed = record(status="failed", reason="worker crashed: SIGSEGV")
    change = compare_records(record(samples=spread(1e-3)), failed)
    assert change.verdict == NOT_COMPARABLE and change.ratio is None
    assert "new is failed: worker crashed: SIGSEGV" == change.note
    resized = compare_records(record(samples=spread(1e-3)), record(samples=spread(1e-3), size=200))
    assert resized.verdict == NOT_COMPARABLE and "sizes differ" in resized.note


def test_whole_runs_match_cells_list_one_sided_ones_and_average_geometrically():
    base = results([
        record("matmul", "numpy", samples=spread(1e-3), replicates=4),
        record("matmul", "torch", samples=spread(2e-3), replicates=4),
        record("sort", "numpy", samples=spread(4e-3), replicates=4),
        record("fft", "numpy", samples=spread(1e-3)),  # only in base
        record("sort", "torch", "gpu", status="skipped", reason="no GPU"),
    ])
    new = results([
        record("matmul", "numpy", samples=spread(1.25e-3), replicates=4),  # 1.25x slower
        record("matmul", "torch", samples=spread(1.6e-3), replicates=4),  # 0.8: faster
        record("sort", "numpy", samples=spread(4e-3), replicates=4),  # same
        record("gradient", "jax", samples=spread(1e-3)),  # only in new
        record("sort", "torch", "gpu", status="skipped", reason="no GPU"),
    ], cpu_model="Other CPU")
    c = compare(base, new)
    verdicts = {ch.key.split("|")[0] + "/" + ch.new.backend: ch.verdict for ch in c.changes}
    assert verdicts == {"matmul/numpy": SLOWER, "matmul/torch": FASTER, "sort/numpy": NOT_SIGNIFICANT,
                        "sort/torch": NOT_COMPARABLE}
    assert [r.workload for r in c.only_base] == ["fft"]
    assert [r.workload for r in c.only_new] == ["gradient"]
    assert [ch.new.backend for ch in c.skipped_in_both] == ["torch"]
    assert len(c.shown) == 3
    assert c.geometric_mean == pytest.approx(math.exp((math.log(1.25) + math.log(0.8) + 0) / 3))
    assert c.counts() == {FASTER: 1, SLOWER: 1, NOT_SIGNIFICANT: 1, SAME: 0, CANNOT_TELL: 0, NOT_COMPARABLE: 1}
    assert [ch.new.backend for ch in c.slowdowns_above(0.10)] == ["numpy"]
    assert c.slowdowns_above(0.30) == []
    assert ("cpu_model", "Test CPU 9000", "Other CPU") in c.environment_differences
    assert not any(k.startswith("--") for k, _, _ in c.environment_differences)
    new.settings["threads"], base.settings["threads"] = 1, None
    assert ("--threads", "None", "1") in compare(base, new).environment_differences
    summary = c.summary()
    assert "1 faster, 1 slower, 1 not significant" in summary and "1 only in base, 1 only in new" in summary


# -- the command line ---------------------------------------------------------------------------
@pytest.fixture()
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    base = results([record("matmul", "numpy", samples=spread(1e-3), replicates=4),
                    record("sort", "numpy", samples=spread(2e-3), replicates=4),
                    record("fft", "numpy", samples=spread(1e-3), replicates=4)])
    new = results([record("matmul", "numpy", samples=spread(1.15e-3), replicates=4),  # 15% slower
                   record("sort", "numpy", samples=spread(1.9e-3), replicates=4),  # 5% faster
                   record("elementwise", "numpy", samples=spread(1e-3), replicates=4)])
    (tmp_path / "base").mkdir()
    (tmp_path / "new").mkdir()
    return base.save(tmp_path / "base" / "results.json"), new.save(tmp_path / "new" / "results.json")


def test_cli_prints_verdicts_one_sided_cells_and_the_geometric_mean(two_runs, tmp_path: Path):
    base, new = two_runs
    out = tmp_path / "cmp"
    result = run_here("compare", str(base), str(new), "--output-dir", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "slower" in text and "faster" in text
    assert "only in base: fft" in text and "only in new: elementwise" in text
    g = math.sqrt(1.15 * 0.95)
    assert f"geometric mean of new/base over 2 cells: {g:.3f}" in text
    svg = (out / "compare.svg").read_text()
    ET.fromstring(svg)
    assert "matmul" in svg and "sort" in svg
    md = (out / "compare.md").read_text()
    assert "| new / base |" in md and "1.150" in md and "Only in base:" in md
    # Which test and which correction judged significance, in both places.
    for where in (" ".join(text.split()), md):
        assert "Welch's t-test on the processes' log medians" in where
        assert "Benjamini–Hochberg over 2 cells" in where


def test_fail_above_gates_on_a_significant_slowdown(two_runs, tmp_path):
    base, new = two_runs
    gate = run_here("compare", str(base), str(new), "--fail-above", "10%", cwd=tmp_path)
    assert gate.returncode == 1
    assert "1 significant slowdown above 10%: matmul small NumPy CPU (1.150)" in gate.stderr
    lenient = run_here("compare", str(base), str(new), "--fail-above", "20%", cwd=tmp_path)
    # No slowdown above 20%; fft, measured in the base run only, is a case the new run did not
    # measure at all (a narrower run), listed and not judged.
    assert lenient.returncode == 0, lenient.stderr
    # Folders work as well as files, and a run compared with itself never fails the gate.
    itself = run_here("compare", str(new.parent), str(new.parent), "--fail-above", "1%", cwd=tmp_path)
    said = " ".join(itself.stdout.split())  # the summary wraps between words at 80 columns
    assert itself.returncode == 0 and "0 faster, 0 slower, 3 not significant" in said


@pytest.mark.parametrize("args, message", [
    (["--fail-above", "ten"], "not a percentage"),
    (["--fail-above=-5%"], "must be a positive percentage"),
    (["--alpha", "2"], "between 0 and 1"),
])
def test_bad_options_get_one_line(two_runs, args, message, tmp_path):
    base, new = two_runs
    result = run_here("compare", str(base), str(new), *args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_damaged_file_gets_one_line_and_status_2(two_runs, tmp_path: Path):
    base, _ = two_runs
    broken = tmp_path / "broken.json"
    broken.write_text(base.read_text()[:200])
    result = run_here("compare", str(base), str(broken), cwd=tmp_path)
    assert result.returncode == 2
    assert "not valid JSON" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
