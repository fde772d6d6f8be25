"""Workers that crash, hang and run out of memory, for real: the cell fails with the reason, the
run goes on, and every other cell is measured.

The misbehaving workloads are a user workload file (tests/data/fault_workloads.py, copied into a
temporary folder); each misbehaves only under NumPy.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from arraybench import load_results
from arraybench import backends

from ..conftest import run_here

DATA = Path(__file__).resolve().parents[1] / "data"
QUICK = ("--processes", "1", "--max-time", "0.05", "--min-samples", "3", "-q", "--no-plots",
         "--sizes", "small")


# Workers that crash, hang past a timeout or run out of memory: real processes.
pytestmark = pytest.mark.slow


def run_faults(workload_file: Path, out: Path, workloads: str, *extra: str,
               backends_: str = "numpy"):
    result = run_here("run", "--workload-file", str(workload_file), "--workloads", workloads,
                      "--backends", backends_, "--devices", "cpu", "-o", str(out), *QUICK, *extra,
                      cwd=out.parent)
    assert "Traceback" not in result.stderr, result.stderr
    res = load_results(out / "results.json")
    return result, {(r.workload, r.backend): r for r in res.records}, res


def journal(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]


CRASHES = ["segv_first", "segv_sampling", "exit3", "sigkill", "ok_a", "ok_b"]


def test_crashes_fail_their_cell_and_a_fresh_worker_goes_on(workload_file: Path, tmp_path: Path):
    # PyTorch runs the same workloads beside NumPy, which alone crashes: its worker is unaffected.
    # --timeout 1 is shorter than importing torch takes here: start-up has its own allowance.
    torch = backends.SPECS["torch"].preflight("cpu") is None
    out = tmp_path / "out"
    result, recs, res = run_faults(workload_file, out, ",".join(CRASHES), "--timeout", "1",
                                   backends_="numpy,torch" if torch else "numpy")
    assert result.returncode == 1  # the run went through; some cells failed
    assert res.complete

    first = recs[("segv_first", "numpy")]
    assert first.status == "failed"
    assert "killed by signal 11 (SIGSEGV)" in first.reason
    # faulthandler's stack, read back by the parent: the user's own line, not ctypes'
    line = next(i for i, text in enumerate(workload_file.read_text().splitlines(), 1)
                if "ctypes.string_at(0)" in text)
    assert f"at {workload_file}:{line} in segv_first" in first.reason

    sampling = recs[("segv_sampling", "numpy")]
    assert sampling.status == "failed" and "SIGSEGV" in sampling.reason
    assert "in segv_sampling" in sampling.reason

    # Exactly: nothing from the earlier workers' crashes in the same log is pinned on these.
    assert recs[("exit3", "numpy")].status == "failed"
    assert recs[("exit3", "numpy")].reason == "worker crashed: exited with status 3"
    assert recs[("sigkill", "numpy")].status == "failed"
    assert recs[("sigkill", "numpy")].reason == (
        "worker crashed: killed by signal 9 (SIGKILL; often the kernel's out-of-memory killer)")

    for name in ("ok_a", "ok_b"):
        r = recs[(name, "numpy")]
        assert r.status == "ok", r.reason
        assert r.n_samples >= 3 and r.median_s > 0

    # The segfault while sampling happened inside the timer's loop, after the first call (taking
    # turns beside PyTorch, or alone in a fresh worker after an earlier crash).
    log = (out / "logs" / "numpy-cpu-p0.log").read_text()
    assert "in _take_turns" in log
    # One fresh worker per crash (4), plus the first: every crash cost exactly its own cell.
    workers = [e for e in journal(out) if e["type"] == "worker" and e["backend"] == "numpy"]
    assert len(workers) == 5
    assert len({e["pid"] for e in workers}) == 5
    shards = [e for e in journal(out) if e["type"] == "replicate" and "|numpy|" in e["key"]]
    assert sorted(e["key"].split("|")[0] for e in shards) == sorted(CRASHES)
    if torch:
        assert all(recs[(name, "torch")].status == "ok" for name in CRASHES)
        assert len([e for e in journal(out) if e["type"] == "worker" and e["backend"] == "torch"]) == 1


def test_a_hang_is_killed_after_the_timeout_and_the_run_goes_on(workload_file: Path,
                                                                tmp_path: Path):
    out = tmp_path / "out"
    started = time.monotonic()
    result, recs, res = run_faults(workload_file, out, "hang_first,hang_sampling,ok_a",
                                   "--timeout", "1")
    elapsed = time.monotonic() - started
    assert result.returncode == 1 and res.complete
    for name in ("hang_first", "hang_sampling"):
        r = recs[(name, "numpy")]
        assert r.status == "failed"
        assert r.reason.startswith("timed out after 1 s"), r.reason
    assert recs[("ok_a", "numpy")].status == "ok"
    assert elapsed >= 2.0  # two hangs, each waited for at least --timeout
    # Each hang really was where its name says: the stack the workload saved as it hung.
    assert "in _take_turns" not in (tmp_path / "hang_first.txt").read_text()
    assert "in first_call" in (tmp_path / "hang_first.txt").read_text()
    assert "in _take_turns" in (tmp_path / "hang_sampling.txt").read_text()


def test_out_of_memory_fails_the_cell_with_the_numbers_and_the_worker_goes_on(
        workload_file: Path, tmp_path: Path):
    installed = [b for b in ("numpy", "torch", "jax") if backends.SPECS[b].preflight("cpu") is None]
    out = tmp_path / "out"
    result, recs, res = run_faults(workload_file, out, "oom,oom_sampling,ok_a",
                                   backends_=",".join(installed))
    assert result.returncode == 1 and res.complete
    own_words = {"numpy": "Unable to allocate 7.11 PiB",
                 "torch": "can't allocate memory: you tried to allocate",
                 "jax": "RESOURCE_EXHAUSTED"}
    for b in installed:
        r = recs[("oom", b)]
        assert r.status == "failed", (b, r.reason)
        assert r.reason.startswith("out of memory during the first call (needed "), r.reason
        assert "available " in r.reason and "host memory" in r.reason
        assert own_words[b] in r.reason
        assert recs[("ok_a", b)].status == "ok", (b, recs[("ok_a", b)].reason)
    # numpy needs 8e15 bytes: 7.11 PiB, as NumPy itself says
    assert "needed 7.11 PiB" in recs[("oom", "numpy")].reason
    timing = recs[("oom_sampling", "numpy")]
    assert timing.status == "failed"
    assert timing.reason.startswith("out of memory during timing (needed 7.11 PiB"), timing.reason
    for b in set(installed) - {"numpy"}:
        assert recs[("oom_sampling", b)].status == "ok"
    # Out of memory is an error the worker survives: one worker per library, no restarts.
    workers = [e for e in journal(out) if e["type"] == "worker"]
    assert sorted(e["backend"] for e in workers) == sorted(installed)
