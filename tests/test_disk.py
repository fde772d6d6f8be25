"""The disk against the run, for real: a full file system (a small
tmpfs, see tests/fullfs.py), files and folders in the way, symbolic links, named pipes and devices.

What was measured is never lost: a write that fails ends the command in one line that names the
file and says how to go on, and ``--resume`` goes on once the cause is gone. Nothing outside the
output folder is ever written through a link, and no path that is not a regular file is read.
"""

from __future__ import annotations

import re

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from arraybench import load_results

from .conftest import run_cli, run_here
from .fullfs import scenario

DATA = Path(__file__).resolve().parent / "data"
QUICK = ("--processes", "1", "--max-time", "0.05", "--min-samples", "3", "-q", "--devices", "cpu", "--backends",
         "numpy")


# Runs onto small file systems that fill: real runs and mounts.
pytestmark = [pytest.mark.slow, pytest.mark.budget(45)]


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def replicates(journal: Path) -> Counter:
    return Counter((e["key"], e["index"]) for e in map(json.loads, lines(journal))
                   if e["type"] == "replicate")


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    text = stderr.strip().splitlines()
    assert len(text) == 1, stderr
    return text[0]


# -- a full disk -------------------------------------------------------------------------------
def test_a_disk_that_fills_mid_run_keeps_every_journalled_measurement(tmp_path: Path):
    steps = scenario("journal_full", tmp_path)
    out = tmp_path / "mnt" / "out"
    copies = tmp_path / "copies"

    # The second process's measurements could not be journalled: one line, exit 1.
    assert steps["run"]["rc"] == 1, steps["run"]["stderr"]
    assert one_line(steps["run"]["stderr"]) == (
        f"arraybench: error: could not write {out}/journal.jsonl (No space left on device); every "
        f"measurement made before it is kept in {out}/journal.jsonl; once the cause is fixed, "
        f"continue with: arraybench run --resume {out}")
    kept = lines(copies / "run" / "journal.jsonl")
    assert all(line.endswith("}\n") for line in kept)  # the failed line was cut off, not torn
    first = replicates(copies / "run" / "journal.jsonl")
    assert sum(1 for (_, i) in first if i == 0) == 12  # all of process 0
    assert sum(1 for (_, i) in first if i == 1) < 12

    # Space again: --resume measures only what is missing, and keeps every line as it was.
    assert steps["resume"]["rc"] == 0, steps["resume"]["stderr"]
    resumed = lines(copies / "resume" / "journal.jsonl")
    assert resumed[: len(kept)] == kept
    assert set(replicates(copies / "resume" / "journal.jsonl").values()) == {1}
    assert len(replicates(copies / "resume" / "journal.jsonl")) == 24
    final = load_results(copies / "resume" / "results.json")
    assert final.complete and all(r.status == "ok" and r.n_replicates == 2 for r in final.records)

    # Full again: a report, or a resume, is refused before it writes anything; the journal stays.
    assert steps["report"]["rc"] == 2
    assert one_line(steps["report"]["stderr"]) == (
        f"arraybench: error: --output-dir {out}: cannot write there (No space left on device)")
    assert steps["rewrite"]["rc"] == 2
    assert "Traceback" not in steps["rewrite"]["stderr"]
    assert steps["rewrite"]["stderr"].splitlines()[-1] == (  # after "nothing to resume"
        f"arraybench: error: --resume {out}: cannot write there (No space left on device)")
    for step in ("report", "rewrite"):
        assert lines(copies / step / "journal.jsonl") == resumed
        assert not list((copies / step).glob(".*.tmp"))  # no half-written file left behind
    assert steps["rewrite_freed"]["rc"] == 0, steps["rewrite_freed"]["stderr"]
    assert (copies / "rewrite_freed" / "report.html").stat().st_size > 1000
    assert lines(copies / "rewrite_freed" / "journal.jsonl") == resumed


def test_a_disk_full_once_everything_is_measured_costs_only_the_report(tmp_path: Path):
    steps = scenario("report_full", tmp_path)
    out = tmp_path / "mnt" / "out"
    copies = tmp_path / "copies"
    assert steps["run"]["rc"] == 1
    # Which report file finds no inode first depends on which worker files the run freed (the
    # report's files are written after every measurement, in one step).
    said = re.fullmatch(
        f"arraybench: error: could not write {re.escape(str(out))}/(report.html|results.md|results.csv|findings.md) "
        f"\\(No space left on device\\); every measurement made before it is kept in {re.escape(str(out))}/journal.jsonl; "
        f"once the cause is fixed, continue with: arraybench run --resume {re.escape(str(out))}",
        one_line(steps["run"]["stderr"]))
    assert said, steps["run"]["stderr"]
    journal = lines(copies / "run" / "journal.jsonl")
    assert len(replicates(copies / "run" / "journal.jsonl")) == 4  # every cell, both processes
    assert load_results(copies / "run" / "results.json").complete
    assert not (copies / "run" / said[1]).exists()  # no half-written file in its place
    assert not list((copies / "run").glob(".*.tmp"))
    assert steps["resume"]["rc"] == 0, steps["resume"]["stderr"]
    assert lines(copies / "resume" / "journal.jsonl") == journal  # nothing measured again
    assert (copies / "resume" / "report.html").stat().st_size > 1000


def test_logs_that_run_out_of_room_as_a_worker_starts(tmp_path: Path):
    steps = scenario("logs_full", tmp_path)
    out = tmp_path / "out"
    assert steps["run"]["rc"] == 1
    # The second process's first file there (its log, or the board of its other allocator state).
    assert re.fullmatch(
        f"arraybench: error: could not write {re.escape(str(out))}/logs/numpy-cpu-p1[-a-z]*\\.(log|board) "
        f"\\(No space left on device\\); every measurement made before it is kept in {re.escape(str(out))}/journal.jsonl; "
        f"once the cause is fixed, continue with: arraybench run --resume {re.escape(str(out))}",
        one_line(steps["run"]["stderr"])), steps["run"]["stderr"]
    # Whatever was journalled before the second worker started is kept, each replicate once (the
    # second process's worker starts early, so there may be none yet).
    assert set(replicates(tmp_path / "copies" / "run" / "journal.jsonl").values()) <= {1}
    assert steps["resume"]["rc"] == 0, steps["resume"]["stderr"]
    pairs = replicates(tmp_path / "copies" / "resume" / "journal.jsonl")
    assert len(pairs) == 4 and set(pairs.values()) == {1}


def test_logs_that_cannot_be_written_are_refused_before_measuring(tmp_path: Path):
    steps = scenario("logs_unwritable", tmp_path)
    for step, why in (("full", "No space left on device"), ("readonly", "Read-only file system")):
        assert steps[step]["rc"] == 2
        assert one_line(steps[step]["stderr"]) == (
            f"arraybench: error: --output-dir {tmp_path / step / 'logs'}: cannot write there ({why})")
        assert not (tmp_path / "copies" / step / "journal.jsonl").exists()


# -- files and folders in the way ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["results.json", "report.html", "results.csv"])
def test_a_folder_where_a_result_file_goes_is_refused_before_measuring(name: str, tmp_path: Path):
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    (out / name / "keep").write_text("mine")
    result = run_here("run", "--workloads", "sort", "--sizes", "small", "-o", str(out), *QUICK,
                      cwd=tmp_path)
    assert result.returncode == 2
    assert one_line(result.stderr) == (
        f"arraybench: error: {out / name}: is a folder; arraybench writes a file there (remove or "
        "rename it, or choose another folder)")
    assert sorted(p.name for p in out.iterdir()) == [name]
    assert (out / name / "keep").read_text() == "mine"


def test_a_plot_that_cannot_be_written_after_measuring_is_one_line_and_resumable(tmp_path: Path):
    out = tmp_path / "out"
    (out / "sort_small.svg").mkdir(parents=True)  # in the way of the plot, found only at the end
    result = run_here("run", "--workloads", "sort", "--sizes", "small", "-o", str(out), *QUICK,
                      cwd=tmp_path)
    assert result.returncode == 1
    assert one_line(result.stderr) == (
        f"arraybench: error: could not write {out}/sort_small.svg (Is a directory); every "
        f"measurement made before it is kept in {out}/journal.jsonl; once the cause is fixed, "
        f"continue with: arraybench run --resume {out}")
    measured = load_results(out / "results.json")  # saved before the report was attempted
    assert measured.complete and measured.records[0].status == "ok"
    journal = (out / "journal.jsonl").read_bytes()
    (out / "sort_small.svg").rmdir()
    resumed = run_here("run", "--resume", str(out), "-q", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "sort_small.svg").read_text().lstrip().startswith("<?xml")
    assert (out / "journal.jsonl").read_bytes() == journal  # nothing measured again
    assert load_results(out / "results.json").records[0].samples_s == measured.records[0].samples_s


def test_names_too_long_for_a_file_system_are_shortened(tmp_path: Path):
    name, label = "w" * 240, "s" * 200
    source = tmp_path / "long.py"
    source.write_text("import arraybench\n"
                      f"@arraybench.workload(sizes={{{label!r}: 64}}, name={name!r})\n"
                      "def f(xp, x):\n    return x * 2.0\n")
    out = tmp_path / "out"
    result = run_here("run", "--workload-file", str(source), "-o", str(out), *QUICK, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    plots = [p.name for p in out.glob("w*.svg")]
    assert len(plots) == 1 and len(plots[0].encode()) <= 255
    assert load_results(out).records[0].workload == name


# -- symbolic links ----------------------------------------------------------------------------
@pytest.mark.parametrize("target_exists", [False, True], ids=["dangling", "to-a-file"])
@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "overwrite"])
def test_a_linked_journal_is_never_written_through(target_exists: bool, overwrite: bool,
                                                    tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "precious.txt"
    if target_exists:
        target.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "journal.jsonl").symlink_to(target)
    result = run_here("run", "--workloads", "sort", "--sizes", "small", "-o", str(out), *QUICK,
                      *(["--overwrite"] if overwrite else []), cwd=tmp_path)
    assert result.returncode == 2
    assert one_line(result.stderr) == (
        f"arraybench: error: {out}/journal.jsonl: is a symbolic link (to {target}), not a journal; "
        "arraybench writes only files of its own in its output folder (remove it, or choose "
        "another folder)")
    assert [p.name for p in outside.iterdir()] == (["precious.txt"] if target_exists else [])
    if target_exists:
        assert target.read_text() == "precious"
    resumed = run_here("run", "--resume", str(out), cwd=tmp_path)
    assert resumed.returncode == 2 and "is a symbolic link" in one_line(resumed.stderr)
    assert [p.name for p in outside.iterdir()] == (["precious.txt"] if target_exists else [])


def test_linked_logs_are_never_written_through(tmp_path: Path):
    outside = tmp_path / "outside"
    out = tmp_path / "out"
    out.mkdir()
    (out / "logs").symlink_to(outside, target_is_directory=True)  # dangling: not even created
    result = run_here("run", "--workloads", "sort", "--sizes", "small", "-o", str(out), *QUICK,
                      cwd=tmp_path)
    assert result.returncode == 2
    assert one_line(result.stderr).startswith(f"arraybench: error: {out}/logs: is a symbolic link")
    assert not outside.exists()
    outside.mkdir()
    again = run_here("run", "--workloads", "sort", "--sizes", "small", "-o", str(out), *QUICK,
                     "--overwrite", cwd=tmp_path)
    assert again.returncode == 2
    assert list(outside.iterdir()) == []


# -- paths that are not regular files -------------------------------------------------------------
@pytest.mark.parametrize("command", [
    ["report", "PIPE"],
    ["report", "/dev/zero"],
    ["compare", "PIPE", "PIPE"],
    ["compare", "/dev/zero", "/dev/null"],
    ["run", "--resume", "PIPEDIR"],
], ids=["report-fifo", "report-dev-zero", "compare-fifo", "compare-devices", "resume-fifo-journal"])
def test_pipes_and_devices_are_refused_at_once(command: list[str], tmp_path: Path):
    pipe = tmp_path / "results.json"
    os.mkfifo(pipe)
    pipedir = tmp_path / "run"
    pipedir.mkdir()
    os.mkfifo(pipedir / "journal.jsonl")
    args = [str(pipe) if a == "PIPE" else str(pipedir) if a == "PIPEDIR" else a for a in command]
    # Before the fix these blocked for ever on the pipe (or filled the memory from /dev/zero);
    # the timeout turns that into a failure instead of a hung test.
    result = run_cli(*args, cwd=tmp_path, timeout=60)
    assert result.returncode == 2
    said = "is a named pipe, not a journal" if "--resume" in command else \
        "is not a regular file (a named pipe or a device)"
    assert said in one_line(result.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json", "run"]
    assert [p.name for p in pipedir.iterdir()] == ["journal.jsonl"]

