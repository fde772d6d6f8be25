"""Smaller faults, each done for real: the CI gate of ``compare`` passing a broken
build, unbounded ``--processes`` and ``--threads``, NumPy's "149. GiB", a
workload called ``summary``, ``os._exit`` at the import of a workload file."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import arraybench
from arraybench.worker.footprint import describe
from arraybench.host.threads import available_cpus

from ..conftest import run_cli, run_here
from ..synthetic import record, results, spread

QUICK = ("--sizes", "small", "--backends", "numpy", "--devices", "cpu", "--processes", "1",
         "--max-time", "0.05", "--min-samples", "3", "-q")


# -- item 11: compare --fail-above --------------------------------------------------------------
def _saved(tmp_path: Path, name: str, records) -> Path:
    path = tmp_path / f"{name}.json"
    results(records).save(path)
    return path


@pytest.mark.parametrize("status", ["failed", "wrong"])
def test_the_gate_fails_a_cell_that_broke(status: str, tmp_path: Path):
    base = _saved(tmp_path, "base", [record(samples=spread(1e-3)), record("sort", samples=spread(2e-3))])
    broken = record(samples=spread(1e-3), status=status, reason="max rel. error 1e+00")
    new = _saved(tmp_path, "new", [broken, record("sort", samples=spread(2e-3))])
    done = run_here("compare", str(base), str(new), "--fail-above", "10%", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"arraybench: 1 cell that was ok in the base run broke in the new run: matmul small NumPy "
        f"CPU ({status})"]
    # Without the gate, comparing is only a report: exit 0.
    assert run_here("compare", str(base), str(new), cwd=tmp_path).returncode == 0


def test_the_gate_fails_when_nothing_could_be_compared(tmp_path: Path):
    base = _saved(tmp_path, "base", [record(status="skipped", reason="no GPU")])
    new = _saved(tmp_path, "new", [record(status="skipped", reason="no GPU")])
    done = run_here("compare", str(base), str(new), "--fail-above", "10%", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "arraybench: no cell could be compared (none was valid in both runs); --fail-above passes "
        "nothing unseen"]


def test_the_gate_passes_a_build_that_is_no_worse(tmp_path: Path):
    base = _saved(tmp_path, "base", [record(samples=spread(1e-3)), record("sort", status="failed")])
    new = _saved(tmp_path, "new", [record(samples=spread(1e-3)), record("sort", status="failed")])
    done = run_here("compare", str(base), str(new), "--fail-above", "10%", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # failed before too: not a new breakage
    assert done.stderr == ""


# -- item 12: bounds -----------------------------------------------------------------------------
@pytest.mark.parametrize("option, value, message", [
    ("--processes", "1001", "--processes must be at most 1000, not 1001"),
    ("--processes", "100000000000", "--processes must be at most 1000, not 100000000000"),
    ("--threads", "99999", "--threads must be at most {cpus} (the CPUs this process may use), not 99999"),
    ("--threads", "{more}", "--threads must be at most {cpus} (the CPUs this process may use), not {more}"),
])
def test_absurd_processes_and_threads_are_one_line_before_anything_starts(option, value, message,
                                                                         tmp_path: Path):
    cpus = len(available_cpus())
    value, message = (s.format(cpus=cpus, more=cpus + 1) for s in (value, message))
    started = time.monotonic()
    args = ("run", "--workloads", "sort", option, value, "-o", str(tmp_path / "out"))
    # 10**11 processes would plan for ever without the bound: in a process of its own, with a
    # timeout; the others are refused by the same code in this process.
    if value == str(10**11):
        done = run_cli(*args, cwd=tmp_path, timeout=120)
    else:
        done = run_here(*args, cwd=tmp_path)
    assert time.monotonic() - started < 60  # refused, not spinning
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"arraybench: error: {message}"]
    assert not (tmp_path / "out").exists()


def test_the_bounds_hold_for_the_python_api_and_the_project_file(tmp_path: Path, monkeypatch):
    # In a process of its own: without the bound, planning 10**11 replicates never ends.
    code = ("import arraybench\n"
            "for kw in ({'processes': 10**11}, {'threads': %d}):\n"
            "    try:\n"
            "        arraybench.run(['sort'], backends='numpy', **kw)\n"
            "    except arraybench.UsageError as exc:\n"
            "        print(exc)\n" % (len(available_cpus()) + 1))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    # In Python, the messages name the API's keywords, not the command line's options.
    assert done.stdout.splitlines() == [
        "processes must be at most 1000, not 100000000000",
        f"threads must be at most {len(available_cpus())} (the CPUs this process may use), "
        f"not {len(available_cpus()) + 1}"]
    (tmp_path / "pyproject.toml").write_text("[tool.arraybench]\nprocesses = 5000\n")
    monkeypatch.setenv("ARRAYBENCH_CONFIG", str(tmp_path / "pyproject.toml"))
    done = run_here("run", "-o", "x", cwd=tmp_path)
    assert done.returncode == 2 and "--processes must be at most 1000" in done.stderr


# -- item 13: the smaller ones -----------------------------------------------------------------------
def test_numpys_own_out_of_memory_words_give_the_size_it_said():
    with pytest.raises(MemoryError) as info:
        np.empty(20_000_000_000)  # 149 GiB of float64: NumPy says "149. GiB"
    message = str(info.value)
    assert "149. GiB" in message
    described = describe(message, "the first call", (10 * 2**30, 20 * 2**30), "host memory")
    assert described.startswith("out of memory during the first call (needed 149 GiB, available "
                                "10 GiB of 20 GiB host memory): Unable to allocate 149. GiB")


def test_a_workload_called_summary_keeps_its_plot(tmp_path: Path):
    source = tmp_path / "named.py"
    source.write_text("import arraybench\n"
                      "@arraybench.workload(sizes={'small': 64})\n"
                      "def summary(xp, x):\n    return x * 2.0\n"
                      "@arraybench.workload(sizes={'small': 64})\n"
                      "def case_summary(xp, x):\n    return x + x\n")
    out = tmp_path / "out"
    done = run_here("run", "--workload-file", str(source), "-o", str(out), *QUICK, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    svgs = {p.name: p.read_text() for p in out.glob("*.svg")}
    assert sorted(svgs) == ["case_case_summary_small.svg", "case_summary_small.svg", "summary_small.svg"]
    assert "Summary — small sizes" in svgs["summary_small.svg"]
    assert "summary — small (n = 64)" in svgs["case_summary_small.svg"]
    assert "case_summary — small (n = 64)" in svgs["case_case_summary_small.svg"]
    html = (out / "report.html").read_text()
    assert html.count("<svg") == 3  # each drawn once, none overwritten


@pytest.mark.slow
@pytest.mark.parametrize("call", ["os._exit(7)", "os.abort()"])
def test_a_workload_file_that_exits_at_import_is_a_load_error(call: str, tmp_path: Path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nimport arraybench\n"
                   "@arraybench.workload(sizes={'small': 8})\ndef quits(xp, x):\n    return x\n"
                   f"{call}\n")
    good = tmp_path / "good.py"
    good.write_text("import arraybench\n"
                    "@arraybench.workload(sizes={'small': 64})\ndef fine(xp, x):\n    return x * 2.0\n")
    alone = run_cli("run", "--workload-file", str(bad), "-o", str(tmp_path / "a"), *QUICK, cwd=tmp_path)
    assert alone.returncode == 2  # was 7 (or a SIGABRT), with no word
    assert alone.stderr.strip().splitlines() == [
        f"arraybench: error: workload file {bad}: called {call} at import, which would end "
        "arraybench itself; guard script code with `if __name__ == '__main__':`"]
    both = run_cli("run", "--workload-file", str(bad), "--workload-file", str(good),
                   "-o", str(tmp_path / "b"), *QUICK, cwd=tmp_path)
    assert both.returncode == 1, both.stderr  # the good file ran; the bad one is reported
    res = arraybench.load_results(tmp_path / "b")
    assert [r.workload for r in res.records] == ["fine"] and res.records[0].status == "ok"
    assert res.errors[0]["source"] == str(bad) and call in res.errors[0]["error"]
    listed = run_cli("list", "--workload-file", str(bad), cwd=tmp_path)
    assert listed.returncode == 1 and f"called {call} at import" in listed.stderr


@pytest.mark.slow
def test_a_child_forked_at_import_still_exits_for_real(tmp_path: Path):
    """``os._exit`` in a child the file forks at import ends that child, as it must."""
    source = tmp_path / "forking.py"
    marker = tmp_path / "child_went_on"
    source.write_text("import os\nimport arraybench\n"
                      "@arraybench.workload(sizes={'small': 64})\ndef forked(xp, x):\n    return x * 2.0\n"
                      "pid = os.fork()\n"
                      f"if pid == 0:\n    os._exit(0)\n    open({str(marker)!r}, 'w').close()\n"
                      "os.waitpid(pid, 0)\n")
    done = run_cli("run", "--workload-file", str(source), "-o", str(tmp_path / "out"), *QUICK,
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert os.path.exists(tmp_path / "out" / "results.json")
