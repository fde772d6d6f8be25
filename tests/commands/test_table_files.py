"""``--csv PATH`` and ``--markdown PATH`` on ``run``, ``compare`` and ``history`` (hyperfine's
exports): the file holds the command's table, the same cells and medians it prints; a path that
cannot be written is one line and exit status 2 before anything is measured, and a write that
fails after a run keeps the run's own files."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest

from arraybench import api, load_results
from arraybench.render.report import comparison_markdown
from arraybench.store import open_store
from arraybench.units import format_seconds

from ..conftest import run_here
from ..synthetic import timed_run

ONE_CELL = ("--backends", "numpy", "--devices", "cpu", "--workloads", "sort", "--sizes", "small",
            "--processes", "1", "--max-time", "0.05", "--min-samples", "3", "--no-plots", "--no-store")
#: No project file from the folders above the test's: the command line alone decides.
NO_PROJECT = {"ARRAYBENCH_CONFIG": ""}


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def test_run_writes_its_table_as_csv_and_markdown(tmp_path: Path):
    out, table, notes = tmp_path / "out", tmp_path / "table.csv", tmp_path / "table.md"
    done = run_here("run", *ONE_CELL, "--warmup", "0.01", "-o", str(out), "--csv", str(table),
                    "--markdown", str(notes), cwd=tmp_path, env=NO_PROJECT)
    assert done.returncode == 0, done.stderr
    res = load_results(out)
    (record,) = res.records
    rows = _rows(table)
    assert [(r["workload"], r["backend"], r["size_label"], float(r["median_s"])) for r in rows] == \
        [("sort", "numpy", "small", record.median_s)]
    # The same table as the run's own files: results.csv, and results.md with its findings.
    assert table.read_text() == (out / "results.csv").read_text()
    assert notes.read_text() == (out / "results.md").read_text()
    assert f"| {format_seconds(record.median_s)} |" in notes.read_text()
    assert f"wrote {table}, {notes}" in done.stderr
    assert res.settings["warmup"] == 0.01  # --warmup reached the run


@pytest.mark.parametrize("option", ["--csv", "--markdown"])
def test_run_refuses_an_unwritable_path_before_measuring(option: str, tmp_path: Path):
    (tmp_path / "a-folder").mkdir()
    for path, why in ((tmp_path / "missing" / "t.csv", "no folder"), (tmp_path / "a-folder", "is a folder")):
        done = run_here("run", *ONE_CELL, "-o", str(tmp_path / "out"), option, str(path), cwd=tmp_path,
                        env=NO_PROJECT)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [done.stderr.strip()] and why in done.stderr
        assert done.stderr.startswith(f"arraybench: error: {option} {path}: ")
        assert not (tmp_path / "out").exists()  # nothing measured, nothing written


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_table_file_that_fails_after_the_run_keeps_the_run(tmp_path: Path):
    # A named pipe nobody reads passes the check (a pipe may be written to) and fails at the end.
    pipe = tmp_path / "nobody-reads"
    os.mkfifo(pipe)
    out = tmp_path / "out"
    done = run_here("run", *ONE_CELL, "-q", "-o", str(out), "--csv", str(pipe), cwd=tmp_path, env=NO_PROJECT)
    assert done.returncode == 1
    (line,) = [line for line in done.stderr.splitlines() if "--csv" in line]
    assert line.startswith(f"arraybench: error: --csv {pipe}: cannot write there") and str(out / "results.json") in line
    assert [r.status for r in load_results(out).records] == ["ok"]
    assert (out / "results.csv").is_file() and (out / "report.html").is_file()


def _saved(res, folder: Path) -> Path:
    folder.mkdir()
    res.save(folder / "results.json")
    return folder


def test_compare_writes_the_comparison_as_csv_and_markdown(tmp_path: Path):
    base = _saved(timed_run(1), tmp_path / "base")
    new = _saved(timed_run(2, torch_s=3e-3), tmp_path / "new")
    table, notes = tmp_path / "c.csv", tmp_path / "c.md"
    done = run_here("compare", str(base), str(new), "--csv", str(table), "--markdown", str(notes),
                    cwd=tmp_path, env=NO_PROJECT)
    assert done.returncode == 0, done.stderr
    comparison = api.compare(load_results(base), load_results(new))
    rows = _rows(table)
    assert [(r["config"], float(r["base_median_s"]), float(r["new_median_s"]), r["verdict"]) for r in rows] == \
        [(c.new.config_label, c.base.median_s, c.new.median_s, c.verdict) for c in comparison.changes]
    assert rows[1]["config"] == "PyTorch CPU" and rows[1]["verdict"] == "slower"  # 50% slower
    assert notes.read_text() == comparison_markdown(comparison)
    # The table printed names the same medians the files hold.
    for c in comparison.changes:
        assert format_seconds(c.new.median_s) in done.stdout and format_seconds(c.new.median_s) in notes.read_text()


def test_compare_refuses_an_unwritable_path_before_reading_the_runs(tmp_path: Path):
    done = run_here("compare", "no-such-run", "nor-this", "--markdown", str(tmp_path / "nope" / "c.md"),
                    cwd=tmp_path, env=NO_PROJECT)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (f"arraybench: error: --markdown {tmp_path / 'nope' / 'c.md'}: cannot write "
                                   f"there (no folder {tmp_path / 'nope'})")


def test_history_writes_its_table_as_csv_and_markdown(tmp_path: Path):
    store = str(tmp_path / "s.sqlite")
    torch = (2.0e-3, 2.004e-3, 1.998e-3, 2.4e-3, 2.404e-3, 2.398e-3)  # a step from the fourth run on
    with open_store(store) as s:
        for day, t in enumerate(torch, start=1):
            s.add(timed_run(day, torch=f"2.{4 + day // 4}.0", torch_s=t))
    table, notes = tmp_path / "h.csv", tmp_path / "h.md"
    done = run_here("history", "--store", store, "--last", "4", "--csv", str(table), "--markdown", str(notes),
                    cwd=tmp_path, env={**NO_PROJECT, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    rows = _rows(table)
    # The latest four runs of each series, as the table shows them, with the stored medians.
    assert [(r["config"], r["started_at"][:10]) for r in rows] == [
        (label, f"2026-01-{day:02d}") for label in ("NumPy CPU", "PyTorch CPU") for day in range(3, 7)]
    assert [float(r["median_s"]) for r in rows if r["config"] == "PyTorch CPU"] == \
        pytest.approx([timed_run(d, torch_s=t).records[1].median_s for d, t in zip(range(3, 7), torch[2:])])
    step = next(r for r in rows if r["note"].startswith("STEP"))
    assert step["config"] == "PyTorch CPU" and float(step["vs_previous"]) == pytest.approx(1.2, rel=0.01)
    text = notes.read_text()
    assert text.startswith("### arraybench history") and "- step: matmul small" in text
    for r in rows:
        median = format_seconds(float(r["median_s"]))
        assert median in text and median in done.stdout
    assert text.count("\n| ") == 1 + len(rows)  # the header and a row per run shown


def test_history_with_no_stored_run_writes_an_empty_table(tmp_path: Path):
    store = str(tmp_path / "s.sqlite")
    open_store(store, create=True).close()
    table = tmp_path / "h.csv"
    done = run_here("history", "--store", store, "--csv", str(table), cwd=tmp_path, env=NO_PROJECT)
    assert done.returncode == 0, done.stderr
    assert table.read_text().splitlines() == [",".join(
        ["workload", "size_label", "size", "config", "machine_id", "run_id", "started_at", "status",
         "median_s", "ci_low_s", "ci_high_s", "vs_previous", "note"])]


def test_one_file_for_both_tables_is_refused(tmp_path: Path):
    same = str(tmp_path / "t.txt")
    done = run_here("history", "--csv", same, "--markdown", same, cwd=tmp_path, env=NO_PROJECT)
    assert done.returncode == 2 and "give each its own file" in done.stderr
    assert not Path(same).exists()


def test_a_project_file_others_may_write_cannot_choose_where_a_table_goes(tmp_path: Path):
    project = tmp_path / "pyproject.toml"
    project.write_text('[tool.arraybench]\nmarkdown = "notes.md"\n')
    project.chmod(0o666)
    done = run_here("run", *ONE_CELL, "-o", "out", cwd=tmp_path, env={"ARRAYBENCH_CONFIG": str(project)})
    assert done.returncode == 2
    assert "markdown" in done.stderr and "may be written by other users" in done.stderr
    assert not (tmp_path / "notes.md").exists() and not (tmp_path / "out").exists()
