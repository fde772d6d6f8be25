"""Real signals sent to a real ``arraybench run``: Ctrl-C, SIGTERM and SIGKILL mid-run, then
``--resume``. What was measured before the signal is kept, byte for byte, and the resumed run
measures only what is missing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from arraybench import load_results
from arraybench.worker.protocol import Board

from ..conftest import signals_setup, run_here, wait_for

# Real signals to real runs, each then resumed: out of the quick lane.
pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[1] / "data"
# Two processes: process 0 finishes (its replicates are journalled), then the signal lands in process 1.
# ``bimodal`` samples for its whole budget (0.5 s per process), so each process lasts about a second.
RUN = ("--workloads", "bimodal,ok_a,ok_b", "--sizes", "small", "--backends", "numpy",
       "--devices", "cpu", "--processes", "2", "--max-time", "1", "--min-samples", "6",
       "--rel-ci", "0.3")


def start(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "arraybench", "run", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "200"}, preexec_fn=signals_setup())


def entries(out: Path) -> list[dict]:
    path = out / "journal.jsonl"
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]


def replicate_pairs(out: Path) -> Counter:
    return Counter((e["key"], e["index"]) for e in entries(out) if e["type"] == "replicate")


def process_done(out: Path, process: int, cells: int) -> bool:
    return sum(1 for (_, p) in replicate_pairs(out) if p == process) >= cells


def samples_by_pair(out: Path) -> dict:
    return {(e["key"], e["index"]): e["replicate"].get("samples_s") for e in entries(out)
            if e["type"] == "replicate"}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_keeps_what_was_measured_and_resume_finishes_the_run(
        signum, workload_file: Path, tmp_path: Path):
    out = tmp_path / "out"
    proc = start("--workload-file", str(workload_file), *RUN, "-o", str(out), cwd=tmp_path)
    wait_for(lambda: process_done(out, 0, 3), proc)
    before = samples_by_pair(out)
    os.kill(proc.pid, signum)
    stdout, stderr = proc.communicate(timeout=60)

    assert proc.returncode == 128 + signum, stderr  # 130 for Ctrl-C, 143 for SIGTERM
    assert "Traceback" not in stderr
    name = signal.Signals(signum).name
    assert f"stopped by {name}" in stderr
    assert f"Continue with: arraybench run --resume {out}" in stderr
    assert "stopping: keeping the measurements already made" in stderr  # said at once
    partial = load_results(out / "results.json")
    assert partial.complete is False
    # Everything journalled before the signal is still there, unchanged.
    after_stop = samples_by_pair(out)
    assert {k: after_stop[k] for k in before} == before
    for r in partial.records:
        if r.n_replicates == 0:
            assert r.reason == "not measured (run interrupted; continue with --resume)"
        else:
            assert r.status == "ok" and r.samples_s
    # Plots of what was measured were drawn (ok_a and ok_b were measured by process 0 at least).
    assert (out / "ok_a_small.svg").exists() and (out / "ok_b_small.svg").exists()
    assert not list(out.glob(".*.tmp"))  # no temporary file of an atomic write left behind

    if signum == signal.SIGINT:
        _refuses_other_settings(out, tmp_path)
    # What resuming keeps and adds is the same whatever bimodal's samples: they converge at once
    # now, instead of for the whole budget. Resuming is an ordinary command: in this process.
    (tmp_path / "calm").write_text("")
    resumed = run_here("run", "--resume", str(out), "-q", "--no-plots", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    final = load_results(out / "results.json")
    assert final.complete
    assert all(r.status == "ok" and r.n_replicates == 2 for r in final.records)
    pairs = replicate_pairs(out)
    assert set(pairs.values()) == {1}  # every (cell, process) measured exactly once
    assert len(pairs) == 3 * 2
    # The final records pool the earlier replicates with the new ones: process 0's samples come first.
    everything = samples_by_pair(out)
    assert {k: everything[k] for k in after_stop} == after_stop
    for r in final.records:
        assert r.samples_s == everything[(r.key, 0)] + everything[(r.key, 1)]

    if signum == signal.SIGINT:  # resuming a finished run measures nothing and says so
        again = run_here("run", "--resume", str(out), "-q", "--no-plots", cwd=tmp_path)
        assert again.returncode == 0
        assert "every cell is already measured" in again.stderr
        assert replicate_pairs(out) == pairs


def _refuses_other_settings(out: Path, cwd: Path) -> None:
    """A resume that asks for other settings is refused, and changes nothing."""
    journal_bytes = (out / "journal.jsonl").read_bytes()
    results_bytes = (out / "results.json").read_bytes()
    refused = run_here("run", "--resume", str(out), "--dtype", "float32", cwd=cwd)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "arraybench: error: --resume uses the run's own settings; these differ: "
        "dtype (saved 'float64', given 'float32')"]
    assert (out / "journal.jsonl").read_bytes() == journal_bytes
    assert (out / "results.json").read_bytes() == results_bytes


def test_the_worker_hands_over_finished_cells_when_asked_to_stop(workload_file: Path,
                                                                tmp_path: Path):
    """SIGTERM mid-worker: ok_a has finished sampling, bimodal never finishes; the worker sends
    ok_a's replicate before it goes (the replicates of a batch otherwise come at its end)."""
    out = tmp_path / "out"
    proc = start("--workload-file", str(workload_file), "--workloads", "bimodal,ok_a",
                 "--sizes", "small", "--backends", "numpy", "--devices", "cpu",
                 "--processes", "1", "--max-time", "60", "--min-samples", "10", "--rel-ci", "0.3",
                 "-q", "--no-plots", "-o", str(out), cwd=tmp_path)
    wait_for(lambda: (tmp_path / "bimodal_calls.txt").exists(), proc)
    wait_for(_one_cell_samples_alone(out), proc, timeout=600)  # ok_a's own sampling is over
    assert replicate_pairs(out) == Counter()  # nothing sent yet: both cells are in one batch
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    partial = {r.workload: r for r in load_results(out / "results.json").records}
    assert partial["ok_a"].status == "ok" and partial["ok_a"].n_samples >= 10, (partial["ok_a"].reason, stderr)
    assert partial["bimodal"].n_samples == 0  # partly sampled: dropped, to be measured in full
    assert "continue with --resume" in partial["bimodal"].reason
    kept = samples_by_pair(out)
    assert list(kept) == [("ok_a|small|numpy|cpu|float64|latency", 0)]

    (tmp_path / "calm").write_text("")  # bimodal now converges at once
    resumed = run_here("run", "--resume", str(out), "-q", "--no-plots", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    final = {r.workload: r for r in load_results(out / "results.json").records}
    assert final["bimodal"].status == "ok"
    assert final["ok_a"].samples_s == kept[("ok_a|small|numpy|cpu|float64|latency", 0)]
    assert set(replicate_pairs(out).values()) == {1}


def _one_cell_samples_alone(out: Path):
    """A condition: the worker's heartbeat board showed one cell take three turns in a row.

    While two cells sample, each round gives each of them one turn (one mark on the board), in
    either order; three marks of one cell in a row span a whole round that the other sat out, its
    own sampling over. How long that takes depends on the machine's load, so the test waits for
    it rather than for a time."""
    seen: dict[int, int] = {}  # the cell marked, by the board's counter

    def condition() -> bool:
        boards = list(out.glob("logs/*.board"))  # one worker, one board
        deadline = time.monotonic() + 0.5
        while boards and time.monotonic() < deadline:  # a turn lasts 11 ms at least: read within one
            cell, counter = Board.read(boards[0])
            if counter > 0:
                seen[counter] = cell
            time.sleep(0.002)
        return any(seen.get(c + 1) == seen.get(c + 2) == cell for c, cell in seen.items())
    return condition


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # a zombie no longer runs; only its exit status is left


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG is Linux's")
def test_sigkill_of_the_parent_leaves_a_journal_to_resume_from(workload_file: Path,
                                                              tmp_path: Path):
    out = tmp_path / "out"
    proc = start("--workload-file", str(workload_file), *RUN, "-q", "--no-plots", "-o", str(out), cwd=tmp_path)
    wait_for(lambda: process_done(out, 0, 3) and any(
        e["type"] == "worker" and e["index"] == 1 for e in entries(out)), proc)
    worker = next(e["pid"] for e in entries(out) if e["type"] == "worker" and e["index"] == 1)
    before = samples_by_pair(out)
    proc.kill()  # SIGKILL: no handler runs, nothing is saved on the way out
    proc.communicate(timeout=30)
    # The worker dies with its parent instead of measuring on as an orphan.
    deadline = time.monotonic() + 10
    while not _gone(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(worker)
    # A kill in the middle of a write leaves a torn last line (simulated: SIGKILL cannot be
    # timed to land inside one write); it is ignored, then cut off.
    with open(out / "journal.jsonl", "a") as f:
        f.write('{"type": "replicate", "key": "ok_a|small|numpy|cpu|float64|latency", "index": 1, "repl')

    (tmp_path / "calm").write_text("")  # bimodal converges at once from now on
    resumed = run_here("run", "--resume", str(out), "-q", "--no-plots", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    final = load_results(out / "results.json")
    assert final.complete and all(r.status == "ok" for r in final.records)
    text = (out / "journal.jsonl").read_text()
    assert '"sha\n' not in text and text.endswith("}\n")
    everything = samples_by_pair(out)
    assert {k: everything[k] for k in before} == before
    assert set(replicate_pairs(out).values()) == {1} and len(replicate_pairs(out)) == 6
