"""A parent that dies while a worker's process group is paused (SIGSTOP while another library has
its turn) leaves no process stopped: not the worker, not what its workload started. For real: a
workload whose first call starts a helper process, a run whose two environments take turns, and
the parent killed with SIGKILL (no clean-up runs) or sent SIGHUP (a closed terminal) while a
helper is stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arraybench import load_results
from arraybench.executors.session import stop_signals

from ..conftest import signals_setup

# Process groups stopped and their parent killed: real process trees.
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

#: Marks the helpers this test's workload starts, so that clean-up ends only those.
MARK = "arraybench-test-stopped-helper"

WORKLOADS = f'''
import os, subprocess, sys, time
from pathlib import Path

import arraybench

HERE = Path(__file__).resolve().parent
_started = []


@arraybench.workload(sizes={{"small": 8}}, namespace="native", reference=lambda x: x + 0.0)
def with_helper(xp, x):
    """Starts a helper once per process (in its process group), then takes 0.1 s a call."""
    if not _started:
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "{MARK}"])
        _started.append(helper)
        (HERE / f"helper-{{helper.pid}}").write_text("")
    time.sleep(0.1)
    return x + 0.0
'''


def _state(pid: int) -> str:
    """The process's state letter ("" where it is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return ""


def _ours(pid: int) -> bool:
    try:
        return MARK in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False


def _helpers(folder: Path) -> list[int]:
    return [int(p.name.split("-")[1]) for p in folder.glob("helper-*")]


def _left(folder: Path) -> dict[int, str]:
    """The helpers still there, running or stopped, with their state."""
    return {pid: state for pid in _helpers(folder) if (state := _state(pid)) not in ("", "Z", "X")}


def _start(folder: Path) -> subprocess.Popen:
    (folder / "helpers.py").write_text(WORKLOADS)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.Popen(
        [sys.executable, "-m", "arraybench", "run", "--workload-file", str(folder / "helpers.py"),
         "--workloads", "with_helper", "--backends", "numpy", "--devices", "cpu",
         "--variant", "a:AB_TEST_SIDE=a", "--variant", "b:AB_TEST_SIDE=b", "--processes", "1",
         "--max-time", "60", "--min-samples", "500", "--rel-ci", "0.0001", "-q", "--no-plots", "--no-store",
         "-o", str(folder / "out")],
        cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=signals_setup())


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGHUP], ids=["SIGKILL", "SIGHUP"])
def test_no_process_is_left_stopped_when_the_parent_dies(tmp_path: Path, signum: int):
    proc = _start(tmp_path)
    try:
        # Both environments' workers took turns long enough for each to start its helper, and
        # one helper is stopped now: its worker's group is paused while the other samples.
        deadline = time.monotonic() + 120
        while not (len(_helpers(tmp_path)) == 2 and any(_state(p) == "T" for p in _helpers(tmp_path))):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no helper was ever seen stopped"
            time.sleep(0.005)
        os.kill(proc.pid, signum)
        _, stderr = proc.communicate(timeout=60)
        # Gone (or a zombie, which no longer runs) within a bounded wait; never stopped.
        deadline = time.monotonic() + 10
        while _left(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _left(tmp_path) == {}
        if signum == signal.SIGHUP:  # handled as SIGTERM is: what was measured kept, and how to go on
            assert proc.returncode == 128 + signal.SIGHUP, stderr
            assert "stopped by SIGHUP" in stderr and "Traceback" not in stderr
            assert f"Continue with: arraybench run --resume {tmp_path / 'out'}" in stderr
            assert load_results(tmp_path / "out" / "results.json").complete is False
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for pid in _helpers(tmp_path):
            if _ours(pid):  # left behind by a failure: ended here, by its own id
                os.kill(pid, signal.SIGKILL)


def test_a_hangup_the_user_chose_to_ignore_stays_ignored():
    """Under ``nohup`` SIGHUP is ignored: a run goes on when its terminal closes. A handler the
    program set for SIGUSR1 stays its own."""
    hup, usr1 = signal.getsignal(signal.SIGHUP), signal.getsignal(signal.SIGUSR1)
    try:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGUSR1, lambda *_: None)
        assert signal.SIGHUP not in stop_signals() and signal.SIGUSR1 not in stop_signals()
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        assert {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1} <= set(stop_signals())
    finally:
        signal.signal(signal.SIGHUP, hup)
        signal.signal(signal.SIGUSR1, usr1)
