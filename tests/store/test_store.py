"""The results store, on SQLite and on a real PostgreSQL server: runs in whole or not at all,
idempotent imports, versioned schema, concurrent writers, a writer killed mid-write, and a run
that succeeds whatever the store does."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from arraybench.model.record import Record
from arraybench.store import StoreError, open_store
from arraybench.model.runs import run_id
from arraybench.store.database import SCHEMA_VERSION
from arraybench.store.refs import stored_results

from ..conftest import FAST, ROOT, run_here
from ..synthetic import timed_run


def _counts(location: str) -> tuple[int, int]:
    with open_store(location) as s:
        runs = s.db.execute("SELECT COUNT(*) FROM runs")[0][0]
        records = s.db.execute("SELECT COUNT(*) FROM records")[0][0]
    return runs, records


def test_a_run_is_added_once_and_read_back_whole(store_location):
    run = timed_run(1, context={"commit": "abc"})
    with open_store(store_location) as s:
        first = s.add(run, source="/runs/one")
        again = s.add(run, source="/runs/one")
        stored = s.runs()
        back = stored_results(s, first.run_id[:8])
    assert (first.outcome, first.records) == ("added", 2)
    assert again.outcome == "already stored"
    assert len(stored) == 1 and stored[0].context == {"commit": "abc"} and stored[0].source == "/runs/one"
    assert stored[0].machine_id == run.environment["machine_id"] and stored[0].records == 2
    assert back.to_dict() == run.to_dict()
    assert _counts(store_location) == (1, 2)


def test_a_resumed_run_replaces_its_interrupted_self_and_never_the_reverse(store_location):
    finished = timed_run(2)
    interrupted = timed_run(2, complete=False)  # the same run, stopped before its second cell
    interrupted.records[1] = Record(reason="not measured", **interrupted.records[1].cell.to_dict())
    assert run_id(interrupted) == run_id(finished)
    with open_store(store_location) as s:
        assert s.add(interrupted).outcome == "added"
        assert s.add(finished).outcome == "updated"
        assert s.add(interrupted).outcome == "kept"  # an older, incomplete copy never wins
        (stored,) = s.runs()
    assert stored.complete
    with open_store(store_location) as s:
        medians = sorted(r[0] for r in s.db.execute("SELECT median_s FROM records"))
    assert medians == pytest.approx(sorted(r.median_s for r in finished.records))


def test_the_schema_is_versioned_and_a_newer_store_is_refused(store_location):
    with open_store(store_location) as s:
        versions = s.db.execute("SELECT version FROM schema_version")
        assert versions == [(v,) for v in range(1, SCHEMA_VERSION + 1)]  # each applied once, in order
        s.db.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)",
                     (SCHEMA_VERSION + 1, "2030-01-01T00:00:00+00:00"))
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1} is newer"):
        open_store(store_location)


def test_a_store_that_is_not_a_database_is_one_clear_error(tmp_path: Path):
    bad = tmp_path / "notes.sqlite"
    bad.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(StoreError, match="notes.sqlite: file is not a database"):
        open_store(bad)
    with pytest.raises(StoreError, match="is a folder"):
        open_store(tmp_path)
    with pytest.raises(StoreError, match="psycopg|refused|connect|failed"):
        open_store("postgresql://nobody@127.0.0.1:1/none")  # nothing listens on port 1


_IMPORTER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    from synthetic import timed_run
    from arraybench.store import open_store
    location, first, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open_store(location) as s:
        for day in range(first, first + n):
            run = timed_run(day % 28 + 1, torch="2.5." + str(day))  # each a distinct run
            s.add(run)
""")


@pytest.mark.slow
def test_concurrent_writers_lose_nothing(store_location, tmp_path: Path):
    script = tmp_path / "importer.py"
    script.write_text(_IMPORTER.format(tests=str(Path(__file__).resolve().parents[1])))
    procs = [subprocess.Popen([sys.executable, str(script), store_location, str(first), "12"],
                              stderr=subprocess.PIPE, text=True, cwd=ROOT) for first in (0, 100)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
    assert _counts(store_location) == (24, 48)


_SLOW_WRITER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    from synthetic import timed_run
    from arraybench.store import open_store
    s = open_store(sys.argv[1])
    real = s.db.execute
    def execute(sql, params=()):
        out = real(sql, params)
        if sql.startswith("INSERT INTO records"):
            print("mid-write", flush=True)  # the run's row and one record are in, uncommitted
            time.sleep(120)
        return out
    s.db.execute = execute
    s.add(timed_run(9))
""")


def test_a_writer_killed_mid_write_leaves_the_store_consistent(store_location, tmp_path: Path):
    with open_store(store_location) as s:
        s.add(timed_run(1))
    script = tmp_path / "writer.py"
    script.write_text(_SLOW_WRITER.format(tests=str(Path(__file__).resolve().parents[1])))
    proc = subprocess.Popen([sys.executable, str(script), store_location], stdout=subprocess.PIPE,
                            text=True, cwd=ROOT)
    try:
        assert proc.stdout.readline().strip() == "mid-write"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    if not store_location.startswith("postgresql"):
        assert sqlite3.connect(store_location).execute("PRAGMA integrity_check").fetchone() == ("ok",)
    else:
        time.sleep(0.5)  # the server notices the dead client and rolls its transaction back
    assert _counts(store_location) == (1, 2)  # the killed run is absent, not half there
    with open_store(store_location) as s:
        assert s.add(timed_run(9)).outcome == "added"  # and the store takes writes again
    assert _counts(store_location) == (2, 4)


def test_a_real_run_is_stored_and_import_of_its_folder_adds_nothing(store_location, tmp_path: Path):
    store = store_location
    out = tmp_path / "run"
    done = run_here("run", "--backends", "numpy", "--workloads", "matmul", "--sizes", "small", *FAST,
                    "-o", str(out), "--store", str(store), "--context", "commit=abc123",
                    "--context", "branch=main", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    saved = json.loads((out / "results.json").read_text())
    assert saved["environment"]["context"] == {"commit": "abc123", "branch": "main"}
    again = run_here("store", "import", str(out), "--store", str(store), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "already stored" in again.stdout
    listed = run_here("store", "list", "--store", str(store), cwd=tmp_path)
    assert "commit=abc123" in listed.stdout and ": 1 run" in listed.stdout
    assert _counts(str(store)) == (1, 1)


@pytest.mark.slow
def test_two_real_runs_appending_at_once_lose_nothing(store_location, tmp_path: Path):
    procs = [subprocess.Popen(
        [sys.executable, "-m", "arraybench", "run", "--backends", "numpy", "--workloads", "matmul,sort",
         "--sizes", "small", *FAST, "--no-plots", "-o", str(tmp_path / f"run{i}"), "--store", store_location],
        cwd=ROOT, stderr=subprocess.PIPE, text=True) for i in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0 and "warning" not in err, err[-2000:]
    assert _counts(store_location) == (2, 4)


def test_every_run_goes_to_the_default_store_in_the_user_data_folder(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    import arraybench

    arraybench.run(workloads="matmul", backends="numpy", devices="cpu", sizes="small",
                   processes=1, max_time=0.05, min_samples=3)
    default = tmp_path / "xdg" / "arraybench" / "results.sqlite"
    assert _counts(str(default)) == (1, 1)
    arraybench.run(workloads="matmul", backends="numpy", devices="cpu", sizes="small",
                   processes=1, max_time=0.05, min_samples=3, store=False)
    assert _counts(str(default)) == (1, 1)  # store=False: nowhere
    other = tmp_path / "elsewhere.sqlite"
    arraybench.run(workloads="matmul", backends="numpy", devices="cpu", sizes="small",
                   processes=1, max_time=0.05, min_samples=3, store=other)
    assert _counts(str(other)) == (1, 1)


def test_an_unreachable_store_is_one_warning_line_and_the_run_still_succeeds(tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    out = tmp_path / "run"
    done = run_here("run", "--backends", "numpy", "--workloads", "matmul", "--sizes", "small", *FAST,
                    "-o", str(out), "--store", str(blocker / "store.sqlite"), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("arraybench: warning: the run was not stored:")
    assert f"arraybench store import {out.resolve()}" in lines[0]
    assert json.loads((out / "results.json").read_text())["complete"] is True
    assert (out / "report.html").is_file()


def test_store_options_come_from_the_project_file_and_contradictions_are_refused(tmp_path: Path):
    project = tmp_path / "pyproject.toml"
    store = tmp_path / "project.sqlite"
    project.write_text(f'[tool.arraybench]\nstore = "{store}"\ncontext = ["team=ml"]\n')
    env = {"ARRAYBENCH_CONFIG": str(project)}
    done = run_here("run", "--backends", "numpy", "--workloads", "matmul", "--sizes", "small", *FAST,
                    "-o", str(tmp_path / "run"), cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    assert _counts(str(store)) == (1, 1)
    listed = run_here("store", "list", cwd=ROOT, env=env)  # reading commands use the project's store too
    assert "team=ml" in listed.stdout
    both = run_here("run", "--store", str(store), "--no-store", cwd=ROOT, env=env)
    assert both.returncode == 2 and both.stderr.count("\n") == 1 and "contradict" in both.stderr
    bad = run_here("run", "--context", "no-equals-sign", "-o", str(tmp_path / "x"), cwd=ROOT)
    assert bad.returncode == 2 and "is not key=value" in bad.stderr and not (tmp_path / "x").exists()


def test_import_reads_what_it_can_and_says_which_it_could_not(tmp_path: Path):
    good = tmp_path / "good"
    good.mkdir()
    timed_run(3).save(good / "results.json")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "results.json").write_text('{"tool": "arraybench", "schema_v')
    store = tmp_path / "s.sqlite"
    done = run_here("store", "import", str(broken), str(good), str(tmp_path / "missing"),
                    "--store", str(store), cwd=tmp_path)
    assert done.returncode == 2
    assert "added" in done.stdout and "2 could not be read" in done.stdout
    assert "not valid JSON" in done.stderr and "no such file" in done.stderr
    assert _counts(str(store)) == (1, 2)
