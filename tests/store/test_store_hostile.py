"""A hostile or busy results store: an edited copy of a stored run never
replaces it; rows of the wrong type are skipped with a note, never a traceback, and never cost a
run its report; a table lock held by another session is given up after the timeout; Ctrl-C and
SIGTERM while a run waits on a locked store act at once and still write the report and say how
to go on; and no password in a store's URL is ever printed.

The locks are real: a second SQLite connection in ``BEGIN EXCLUSIVE``, a second PostgreSQL
session holding ``LOCK TABLE runs``.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from arraybench.model.replicate import Replicate
from arraybench.store import StoreWarning, open_store
from arraybench.store import database
from arraybench.store.store import store_run
from arraybench.store.database import describe_location, redact
from arraybench.store.store import REFUSED

from ..conftest import FAST, ROOT, signals_setup, run_here, wait_for
from ..synthetic import timed_run


def _run_with_id(day: int = 1, **kwargs):
    run = timed_run(day, **kwargs)
    run.environment["run_id"] = "0123456789abcdef"
    return run


# -- family 4: same run id ----------------------------------------------------------------------

def test_a_copy_that_lacks_the_stored_measurements_is_refused(store_location):
    stored = _run_with_id(1)
    edited = _run_with_id(1, numpy_s=5e-3)  # the same run id, other samples: an edited results.json
    more = _run_with_id(1)  # the same run gone on: every stored replicate, and one more
    more.records[0].replicates = [*more.records[0].replicates, Replicate(status="ok", samples_s=[1e-3], number=1)]
    with open_store(store_location) as s:
        assert s.add(stored).outcome == "added"
        assert s.add(edited).outcome == REFUSED
        assert s.results(stored.environment["run_id"]).to_dict() == stored.to_dict()  # untouched
        assert s.add(more).outcome == "updated"


def test_store_import_of_an_edited_copy_refuses_it_in_one_line(tmp_path: Path):
    store = tmp_path / "s.sqlite"
    with open_store(store) as s:
        s.add(_run_with_id(1))
    (tmp_path / "edited").mkdir()
    _run_with_id(1, numpy_s=5e-3).save(tmp_path / "edited" / "results.json")
    done = run_here("store", "import", str(tmp_path / "edited"), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "refused" in done.stderr and "0123456789abcdef" in done.stderr
    with open_store(store) as s:
        assert [r.records for r in s.runs()] == [2]
        assert s.db.execute("SELECT median_s FROM records ORDER BY backend")[0][0] == pytest.approx(1e-3, rel=0.05)


# -- family 4: poisoned rows --------------------------------------------------------------------

def _poison(path: Path) -> None:
    """Four runs, each with one value of the wrong type, written past arraybench (SQLite keeps
    whatever it is given)."""
    with open_store(path) as s:
        for day in (1, 2, 3, 4, 5):
            s.add(timed_run(day, context={"day": str(day)}))
        ids = [r.run_id for r in s.runs()]
    db = sqlite3.connect(path)
    db.execute("UPDATE records SET median_s = 'fast' WHERE run_id = ?", (ids[0],))
    db.execute("UPDATE runs SET context = '[1, 2]' WHERE run_id = ?", (ids[1],))
    db.execute("UPDATE runs SET environment = '\"a string\"' WHERE run_id = ?", (ids[2],))
    db.execute("UPDATE records SET size = 'big' WHERE run_id = ?", (ids[3],))
    db.commit()
    db.close()


def test_rows_of_the_wrong_type_are_skipped_with_a_note(tmp_path: Path):
    store = tmp_path / "poisoned.sqlite"
    _poison(store)
    with open_store(store) as s:
        runs = s.runs()
        entries, infos = s.entries()
        notes = s.notes
    assert len(runs) == 4  # the run whose context is a list is left out of the list
    assert {e.run_id for e in entries} == set(infos) and len(infos) == 1  # the one sound run
    assert any("median_s" in n for n in notes) and any("context: expected an object, got list" in n for n in notes)
    assert any("environment" in n for n in notes) and any("size" in n for n in notes)
    for command in (["history", "--no-plots"], ["store", "list"]):
        done = run_here(*command, "--store", str(store), cwd=tmp_path)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert "arraybench: warning: store" in done.stderr and "skipped" in done.stderr


def test_a_stored_time_beyond_any_run_is_skipped_with_a_note(tmp_path: Path):
    store = tmp_path / "absurd.sqlite"
    with open_store(store) as s:
        for day in (1, 2):
            s.add(timed_run(day))
        first = s.runs()[-1].run_id  # newest first: day 1
    db = sqlite3.connect(store)
    db.execute("UPDATE records SET median_s = 1e308 WHERE run_id = ?", (first,))
    db.commit()
    db.close()
    with open_store(store) as s:
        entries, infos = s.entries()
        notes = s.notes
    assert first not in infos and len(infos) == 1
    assert any("median_s: 1e+308 is above" in n for n in notes), notes


@pytest.mark.slow
def test_a_run_into_a_poisoned_store_is_stored_and_reported(tmp_path: Path):
    store = tmp_path / "store.sqlite"
    args = ("run", "--backends", "numpy", "--workloads", "matmul", "--sizes", "small", *FAST,
            "--no-plots", "--store", str(store))
    first = run_here(*args, "-o", str(tmp_path / "one"), cwd=ROOT)
    assert first.returncode == 0, first.stderr
    db = sqlite3.connect(store)  # the run's own cell, on this machine: what the next report's history reads
    db.execute("UPDATE records SET median_s = 'fast', ci_low_s = '[' ")
    db.execute("UPDATE runs SET context = '[\"a\", \"list\"]', settings = '7'")
    db.commit()
    db.close()
    second = run_here(*args, "-o", str(tmp_path / "two"), cwd=ROOT)
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr[-2000:]
    assert "not stored" not in second.stderr  # it was stored: no warning says otherwise
    assert (tmp_path / "two" / "report.html").is_file()
    assert json.loads((tmp_path / "two" / "results.json").read_text())["complete"] is True
    with open_store(store) as s:
        assert s.db.execute("SELECT COUNT(*) FROM runs")[0][0] == 2


# -- family 4: locks ----------------------------------------------------------------------------

@contextlib.contextmanager
def _locked(location: str):
    """The store at ``location``, locked by a second session until the block ends."""
    with open_store(location):
        pass  # created and migrated first: the lock is on a store as runs find it
    if location.startswith("postgresql"):
        import psycopg

        conn = psycopg.connect(location)
        conn.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")  # in the session's transaction
        try:
            yield
        finally:
            conn.rollback()
            conn.close()
    else:
        conn = sqlite3.connect(location, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
            conn.close()


def test_a_store_locked_elsewhere_is_given_up_after_the_timeout(store_location, monkeypatch):
    monkeypatch.setattr(database, "BUSY_TIMEOUT", 1.0)
    run = timed_run(1)
    with _locked(store_location):
        started = time.monotonic()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            store_run(run, store_location)
        waited = time.monotonic() - started
    assert waited < 15, waited  # not for ever (PostgreSQL had no lock_timeout at all)
    (warning,) = [w for w in caught if issubclass(w.category, StoreWarning)]
    assert "the run was not stored" in str(warning.message) and "gave up after 1 s" in str(warning.message)
    with open_store(store_location) as s:
        assert s.runs() == []
    store_run(run, store_location)  # once the lock is gone, it goes in
    with open_store(store_location) as s:
        assert len(s.runs()) == 1


@pytest.mark.parametrize("signum,kind", [pytest.param(signal.SIGINT, "postgresql", marks=pytest.mark.postgres),
                                         (signal.SIGTERM, "sqlite")])
@pytest.mark.slow
def test_a_signal_while_waiting_on_a_locked_store_acts_at_once(signum, kind, tmp_path: Path, request):
    location = (request.getfixturevalue("postgres").new_database() if kind == "postgresql"
                else str(tmp_path / "store.sqlite"))
    out = tmp_path / "run"
    with _locked(location):
        proc = subprocess.Popen(
            [sys.executable, "-m", "arraybench", "run", "--backends", "numpy", "--workloads", "matmul",
             "--sizes", "small", *FAST, "--no-plots", "-o", str(out), "--store", location],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=signals_setup())
        try:
            wait_for(lambda: (out / "results.json").is_file(), proc)  # measured: now it waits on the store
            time.sleep(1.0)
            assert proc.poll() is None
            sent = time.monotonic()
            proc.send_signal(signum)
            _, err = proc.communicate(timeout=30)
            acted = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert acted < 10, acted  # SQLite's own wait ignored Ctrl-C for up to 60 s
    assert proc.returncode == 128 + signum, err[-2000:]
    assert "Traceback" not in err
    assert f"stopped by {signal.Signals(signum).name} while storing the run" in err
    assert f"arraybench run --resume {out}" in err
    assert (out / "report.html").is_file()
    assert json.loads((out / "results.json").read_text())["complete"] is True


# -- family 5: secrets --------------------------------------------------------------------------

SECRET_URLS = ["postgresql://ann:hunter2@127.0.0.1:1/db",
               "postgresql://ann@127.0.0.1:1/db?password=hunter2&sslmode=disable",
               "postgresql://ann:hunter2@[bad/db?password=hunter2",  # psycopg quotes this one whole
               "postgresql://ann:hunter2@127.0.0.1:notaport/db",
               "postgresql://ann:hunter%32@127.0.0.1:1/db"]


@pytest.mark.parametrize("url", SECRET_URLS)
def test_no_password_in_what_a_store_says(url):
    assert "hunter" not in describe_location(url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store_run(timed_run(1), url, source="/somewhere")
    (warning,) = caught
    assert "the run was not stored" in str(warning.message) and "hunter" not in str(warning.message)
    assert "***" in str(warning.message)


def test_no_password_on_the_command_line_or_in_info(tmp_path: Path):
    from arraybench import config
    from arraybench.commands.main import build_parser
    from arraybench.commands.info import project_defaults

    bad = run_here("history", "--no-plots", "--store", SECRET_URLS[2], cwd=tmp_path)
    assert bad.returncode == 2 and "hunter" not in bad.stderr + bad.stdout and "***" in bad.stderr
    project = tmp_path / "pyproject.toml"
    project.write_text(f'[tool.arraybench]\nstore = "{SECRET_URLS[1]}"\n')
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    shown = project_defaults(config.load(run_parser, project))
    assert shown["options"]["store"] == "postgresql://ann@127.0.0.1:1/db?password=***&sslmode=disable"
    assert redact("connect to 'host=h password=hunter2 user=u'") == "connect to 'host=h password=*** user=u'"
