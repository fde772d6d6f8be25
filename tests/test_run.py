"""The default suite end to end, as a new user runs it: real workers, real libraries, real files."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from arraybench import load_results
from arraybench import backends
from arraybench.workloads import BUILTIN

from .conftest import ROOT

FAST_RUN = ("--processes", "1", "--max-time", "0.05", "--min-samples", "3", "--allocator", "reused")

#: A known PyTorch bug, not a tolerance: pytorch/pytorch#188792 (open, "module: correctness
#: (silent)"): with oneMKL 2024.2 (the torch 2.13 wheels' pin) and several threads, a float unary
#: op's first call in a process can run MKL's low-accuracy vector-math kernel on one thread's share.
#: Here it hit elementwise large's sin(a) in about a third of PyTorch's workers on a loaded
#: machine (max relative error 6.83e-09, the low 32 bits of the doubles differing), never with
#: --threads 1; the check rightly calls the first result wrong, and the worker says, after a
#: second call that is right, that it is intermittent and names the bug. Every other cell must be
#: ok, and this one too unless it is exactly that.
KNOWN_INTERMITTENT = {"elementwise|large|torch|cpu|float64|latency": "pytorch/pytorch#188792"}


# The default suite, all of it, as a new user runs it: a minute on two cores.
pytestmark = [pytest.mark.slow, pytest.mark.budget(80)]


def _known(r) -> bool:
    return r.status == "wrong" and KNOWN_INTERMITTENT.get(r.key, "\0") in (r.reason or "")


@pytest.fixture(scope="module")
def default_run(tmp_path_factory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("suite") / "benchmark_plots"
    # The seed's entry point, at the repository root.
    import subprocess
    import sys

    result = subprocess.run([sys.executable, str(ROOT / "main.py"), "--output-dir", str(out), *FAST_RUN],
                            capture_output=True, text=True, timeout=900, cwd=out.parent)
    return out, result


def test_default_run_succeeds_and_prints_a_table(default_run):
    out, result = default_run
    known = any(_known(r) for r in load_results(out / "results.json").records)
    assert result.returncode == (1 if known else 0), result.stderr[-3000:]
    assert "time per call" in result.stdout
    assert "NumPy CPU" in result.stdout


def test_results_cover_the_suite_with_cpu_ok_and_gpus_skipped_with_reasons(default_run):
    out, _ = default_run
    res = load_results(out / "results.json")
    assert res.complete
    got = {(r.workload, r.size_label) for r in res.records}
    assert got == {(w, s) for w in BUILTIN for s in ("small", "large")}
    for r in res.records:
        installed = backends.SPECS[r.backend].preflight(r.device) is None
        if r.device == "cpu" and installed and _known(r):
            continue
        if r.device == "cpu" and installed:
            assert r.status == "ok", (r.key, r.reason)
            assert r.max_rel_error is not None and r.max_rel_error <= r.tolerance
            assert r.median_s > 0 and r.n_samples >= 3
            assert r.min_s <= r.median_s <= r.ci_high_s
            assert r.first_call_s > 0
        elif r.status == "skipped":
            assert r.reason, r.key  # every skip says why
    skipped = {r.backend for r in res.records if r.device == "gpu" and r.status == "skipped"}
    if not any(backends.SPECS[b].preflight("gpu") is None for b in ("torch", "jax", "cupy")):
        assert skipped == {"torch", "jax", "cupy"}


def test_environment_is_recorded(default_run):
    out, _ = default_run
    env = load_results(out / "results.json").environment
    for key in ("python", "cpu_model", "cpu_count", "libraries", "timestamp", "backends"):
        assert env.get(key), key
    assert env["blas"]  # numpy's worker reports the BLAS it loaded
    assert "numpy/cpu" in env["backends"]


def test_twelve_plots_open_and_show_the_data(default_run):
    out, _ = default_run
    svgs = sorted(p.name for p in out.glob("*.svg"))
    expected = sorted([f"{w}_{s}.svg" for w in BUILTIN for s in ("small", "large")]
                      + ["summary_small.svg", "summary_large.svg"])
    assert svgs == expected
    res = load_results(out / "results.json")
    for name in svgs:
        text = (out / name).read_text()
        ET.fromstring(text)  # well-formed SVG
        assert "NumPy CPU" in text
    matmul = (out / "matmul_large.svg").read_text()
    assert "time per call" in matmul and "2,000" in matmul
    ok_labels = {r.config_label for r in res.records if r.workload == "matmul" and r.size_label == "large"
                 and r.status == "ok"}
    for label in ok_labels:
        assert label in matmul


def test_journal_holds_every_measurement(default_run):
    out, _ = default_run
    lines = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "header"
    shards = [e for e in lines if e["type"] == "replicate"]
    res = load_results(out / "results.json")
    assert {e["key"] for e in shards} == {r.key for r in res.records if r.n_samples}
