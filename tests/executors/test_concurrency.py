"""Runs that meet in one output folder, and runs killed without a word.

Two real ``arraybench run`` processes into one folder: the second is refused in one line while
the first holds the folder's lock, and the first is unharmed. A run killed by SIGKILL (or stopped by SIGHUP)
leaves no stale lock, and its journal, not an older results.json beside it, says that it is
unfinished: a plain re-run refuses to wipe it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arraybench.model import journal
from arraybench import load_results

from ..conftest import signals_setup, run_here, wait_for

DATA = Path(__file__).resolve().parents[1] / "data"
# ``bimodal`` samples for its whole budget: with --max-time 2 a run lasts a couple of seconds.
SLOW = ("--workloads", "bimodal,ok_a", "--sizes", "small", "--backends", "numpy", "--devices",
        "cpu", "--processes", "2", "--max-time", "2", "--min-samples", "6", "--rel-ci", "0.3",
        "-q", "--no-plots")
QUICK = ("--workloads", "ok_a,ok_b", "--sizes", "small", "--backends", "numpy", "--devices", "cpu",
         "--processes", "1", "--max-time", "0.05", "--min-samples", "3", "-q", "--no-plots")


# Runs started together and killed: real processes racing for one folder.
pytestmark = pytest.mark.slow


def start(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "arraybench", "run", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=signals_setup())


def replicates(out: Path) -> list[dict]:
    text = (out / "journal.jsonl").read_text() if (out / "journal.jsonl").exists() else ""
    return [json.loads(line) for line in text.splitlines()
            if line.endswith("}") and '"type": "replicate"' in line]


def holds_lock(out: Path, proc: subprocess.Popen) -> bool:
    lock = out / ".arraybench.lock"
    return lock.exists() and lock.read_text().strip() == str(proc.pid)


def test_a_second_run_into_a_busy_folder_is_refused_and_the_first_is_unharmed(
        workload_file: Path, tmp_path: Path):
    out = tmp_path / "out"
    first = run_here("run", "--workload-file", str(workload_file), *QUICK, "-o", str(out), cwd=tmp_path)
    assert first.returncode == 0, first.stderr  # a finished run: --overwrite may replace it
    a = start("--workload-file", str(workload_file), *SLOW, "-o", str(out), "--overwrite", cwd=tmp_path)
    wait_for(lambda: holds_lock(out, a), a)
    b = run_here("run", "--workload-file", str(workload_file), *QUICK, "-o", str(out), cwd=tmp_path)
    assert b.returncode == 2
    assert b.stderr.strip().splitlines() == [
        f"arraybench: error: {out}: another arraybench run is writing there (process {a.pid}); "
        "wait for it to end, or choose another --output-dir"]
    resumed = run_here("run", "--resume", str(out), "-q", cwd=tmp_path)  # --resume too
    assert resumed.returncode == 2 and "another arraybench run is writing there" in resumed.stderr
    # Both refused: what is left of the first run's budget shows nothing more (bimodal converges at once).
    (tmp_path / "calm").write_text("")
    _, stderr = a.communicate(timeout=180)
    assert a.returncode == 0, stderr
    state = journal.read(out)  # whole, and only the first run's: no NUL, no lost header
    assert sorted({c.workload for c in state.cells}) == ["bimodal", "ok_a"]
    assert b"\0" not in (out / "journal.jsonl").read_bytes()
    res = load_results(out / "results.json")
    assert res.complete and sorted(r.workload for r in res.records) == ["bimodal", "ok_a"]
    assert all(r.status == "ok" and r.n_replicates == 2 for r in res.records)
    again = run_here("run", "--resume", str(out), "-q", "--no-plots", cwd=tmp_path)
    assert again.returncode == 0 and "every cell is already measured" in again.stderr


def test_runs_starting_together_in_an_empty_folder_never_collide(workload_file: Path,
                                                                 tmp_path: Path):
    out = tmp_path / "out"
    runs = [start("--workload-file", str(workload_file), *SLOW, "-o", str(out), cwd=tmp_path)
            for _ in range(4)]
    # Once three have ended (refused, or one that started after another had finished), the one
    # left shows nothing more by sampling its whole budget: bimodal converges at once from then on.
    deadline = time.monotonic() + 300
    while sum(p.poll() is not None for p in runs) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    (tmp_path / "calm").write_text("")
    done = [(p.returncode, err) for p in runs for _, err in [p.communicate(timeout=300)]]
    assert "cannot write there" not in "".join(err for _, err in done)  # no shared probe file
    assert "Traceback" not in "".join(err for _, err in done)
    codes = sorted(code for code, _ in done)
    # One holds the folder at a time; a run that started after another had finished succeeds too.
    assert codes[0] == 0 and set(codes) <= {0, 2}
    for code, err in done:
        if code == 2:
            assert "another arraybench run is writing there" in err
    res = load_results(out / "results.json")
    assert res.complete and all(r.status == "ok" for r in res.records)
    pairs = [(e["key"], e["index"]) for e in replicates(out)]
    assert len(pairs) == len(set(pairs)) == 4  # one run's journal, each measurement once


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGHUP], ids=["SIGKILL", "SIGHUP"])
def test_a_killed_run_leaves_no_lock_and_is_not_wiped_by_a_plain_rerun(
        signum: int, workload_file: Path, tmp_path: Path):
    out = tmp_path / "out"
    first = run_here("run", "--workload-file", str(workload_file), *QUICK, "-o", str(out), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert load_results(out / "results.json").complete  # an older, finished run

    a = start("--workload-file", str(workload_file), *SLOW, "-o", str(out), "--overwrite", cwd=tmp_path)
    # Process 0 of this run has been journalled (bimodal is not in the older run).
    wait_for(lambda: any(e["key"].startswith("bimodal|") for e in replicates(out)), a)
    os.kill(a.pid, signum)
    a.communicate(timeout=60)
    if signum == signal.SIGKILL:  # no handler runs: nothing is saved on the way out
        assert a.returncode == -signum
        # --overwrite removed the older run's files before it began: none is mixed with this run's.
        assert not (out / "results.json").exists() and not list(out.glob("*.svg"))
    else:  # a hangup stops the run as SIGTERM does: what it measured is saved, as its own
        assert a.returncode == 128 + signum
        assert load_results(out / "results.json").complete is False
    kept = (out / "journal.jsonl").read_bytes()

    plain = run_here("run", "--workload-file", str(workload_file), *QUICK, "-o", str(out), cwd=tmp_path)
    assert plain.returncode == 2
    assert plain.stderr.strip().splitlines() == [
        f"arraybench: error: {out} holds an unfinished run; continue it with `arraybench run "
        f"--resume {out}`, or start afresh with --overwrite"]
    assert (out / "journal.jsonl").read_bytes() == kept

    # The kernel dropped the killed run's lock: --resume goes on at once.
    (tmp_path / "calm").write_text("")  # bimodal converges at once from now on
    resumed = run_here("run", "--resume", str(out), "-q", "--no-plots", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "journal.jsonl").read_bytes().startswith(kept)
    res = load_results(out / "results.json")
    assert res.complete and sorted(r.workload for r in res.records) == ["bimodal", "ok_a"]


def test_a_command_a_test_starts_acts_on_sighup_even_under_nohup():
    """nohup leaves SIGHUP ignored, and an ignored signal survives exec: the SIGHUP test above
    would see its run ignore the hangup. The tests' children get the default disposition."""
    show = "import signal; print(signal.getsignal(signal.SIGHUP).name)"
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        proc = subprocess.Popen([sys.executable, "-c", show], stdout=subprocess.PIPE, text=True,
                                preexec_fn=signals_setup())
        inherited = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True)
    finally:
        signal.signal(signal.SIGHUP, previous)
    assert proc.communicate(timeout=60)[0].strip() == "SIG_DFL"
    assert inherited.stdout.strip() == "SIG_IGN"  # what a plain Popen would have given
