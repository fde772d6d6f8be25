"""A cell's samples as a histogram, per process: the bins (``analysis.aggregate``), ``arraybench
show RUN --histogram`` in the terminal, and the small bars in report.html's samples column."""

from __future__ import annotations

import re
from pathlib import Path
from statistics import median

import pytest

from arraybench.analysis.aggregate import bin_count, histogram, record_histogram
from arraybench.model.replicate import Replicate
from arraybench.render.html import render_html
from arraybench.units import format_seconds

from ..conftest import run_here
from ..synthetic import record, results, spread

#: Three processes of one cell: the first two near 1 ms, the third slow for its whole life (2 ms).
FAST, SLOW = spread(1e-3, n=14, width=0.01), spread(2e-3, n=12, width=0.01)


def _three_processes():
    r = record("matmul", "numpy", samples=spread(1e-3, n=28, width=0.01), replicates=2)
    r.replicates.append(Replicate(status="ok", samples_s=list(SLOW), number=1))
    r.n_replicates, r.n_samples = 3, r.n_samples + len(SLOW)
    return r


def test_every_process_is_counted_in_the_same_bins():
    h = histogram([FAST, FAST[:7], SLOW])
    assert h.processes == 3 and h.bins == bin_count(len(FAST) + 7 + len(SLOW))
    assert h.edges[0] == min(FAST) and h.edges[-1] == max(SLOW)
    assert [sum(c) for c in h.counts] == [14, 7, 12] and sum(h.totals) == h.samples == 33
    # The slow process lies in the top bins only, the others in the bottom ones.
    top = [i for i, n in enumerate(h.counts[2]) if n]
    assert min(top) > max(i for i, n in enumerate(h.counts[0]) if n)
    assert h.medians[2] == pytest.approx(2e-3)


def test_identical_samples_make_one_bin_and_no_sample_no_histogram():
    h = histogram([[1e-3] * 5, [1e-3] * 3])
    assert h.bins == 1 and h.counts == ((5,), (3,))
    assert histogram([[], []]) is None
    assert record_histogram(record("fft", status="skipped")) is None


def test_show_histogram_draws_each_process_of_a_cell_in_its_own_mark(tmp_path: Path):
    res = results([_three_processes(), record("sort", "numpy", samples=spread(5e-4), replicates=2)])
    res.save(tmp_path / "results.json")
    done = run_here("show", str(tmp_path), "--histogram", cwd=tmp_path, env={"COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    heads = [i for i, line in enumerate(lines) if " · NumPy CPU: " in line]
    assert [lines[i].split(" · ")[0] for i in heads] == ["matmul small (n = 100)", "sort small (n = 100)"]
    assert "40 samples from 3 processes" in lines[heads[0]]
    bins = [re.fullmatch(r"\s+([\d.]+) – \s*([\d.]+) (\S+)\s+(\d+)(?: (\S+))?", line)
            for line in lines[heads[0] + 1:heads[1]]]
    bins = [m for m in bins if m]
    assert len(bins) == bin_count(40)
    assert all(m.group(3) == "ms" for m in bins)
    # A mark per sample (the bars fit in 100 columns), each process's own character.
    assert all(len(m.group(5) or "") == int(m.group(4)) for m in bins)
    marks = [m.group(5) or "" for m in bins]
    assert [sum(bar.count(c) for bar in marks) for c in "123"] == [14, 14, 12]
    # The slow process's marks are in the top bins, the others' in the bottom one.
    assert all(float(m.group(1)) >= 1.8 for m, bar in zip(bins, marks) if "3" in bar)
    assert all(float(m.group(2)) <= 1.2 for m, bar in zip(bins, marks) if "1" in bar or "2" in bar)
    assert all(line == line.rstrip() for line in lines)  # no trailing spaces in a log
    medians = [format_seconds(median(rep.samples_s), 4) for rep in _three_processes().replicates]
    assert lines[heads[1] - 4:heads[1] - 1] == [f"  {p} = process {p}: {n} samples, median {m}"
                                                for p, n, m in zip((1, 2, 3), (14, 14, 12), medians)]
    assert medians[2] == "2 ms"
    assert all(len(line) <= 100 for line in lines)


def test_show_chooses_cells_and_says_when_none_matches(tmp_path: Path):
    res = results([_three_processes(), record("sort", "torch", samples=spread(5e-4))])
    res.save(tmp_path / "results.json")
    one = run_here("show", str(tmp_path / "results.json"), "--histogram", "--workloads", "sort",
                   "--sizes", "100", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert "sort small (n = 100) · PyTorch CPU" in one.stdout and "matmul" not in one.stdout
    table = run_here("show", str(tmp_path), "--backends", "numpy", cwd=tmp_path)
    assert table.returncode == 0 and "NumPy CPU" in table.stdout and "PyTorch" not in table.stdout
    none = run_here("show", str(tmp_path), "--histogram", "--backends", "jax", cwd=tmp_path)
    assert none.returncode == 2 and len(none.stderr.strip().splitlines()) == 1
    assert "libraries numpy, torch" in none.stderr


def test_the_report_draws_each_cells_histogram_a_colour_per_process():
    page = render_html(results([_three_processes()]))
    (title,) = re.findall(r"<div class='hist' role='img' aria-label='([^']*)'", page)
    assert title.startswith("40 samples from ") and "process 3 green (median 2 ms)" in title
    bars = re.search(r"<div class='hist'[^>]*>(.*?)</div>", page).group(1)
    h = record_histogram(_three_processes(), 12)
    segments = re.findall(r"<i style='height:([\d.]+)%;background:(#[0-9a-f]{6})'></i>", bars)
    assert len(segments) == sum(1 for c in h.counts for n in c if n)
    assert {c for _, c in segments} == {"#1f77b4", "#ff7f0e", "#2ca02c"}
    assert max(float(p) for p, c in segments) <= 100.0
    assert bars.count("<span>") == 12
