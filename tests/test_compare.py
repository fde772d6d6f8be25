"""compare: verdicts from known samples, the geometric mean, one-sided cells, and the CI gate."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from arraybench.analysis.compare import (FASTER, NOT_COMPARABLE, SAME, SLOWER, change_text, compare,
                                       compare_records)

from .conftest import run_cli
from .synthetic import record, results, spread


def test_a_clear_slowdown_is_slower_and_a_clear_speedup_is_faster():
    slow = compare_records(record(samples=spread(1e-3)), record(samples=spread(1.2e-3)))
    assert slow.verdict == SLOWER
    assert slow.ratio == pytest.approx(1.2)
    assert slow.p_value < 1e-6 and slow.ci_overlap is False and slow.significant
    fast = compare_records(record(samples=spread(1e-3)), record(samples=spread(0.5e-3)))
    assert fast.verdict == FASTER and fast.ratio == pytest.approx(0.5)


def test_identical_samples_are_no_change():
    same = compare_records(record(samples=spread(1e-3)), record(samples=spread(1e-3)))
    assert same.verdict == SAME and same.ratio == 1.0 and same.p_value == 1.0


def test_a_significant_change_below_the_threshold_is_no_change():
    # 1% slower, on tight clusters: the test is sure, but 1% is under the 2% threshold.
    tiny = compare_records(record(samples=spread(1e-3, width=0.001)),
                           record(samples=spread(1.01e-3, width=0.001)))
    assert tiny.significant and tiny.verdict == SAME
    # The same change with a 0.5% threshold is called.
    assert compare_records(tiny.base, tiny.new, threshold=0.005).verdict == SLOWER


def test_a_large_but_noisy_change_is_not_called():
    # Medians 30% apart, but so few and so spread samples that the intervals overlap.
    base = record(samples=[1e-3, 3e-3, 0.5e-3, 2e-3, 1.5e-3])
    new = record(samples=[1.3e-3, 3.5e-3, 0.6e-3, 2.5e-3, 1.95e-3])
    change = compare_records(base, new)
    assert change.ratio > 1.2
    assert change.ci_overlap is True and not change.significant
    assert change.verdict == SAME


def test_records_without_samples_are_judged_on_their_intervals():
    base = record(samples=spread(1e-3))
    new = record(samples=spread(1.5e-3))
    base.replicates, new.replicates = [], []  # as a version 1 file reads back
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
        record("matmul", "numpy", samples=spread(1e-3)),
        record("matmul", "torch", samples=spread(2e-3)),
        record("sort", "numpy", samples=spread(4e-3)),
        record("fft", "numpy", samples=spread(1e-3)),  # only in base
        record("sort", "torch", "gpu", status="skipped", reason="no GPU"),
    ])
    new = results([
        record("matmul", "numpy", samples=spread(1.25e-3)),  # 1.25x slower
        record("matmul", "torch", samples=spread(1.6e-3)),  # 0.8: faster
        record("sort", "numpy", samples=spread(4e-3)),  # same
        record("gradient", "jax", samples=spread(1e-3)),  # only in new
        record("sort", "torch", "gpu", status="skipped", reason="no GPU"),
    ], cpu_model="Other CPU")
    c = compare(base, new)
    verdicts = {ch.key.split("|")[0] + "/" + ch.new.backend: ch.verdict for ch in c.changes}
    assert verdicts == {"matmul/numpy": SLOWER, "matmul/torch": FASTER, "sort/numpy": SAME,
                        "sort/torch": NOT_COMPARABLE}
    assert [r.workload for r in c.only_base] == ["fft"]
    assert [r.workload for r in c.only_new] == ["gradient"]
    assert [ch.new.backend for ch in c.skipped_in_both] == ["torch"]
    assert len(c.shown) == 3
    assert c.geometric_mean == pytest.approx(math.exp((math.log(1.25) + math.log(0.8) + 0) / 3))
    assert c.counts() == {FASTER: 1, SLOWER: 1, SAME: 1, NOT_COMPARABLE: 1}
    assert [ch.new.backend for ch in c.slowdowns_above(0.10)] == ["numpy"]
    assert c.slowdowns_above(0.30) == []
    assert ("cpu_model", "Test CPU 9000", "Other CPU") in c.environment_differences
    assert not any(k.startswith("--") for k, _, _ in c.environment_differences)
    new.settings["threads"], base.settings["threads"] = 1, None
    assert ("--threads", "None", "1") in compare(base, new).environment_differences
    summary = c.summary()
    assert "1 faster, 1 slower, 1 no change" in summary and "1 only in base, 1 only in new" in summary


def test_change_text_reads_both_ways():
    assert change_text(1.05) == "5.0% slower"
    assert change_text(0.95) == "5.0% faster"
    assert change_text(0.5) == "2.00× faster"
    assert change_text(3.0) == "3.00× slower"
    assert change_text(1.0) == "same"


# -- the command line ---------------------------------------------------------------------------
@pytest.fixture()
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    base = results([record("matmul", "numpy", samples=spread(1e-3)),
                    record("sort", "numpy", samples=spread(2e-3)),
                    record("fft", "numpy", samples=spread(1e-3))])
    new = results([record("matmul", "numpy", samples=spread(1.15e-3)),  # 15% slower
                   record("sort", "numpy", samples=spread(1.9e-3)),  # 5% faster
                   record("elementwise", "numpy", samples=spread(1e-3))])
    (tmp_path / "base").mkdir()
    (tmp_path / "new").mkdir()
    return base.save(tmp_path / "base" / "results.json"), new.save(tmp_path / "new" / "results.json")


def test_cli_prints_verdicts_one_sided_cells_and_the_geometric_mean(two_runs, tmp_path: Path):
    base, new = two_runs
    out = tmp_path / "cmp"
    result = run_cli("compare", str(base), str(new), "--output-dir", str(out))
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


def test_fail_above_gates_on_a_significant_slowdown(two_runs):
    base, new = two_runs
    gate = run_cli("compare", str(base), str(new), "--fail-above", "10%")
    assert gate.returncode == 1
    assert "1 significant slowdown above 10%: matmul small NumPy CPU (1.150)" in gate.stderr
    lenient = run_cli("compare", str(base), str(new), "--fail-above", "20%")
    assert lenient.returncode == 0, lenient.stderr
    # Folders work as well as files, and a run compared with itself never fails the gate.
    itself = run_cli("compare", str(new.parent), str(new.parent), "--fail-above", "1%")
    assert itself.returncode == 0 and "0 faster, 0 slower, 3 no change" in itself.stdout


@pytest.mark.parametrize("args, message", [
    (["--fail-above", "ten"], "not a percentage"),
    (["--fail-above=-5%"], "must be a positive percentage"),
    (["--alpha", "2"], "between 0 and 1"),
])
def test_bad_options_get_one_line(two_runs, args, message):
    base, new = two_runs
    result = run_cli("compare", str(base), str(new), *args)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_damaged_file_gets_one_line_and_status_2(two_runs, tmp_path: Path):
    base, _ = two_runs
    broken = tmp_path / "broken.json"
    broken.write_text(base.read_text()[:200])
    result = run_cli("compare", str(base), str(broken))
    assert result.returncode == 2
    assert "not valid JSON" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
