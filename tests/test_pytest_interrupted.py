"""The pytest plugin never loses the session's run, nor shows a traceback, at its end: Ctrl-C
while another session holds the store's lock keeps the run in a results.json and says where; a
store that fails where no fallback file can be written either is one line, not an INTERNALERROR."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import tempfile
from pathlib import Path

import pytest

from .test_pytest_plugin import run

pytest_plugins = ["pytester"]

# pytest sessions of their own, interrupted by signals.
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def ctrl_c_raises():
    """Ctrl-C as a terminal delivers it to a Python program, whatever disposition of SIGINT an
    earlier test in this process (or the runner that started it) left: these sessions run in
    this process, and a SIGINT ignored or handled elsewhere never reaches them."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if previous is not None:  # None: set outside Python, and not ours to restore
        signal.signal(signal.SIGINT, previous)

ONE = '''
def test_fine(arraybench_run):
    def fine(xp, x):
        return x + 1
    arraybench_run(fine, sizes=[10], max_time=0.02, min_samples=2)
'''

#: Runs before the plugin's own end of session (tryfirst): the test's damage, at that moment.
AT_THE_END = '''
import os, signal, tempfile, threading
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    {action}
'''


#: Sends Ctrl-C to this process once its main thread waits on the store's lock.
CTRL_C_ONCE_WAITING = '''

def ctrl_c_once_waiting():
    import sys, time
    main = threading.main_thread().ident
    deadline = time.monotonic() + 50
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(main)
        while frame is not None and frame.f_code.co_name != "_patiently":
            frame = frame.f_back
        if frame is not None:
            time.sleep(0.2)  # inside the wait, past its first try
            os.kill(os.getpid(), signal.SIGINT)
            return
        time.sleep(0.01)
'''


def test_ctrl_c_while_another_session_holds_the_store_keeps_the_run(pytester, tmp_path, registry_restored):
    store = tmp_path / "store.sqlite"
    from arraybench.store import open_store

    with open_store(store):
        pass  # the store exists, with its tables, before the other session locks it
    pytester.makepyfile(test_one=ONE)
    # Ctrl-C once the store waits for the lock (a fixed delay would land elsewhere on a busy machine).
    pytester.makeconftest(AT_THE_END.format(action="threading.Thread(target=ctrl_c_once_waiting, daemon=True).start()")
                          + CTRL_C_ONCE_WAITING)
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # a second session, writing
    try:
        result = run(pytester, "--arraybench-backends=numpy", "--arraybench-processes=1",
                     f"--arraybench-store={store}", "--arraybench-save")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, text
    assert "Traceback" not in text and "INTERNALERROR" not in text
    found = re.search(r"interrupted before the run was stored; the run is kept in (\S+results\.json)", text)
    assert found, text
    from arraybench import load_results

    kept = Path(found.group(1))
    try:
        [record] = load_results(kept).records
        assert record.workload == "fine" and record.status == "ok"
    finally:
        shutil.rmtree(kept.parent)
    assert "- arraybench -" in text  # the session's table is still shown


def test_a_store_that_fails_with_no_room_for_the_fallback_is_one_line(pytester, tmp_path,
                                                                     registry_restored, monkeypatch):
    not_a_folder = tmp_path / "tmp-is-a-file"
    not_a_folder.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", tempfile.gettempdir())  # put back after the test
    pytester.makepyfile(test_one=ONE)
    pytester.makeconftest(AT_THE_END.format(action=f"tempfile.tempdir = {str(not_a_folder)!r}"))
    folder = tmp_path / "a-folder"
    folder.mkdir()
    result = run(pytester, "--arraybench-backends=numpy", "--arraybench-processes=1",
                 f"--arraybench-store={folder}", "--arraybench-save")
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text, text
    result.assert_outcomes(passed=1)
    assert re.search(r"the run was not stored: .*; nor could it be kept in a results\.json under "
                     + re.escape(str(not_a_folder)) + r" \(Not a directory\)", text), text


#: A test whose second worker process sends Ctrl-C to the session (this process) at its first call.
STOPPED_IN_A_TEST = '''
import os, pathlib, signal

def test_stopped(arraybench_run):
    here = pathlib.Path({here!r})
    SESSION = {session}

    def stopper(xp, x):
        mine = here / f"pid-{os.getpid()}"
        if not any(here.glob("pid-*")):
            mine.touch()
        elif not mine.exists() and not (here / "sent").exists():
            (here / "sent").touch()
            os.kill(SESSION, signal.SIGINT)
        return x + 1
    arraybench_run(stopper, sizes=[10], max_time=0.02, min_samples=2, processes=3)
'''


def test_ctrl_c_during_a_test_shows_the_table_and_names_the_kept_folder(pytester, registry_restored):
    pytester.makepyfile(test_stopped=STOPPED_IN_A_TEST.replace("{here!r}", repr(str(pytester.path))).replace(
        "{session}", str(os.getpid())))
    result = run(pytester, "--arraybench-backends=numpy")
    text = result.stdout.str() + result.stderr.str()
    assert (pytester.path / "sent").exists(), text  # the damage was done
    assert result.ret == pytest.ExitCode.INTERRUPTED, text
    assert "Traceback" not in text and "INTERNALERROR" not in text
    assert "- arraybench -" in text and "stopper" in text  # the session's table
    found = re.search(r"the run was interrupted \(SIGINT\); what it measured is in the session's run, "
                      r"and kept in (\S+) \(delete it when done\)", text)
    assert found, text
    kept = Path(found.group(1))
    try:
        assert (kept / "journal.jsonl").is_file()
    finally:
        shutil.rmtree(kept)
