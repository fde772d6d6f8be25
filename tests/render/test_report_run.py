"""What a run shows while it goes (progress, live lines, -q, --json) and the files it leaves."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import arraybench
from arraybench import load_results
from arraybench.model import record as records
from arraybench.render.progress import ConsoleReporter

from ..conftest import ROOT, run_here

ONE_CELL = ("--backends", "numpy", "--devices", "cpu", "--workloads", "sort", "--sizes", "small",
            "--processes", "1", "--max-time", "0.05", "--min-samples", "3")


def test_json_streams_one_record_per_line_matching_results_json(real_run):
    lines = real_run.result.stdout.strip().splitlines()
    streamed = [json.loads(line) for line in lines]  # every line parses on its own
    saved = json.loads((real_run.out / "results.json").read_text())["records"]
    assert len(streamed) == len(saved) > 0
    assert {r["workload"] for r in streamed} == {"matmul", "sort"}
    by_key = {records.Record.from_dict(r).key: r for r in saved}
    for r in streamed:
        assert r == by_key[records.Record.from_dict(r).key]
    assert real_run.result.stderr == ""  # nothing but JSON: safe to pipe into a script


def test_a_run_leaves_every_report_file(real_run):
    names = {p.name for p in real_run.out.iterdir()}
    assert {"results.json", "report.html", "results.md", "results.csv", "matmul_small.svg",
            "sort_small.svg", "summary_small.svg"} <= names


def test_live_lines_name_every_finished_cell(tmp_path: Path):
    result = run_here("run", *ONE_CELL, "--output-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    live = [line for line in result.stderr.splitlines() if line.startswith("✓")]
    assert len(live) == 1 and "sort small  NumPy CPU" in live[0]
    median = load_results(tmp_path / "out" / "results.json").records[0].median_s
    from arraybench.units import format_seconds

    assert format_seconds(median) in live[0]
    assert "time per call" in result.stdout and "report.html" in result.stdout


@pytest.mark.slow
def test_quiet_prints_nothing_and_still_writes_everything(tmp_path: Path):
    out = tmp_path / "out"
    result = run_here("run", *ONE_CELL, "-q", "--output-dir", str(out), cwd=ROOT)
    assert result.returncode == 0
    assert result.stdout == "" and result.stderr == ""
    assert (out / "report.html").is_file() and (out / "results.csv").is_file()


def test_progress_bar_counts_measurements_and_cells_with_an_eta(tmp_path: Path):
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=160, color_system=None)
    reporter = ConsoleReporter(console=console, cells=2)
    results = arraybench.run(["sort", "elementwise"], backends=["numpy"], devices=["cpu"],
                             sizes=["small"], processes=2, max_time=0.05, min_samples=3,
                             output_dir=tmp_path, reporter=reporter)
    text = buffer.getvalue()
    assert len(results.records) == 2
    assert "4/4 measurements" in text  # 2 cells x 2 processes, the bar's last frame
    assert "2/2 cells" in text
    assert "ETA" in text
    assert reporter.cells_done == 2
    assert text.count("✓") == 2  # one live line per finished cell


def test_json_stops_writing_quietly_when_the_reader_leaves():
    # `arraybench run --json | head -1`: a real pipe whose reading end is closed.
    import os

    from arraybench.render.progress import JsonLinesReporter
    from ..synthetic import record, spread

    r, w = os.pipe()
    os.close(r)
    with open(w, "w") as stream:
        reporter = JsonLinesReporter(stream)
        reporter.record_done(record(samples=spread(1e-3)))  # would raise BrokenPipeError
        assert reporter.reader_left
        reporter.record_done(record(samples=spread(1e-3)))  # and now is a no-op
        try:
            stream.close()
        except BrokenPipeError:
            pass  # the buffered line cannot be flushed either; that is the point
