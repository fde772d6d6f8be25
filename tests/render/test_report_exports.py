"""Markdown, CSV, load_results() and the DataFrame; and `arraybench report` on a real run."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import arraybench
from arraybench.model.record import COLUMNS, Record
from arraybench.model.record import Summary
from arraybench.render.files import csv_text
from arraybench.render.report import markdown_report, md

from ..conftest import run_here
from ..synthetic import record, results, spread


def sample():
    return results([
        record("matmul", "numpy", samples=spread(1e-3)),
        record("matmul", "torch", samples=spread(0.5e-3), warnings=["a | pipe and *stars*"]),
        record("matmul", "torch", "gpu", status="skipped", reason="no GPU"),
        record("sort", "numpy", samples=spread(2e-3)),
        record("sort", "torch", status="failed", reason="worker crashed"),
        record("sort", "torch", "gpu", status="skipped", reason="no GPU"),
    ])


# -- Markdown -----------------------------------------------------------------------------------
def test_markdown_is_a_github_table_with_the_winner_in_bold_and_notes_below():
    text = markdown_report(sample())
    lines = text.splitlines()
    table = [line for line in lines if line.startswith("|")]
    assert table[0].startswith("| case | library / device | median |")
    widths = {line.count("|") - line.count("\\|") for line in table}
    assert widths == {8}  # every row has the header's 7 cells; escaped pipes do not split
    assert "| **PyTorch CPU** | **500 µs** |" in text
    assert "Test CPU 9000 (4 cores)" in text
    assert "ok \\[1\\]" in text and "1. a \\| pipe and \\*stars\\*" in text
    assert "failed \\[2\\]" in text and "2. worker crashed" in text
    assert "- not run: PyTorch GPU: no GPU" in text
    assert text.count("no GPU") == 1


def test_md_escapes_markup_and_newlines():
    assert md("a|b") == "a\\|b"
    assert md("<img src=x>") == "\\<img src=x\\>"
    assert md("two\nlines") == "two lines"


# -- CSV ----------------------------------------------------------------------------------------
def test_csv_has_one_row_per_record_with_every_scalar_field():
    res = sample()
    rows = list(csv.DictReader(io.StringIO(csv_text(res))))
    assert len(rows) == len(res.records)
    assert list(rows[0]) == ["key", "config", *COLUMNS]
    assert "samples_s" not in rows[0] and "key" in rows[0]
    for row, r in zip(rows, res.records):
        assert row["key"] == r.key and row["status"] == r.status and row["config"] == r.config_label
        if r.median_s is None:
            assert row["median_s"] == ""
        else:
            assert float(row["median_s"]) == r.median_s  # full precision survives
    assert rows[1]["warnings"] == "a | pipe and *stars*"


# -- the Python API -----------------------------------------------------------------------------
def test_load_results_reads_a_file_or_its_folder(tmp_path: Path):
    path = sample().save(tmp_path / "results.json")
    for given in (path, tmp_path, str(tmp_path)):
        loaded = arraybench.load_results(given)
        assert [r.key for r in loaded.records] == [r.key for r in sample().records]
        # A record that kept its replicates derives its figures again; one without reads as stored.
        assert [type(r) for r in loaded.records] == [Record if r.replicates else Summary for r in sample().records]


def test_to_dataframe_has_a_row_per_record_or_per_sample():
    pd = pytest.importorskip("pandas", reason="pandas is not installed (it is in the test extra)")
    res = sample()
    df = res.to_dataframe()
    assert isinstance(df, pd.DataFrame)
    assert len(df) == len(res.records) and list(df.columns) == ["key", "config", *COLUMNS]
    ok = df[df.status == "ok"]
    assert ok.median_s.tolist() == [r.median_s for r in res.records if r.status == "ok"]
    long = res.to_dataframe(samples=True)
    assert len(long) == sum(len(r.samples_s) for r in res.records)
    medians = long.groupby("key").sample_s.median()
    for r in res.records:
        if r.samples_s:
            assert math.isclose(medians[r.key], r.median_s)


def test_to_dataframe_without_pandas_says_how_to_get_it(tmp_path: Path):
    path = sample().save(tmp_path / "results.json")
    # A fresh interpreter in which pandas cannot be imported, as on a machine without it.
    code = ("import sys; sys.modules['pandas'] = None\n"
            "import arraybench\n"
            f"res = arraybench.load_results({str(path)!r})\n"
            "try:\n    res.to_dataframe()\nexcept ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "needs pandas" in out.stdout and "pip install pandas" in out.stdout


# -- arraybench report --------------------------------------------------------------------------
def test_report_rebuilds_every_file_from_a_real_run_without_measuring(real_run, tmp_path: Path):
    src = real_run.out
    before = {name: (src / name).read_bytes() for name in ("results.json", "journal.jsonl")}
    out = tmp_path / "rebuilt"
    result = run_here("report", str(src / "results.json"), "--output-dir", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    names = {p.name for p in out.iterdir()}
    assert {"report.html", "results.md", "results.csv", "matmul_small.svg", "sort_small.svg",
            "summary_small.svg"} <= names
    assert "journal.jsonl" not in names and "logs" not in names  # nothing ran
    for name, data in before.items():
        assert (src / name).read_bytes() == data
    # What the report shows is what the run saved.
    saved = json.loads((src / "results.json").read_text())["records"]
    rows = list(csv.DictReader(io.StringIO((out / "results.csv").read_text())))
    assert [float(r["median_s"]) for r in rows if r["status"] == "ok"] == \
        [r["median_s"] for r in saved if r["status"] == "ok"]
    assert "time per call" in result.stdout and "report.html" in result.stdout


def test_report_in_place_overwrites_the_runs_own_files(real_run, tmp_path: Path):
    html = real_run.out / "report.html"
    html.unlink()
    result = run_here("report", str(real_run.out), "-q", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == ""
    assert html.is_file() and "matmul" in html.read_text()


def test_report_never_writes_into_another_runs_folder(real_run, tmp_path: Path):
    """``report A -o B``: B holding a finished run, or locked by a run under way, is refused
    in one line with B untouched (merge -o's rule); a folder of no run takes the report."""
    import shutil

    from arraybench.outdir import FolderLock

    other = tmp_path / "other"
    shutil.copytree(real_run.out, other)
    before = {p.name: p.read_bytes() for p in other.iterdir() if p.is_file()}
    refused = run_here("report", str(real_run.out), "-o", str(other), "--no-store", "-q", cwd=tmp_path)
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert f"{other} holds a run" in line and "choose another --output-dir" in line
    assert {p.name: p.read_bytes() for p in other.iterdir() if p.is_file()} == before
    running = tmp_path / "running"
    running.mkdir()
    with FolderLock.acquire(running):  # as a run in progress holds its folder
        refused = run_here("report", str(real_run.out), "-o", str(running), "--no-store", "-q",
                           cwd=tmp_path)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert not (running / "report.html").exists()
    fresh = tmp_path / "fresh"
    done = run_here("report", str(real_run.out), "-o", str(fresh), "--no-store", "--no-plots", "-q",
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "matmul" in (fresh / "report.html").read_text()


@pytest.mark.parametrize("content, message", [
    ("", "is empty"),
    ("{\"tool\": \"arraybench\", \"schema_version\": 1, \"records\": [", "not valid JSON"),
    ("{\"tool\": \"other\"}", "not an arraybench results file"),
    (None, "no such file"),
])
def test_report_on_a_bad_file_gets_one_line_and_status_2(tmp_path: Path, content, message):
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content)
    result = run_here("report", str(path), cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "report.html").exists()


# -- plots --------------------------------------------------------------------------------------

def test_log_axes_label_their_ticks_in_units_not_mathtext():
    import re

    from arraybench.render.mpl import render_svg
    from arraybench.render.plots import case_figure, summary_figure

    # 40× apart: the case plot goes to a log axis, whose ticks must read as times
    recs = [record("gradient", "numpy", samples=spread(80e-3)), record("gradient", "torch", samples=spread(2e-3))]
    case = render_svg(case_figure(recs))
    ticks = set(re.findall(r">(\d[\d,.]* (?:ns|µs|ms|s))</text>", case))
    assert {"10 ms", "100 ms"} <= ticks, ticks
    summary = render_svg(summary_figure(recs, "small"))
    assert ">1×</text>" in summary and ">10×</text>" in summary
    for svg in (case, summary):
        assert "mathdefault" not in svg and "10^" not in svg
