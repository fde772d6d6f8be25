"""The measurement engine end to end: threads, modes, cold caches, several processes."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arraybench import Results, load_results
from arraybench import backends
from arraybench.model.options import RunOptions
from arraybench.plan import validate
from arraybench.plan import build_plan
from arraybench.workloads import REGISTRY

from ..conftest import FAST, ROOT, run_here


# Real runs of every CPU library, threads and compiled modes.
pytestmark = pytest.mark.slow


def _cpu_backends() -> list[str]:
    return [n for n in ("numpy", "torch", "jax") if backends.SPECS[n].preflight("cpu") is None]


@pytest.fixture(scope="module")
def one_thread_run(tmp_path_factory) -> Results:
    out = tmp_path_factory.mktemp("threads")
    result = run_here("run", "--backends", ",".join(_cpu_backends()), "--devices", "cpu",
                      "--workloads", "matmul", "--sizes", "small", "--threads", "1",
                      *FAST, "--output-dir", str(out), cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return load_results(out / "results.json")


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_thread_setting_is_visible_inside_each_library(one_thread_run, backend):
    info = one_thread_run.environment["backends"].get(f"{backend}/cpu")
    if info is None:
        pytest.skip(f"{backend} is not installed")
    assert info["affinity_cpus"] == 1  # the one limit XLA respects; every worker gets it
    pools = info.get("threadpools", [])
    assert pools, "threadpoolctl saw no thread pool"
    assert all(p["num_threads"] == 1 for p in pools), pools
    if backend == "torch":
        assert info["torch_threads"] == 1
    assert one_thread_run.environment["threads_requested"] == 1


def test_latency_throughput_and_several_processes(tmp_path: Path):
    result = run_here("run", "--backends", "numpy", "--devices", "cpu", "--workloads", "elementwise",
                      "--sizes", "small", "--mode", "latency,throughput", "--processes", "2",
                      "--max-time", "0.1", "--min-samples", "4", "-q", "--output-dir", str(tmp_path),
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    res = load_results(tmp_path / "results.json")
    modes = {r.mode: r for r in res.records}
    assert set(modes) == {"latency", "throughput"}
    for r in modes.values():
        assert r.status == "ok"
        assert r.n_replicates == 2 and len(r.replicate_medians_s) == 2
        assert r.ci_low_s <= r.median_s <= r.ci_high_s
        assert r.cv is not None and r.number >= 1
    assert "throughput" in modes["throughput"].config_label


def test_cold_cache_samples_one_call_each_and_default_threads_use_every_core(tmp_path: Path):
    result = run_here("run", "--backends", "numpy", "--devices", "cpu", "--workloads", "elementwise",
                      "--sizes", "small", "--cold", *FAST, "--output-dir", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    res = load_results(tmp_path / "results.json")
    (r,) = res.records
    assert r.status == "ok"
    assert r.number == 1  # only the first call after an eviction is cold
    assert res.settings["cold"] is True
    # No --threads: the worker may use every core this process may.
    assert res.environment["backends"]["numpy/cpu"]["affinity_cpus"] == len(os.sched_getaffinity(0))


def test_sweep_finds_crossovers_from_the_command_line(tmp_path: Path):
    result = run_here("sweep", "--workload", "sort", "--backends", "numpy,torch", "--devices", "cpu",
                      "--sizes", "100:1600", *FAST, "--output-dir", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    res = load_results(tmp_path / "results.json")
    assert sorted({r.size for r in res.records}) == [100, 200, 400, 800, 1600]
    assert (tmp_path / "sweep_sort.svg").exists()
    assert not (tmp_path / "sort_100.svg").exists()  # numbered sizes go in the sweep plot
    found = (tmp_path / "findings.md").read_text()
    assert "PyTorch CPU" in found and "NumPy CPU on sort" in found  # a crossover sentence


def test_compiled_mode_records_compile_time(tmp_path: Path):
    if backends.SPECS["jax"].preflight("cpu"):
        pytest.skip("jax is not installed")
    result = run_here("run", "--backends", "jax,numpy", "--devices", "cpu", "--workloads", "elementwise",
                      "--sizes", "small", "--mode", "latency,compiled", *FAST, "--output-dir", str(tmp_path),
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    res = load_results(tmp_path / "results.json")
    jit = res.select(backend="jax", mode="compiled")[0]
    assert jit.status == "ok" and jit.method == "jax.jit"
    assert jit.compile_s is not None and jit.compile_s > 0
    assert jit.first_call_s > jit.median_s
    numba = res.select(backend="numpy", mode="compiled")[0]  # NumPy's compiler is Numba
    if importlib.util.find_spec("numba") is not None:
        assert numba.status == "ok" and numba.method == "numba.njit", numba.reason
        assert numba.compile_s is not None and numba.first_call_s > numba.median_s
    else:
        assert numba.status == "skipped" and "arraybench[numba]" in numba.reason
    assert "jax.jit on JAX CPU" in (tmp_path / "findings.md").read_text()


def test_roofline_adds_each_configurations_ceilings_at_their_own_sizes():
    """--roofline plans the two ceilings once per library and device, at sizes that dwarf the
    caches and saturate the cores (the sizes the run below shrinks), whatever --sizes says."""
    options = validate(RunOptions(workloads=["elementwise"], backends=["numpy", "torch"],
                                  devices=["cpu"], sizes=["small"], roofline=True), REGISTRY)
    cells = build_plan(options, REGISTRY)
    ceilings = sorted((c.workload, c.size, c.backend, c.mode) for c in cells
                      if c.workload.startswith("ceiling_"))
    real = (("ceiling_bandwidth", 1 << 25), ("ceiling_matmul", 2048))
    assert ceilings == sorted((w, n, b, "latency") for w, n in real for b in ("numpy", "torch"))
    assert len(cells) == 2 + len(ceilings)


def test_roofline_measures_ceilings_and_shares(tmp_path: Path, monkeypatch):
    # The real ceilings (a 256 MB stream, 2048² matmuls) cost ~13 CPU-s a run, in a second worker
    # for their large outputs: the plan above checks their sizes; here, what a run makes of them.
    # The workers measure the size the plan gives them, so the built-in ceilings run, only smaller.
    for name, n in (("ceiling_bandwidth", 1 << 16), ("ceiling_matmul", 64)):
        monkeypatch.setitem(REGISTRY, name, dataclasses.replace(REGISTRY[name], sizes={"cpu": n}))
    result = run_here("run", "--backends", "numpy", "--devices", "cpu", "--workloads", "elementwise",
                      "--sizes", "small", "--roofline", "--processes", "1", "--max-time", "0.05",
                      "--min-samples", "3", "--output-dir", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    res = load_results(tmp_path / "results.json")
    small = REGISTRY["elementwise"].sizes["small"]
    assert {(r.workload, r.size) for r in res.records} == {
        ("elementwise", small), ("ceiling_bandwidth", 1 << 16), ("ceiling_matmul", 64)}
    assert all(r.status == "ok" for r in res.records)
    assert (tmp_path / "roofline.svg").exists()
    assert "of peak" in result.stdout


def test_a_worker_starts_without_running_the_parents_fork_hooks(tmp_path: Path):
    """JAX warns at every fork of a process whose threads it started (a notebook, a pytest
    session): a worker's start forks through no Python hook, and is still pinned to its CPUs."""
    script = ("import os, sys\nforks = []\nos.register_at_fork(before=lambda: forks.append(1))\n"
              "import arraybench\n"
              "res = arraybench.run('sort', backends='numpy', devices='cpu', sizes='small', processes=1,"
              " max_time=0.05, min_samples=3, threads=1, plots=False, store=False, progress=False,"
              " output_dir=sys.argv[1])\n"
              "print(len(forks), [r.status for r in res.records],"
              " res.environment['backends']['numpy/cpu']['affinity_cpus'])\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "0 ['ok'] 1"
    # A worker is pinned before NumPy loads: its BLAS starts its threads as it loads, and threads
    # started before the affinity is set keep every CPU.
    spy = ("import os, runpy, sys\n"
           "class Spy:\n"
           "    def find_spec(self, name, path=None, target=None):\n"
           "        if name == 'numpy' and not hasattr(Spy, 'seen'):\n"
           "            Spy.seen = os.write(1, f'{sorted(os.sched_getaffinity(0))}\\n'.encode())\n"
           "sys.meta_path.insert(0, Spy())\n"
           "os.environ['ARRAYBENCH_WORKER_CPUS'] = '0'\n"
           "runpy.run_module('arraybench.worker', run_name='__main__')\n")
    pinned = subprocess.run([sys.executable, "-c", spy], stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, timeout=60, cwd=tmp_path)
    assert pinned.stdout.splitlines()[:1] == ["[0]"], (pinned.stdout, pinned.stderr)
