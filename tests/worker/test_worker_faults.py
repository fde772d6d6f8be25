"""Workers that leave processes behind or die while they start, for real.

A workload that forks or starts a helper must neither hang the run (the child holds the worker's
pipe) nor outlive it; a worker that dies before it is ready is a failure of the run (exit 1,
resumable), not an unavailable library.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from arraybench import backends, load_results

from ..conftest import run_cli, run_here

DATA = Path(__file__).resolve().parents[1] / "data"
QUICK = ("--max-time", "0.05", "--min-samples", "3", "-q", "--no-plots", "--sizes", "small",
         "--devices", "cpu")


# Workers of PyTorch and JAX that crash, hang or are killed as they start.
pytestmark = pytest.mark.slow


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # a zombie no longer runs


def entries(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_workload_that_forks_neither_hangs_the_run_nor_outlives_it(workload_file: Path,
                                                                    tmp_path: Path):
    out = tmp_path / "out"
    started = time.monotonic()
    # Before the fix the parent waited forever for the end of an output that the sleeping child
    # held open; the subprocess timeout here is far above a normal run and far below the child's
    # ten minutes.
    result = run_cli("run", "--workload-file", str(workload_file), "--workloads", "forks,ok_a",
                     "--backends", "numpy", "--processes", "2", "--timeout", "60", "-o", str(out),
                     *QUICK, cwd=tmp_path, timeout=180)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert elapsed < 60, elapsed  # not held up by the pipe, nor by --timeout
    res = load_results(out / "results.json")
    assert res.complete and all(r.status == "ok" and r.n_replicates == 2 for r in res.records)
    strays = [int(p) for p in (tmp_path / "stray_pids.txt").read_text().split()]
    assert len(strays) == 4  # a forked child and a subprocess helper in each of the two workers
    deadline = time.monotonic() + 10
    while not all(_gone(p) for p in strays) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in strays if not _gone(p)] == []


def test_a_worker_killed_while_it_starts_fails_the_run_and_resume_retries(workload_file: Path,
                                                                         tmp_path: Path):
    out = tmp_path / "out"
    (tmp_path / "kill_worker_at_start").write_text("")
    result = run_here("run", "--workload-file", str(workload_file), "--workloads", "ok_a,ok_b",
                      "--backends", "numpy", "--processes", "1", "-o", str(out), *QUICK,
                      cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # a failure, not "skipped"
    assert "Traceback" not in result.stderr
    res = load_results(out / "results.json")
    assert res.complete is False
    for r in res.records:
        assert r.status == "failed"
        assert r.reason.startswith("worker could not start: killed by signal 9 (SIGKILL")
        assert r.reason.endswith("not measured (continue with --resume)")
    assert res.errors == [{"kind": "worker", "source": "numpy/cpu",
                           "error": res.records[0].reason.split("; not measured")[0]}]
    # Nothing in the journal says NumPy is unavailable: --resume tries it again.
    assert [e["type"] for e in entries(out)] == ["header"]
    # And a plain re-run does not wipe it: the journal says the run is unfinished.
    again = run_here("run", "--workload-file", str(workload_file), "--workloads", "ok_a,ok_b",
                     "--backends", "numpy", "--processes", "1", "-o", str(out), *QUICK, cwd=tmp_path)
    assert again.returncode == 2 and "holds an unfinished run" in again.stderr

    (tmp_path / "kill_worker_at_start").unlink()
    resumed = run_here("run", "--resume", str(out), "-q", "--no-plots", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    final = load_results(out / "results.json")
    assert final.complete and final.errors == []
    assert all(r.status == "ok" and r.n_samples >= 3 for r in final.records)


def test_a_library_that_crashes_on_import_is_a_failure_not_unavailable(tmp_path: Path):
    if backends.SPECS["jax"].preflight("cpu") is not None:
        pytest.skip("JAX is not installed: " + str(backends.SPECS["jax"].preflight("cpu")))
    out = tmp_path / "out"
    # XLA aborts the process that parses an unknown flag: the worker dies as JAX starts.
    result = run_here("run", "--workloads", "sort", "--backends", "jax,numpy", "--processes", "1",
                      "-o", str(out), *QUICK, cwd=tmp_path,
                      env={"XLA_FLAGS": "--xla_no_such_flag_for_arraybench=1"})
    assert result.returncode == 1, result.stderr
    records = {r.backend: r for r in load_results(out / "results.json").records}
    assert records["numpy"].status == "ok"
    jax = records["jax"]
    assert jax.status == "failed"
    assert jax.reason.startswith("worker could not start: ")
    assert "xla_no_such_flag_for_arraybench" in jax.reason  # XLA's own words, from the log
    assert not any(e["type"] == "unavailable" for e in entries(out))

    resumed = run_here("run", "--resume", str(out), "-q", "--no-plots", cwd=tmp_path,
                       env={"XLA_FLAGS": None})
    assert resumed.returncode == 0, resumed.stderr
    records = {r.backend: r for r in load_results(out / "results.json").records}
    assert records["jax"].status == "ok" and records["numpy"].status == "ok"


def test_a_library_that_is_not_there_is_still_skipped(workload_file: Path, tmp_path: Path):
    """The worker itself says its library cannot be imported: skipped, exit 0, as before."""
    out = tmp_path / "out"
    # A library shadowed by a module that raises ImportError: the worker reports it itself.
    shadow = tmp_path / "shadow"
    (shadow / "torch").mkdir(parents=True)
    (shadow / "torch" / "__init__.py").write_text("raise ImportError('no torch here')\n")
    result = run_here("run", "--workloads", "sort", "--backends", "torch,numpy", "--processes", "1",
                      "-o", str(out), *QUICK, cwd=tmp_path,
                      env={"PYTHONPATH": str(shadow)})
    assert result.returncode == 0, result.stderr
    records = {r.backend: r for r in load_results(out / "results.json").records}
    assert records["torch"].status == "skipped"
    assert "no torch here" in records["torch"].reason
    assert any(e["type"] == "unavailable" for e in entries(out))
