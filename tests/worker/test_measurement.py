"""The measurement engine end to end: threads, modes, cold caches, several processes."""

from __future__ import annotations

import importlib.util

import os
from pathlib import Path

import pytest

from arraybench import Results, load_results
from arraybench import backends

from ..conftest import FAST, run_cli


def _cpu_backends() -> list[str]:
    return [n for n in ("numpy", "torch", "jax") if backends.SPECS[n].preflight("cpu") is None]


@pytest.fixture(scope="module")
def one_thread_run(tmp_path_factory) -> Results:
    out = tmp_path_factory.mktemp("threads")
    result = run_cli("run", "--backends", ",".join(_cpu_backends()), "--devices", "cpu",
                     "--workloads", "matmul", "--sizes", "small", "--threads", "1",
                     *FAST, "--output-dir", str(out))
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


def test_default_threads_use_every_core(tmp_path: Path):
    result = run_cli("run", "--backends", "numpy", "--devices", "cpu", "--workloads", "sort",
                     "--sizes", "small", *FAST, "--output-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    info = load_results(tmp_path / "results.json").environment["backends"]["numpy/cpu"]
    assert info["affinity_cpus"] == len(os.sched_getaffinity(0))


def test_latency_throughput_and_several_processes(tmp_path: Path):
    result = run_cli("run", "--backends", "numpy", "--devices", "cpu", "--workloads", "elementwise",
                     "--sizes", "small", "--mode", "latency,throughput", "--processes", "2",
                     "--max-time", "0.1", "--min-samples", "4", "-q", "--output-dir", str(tmp_path))
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


def test_cold_cache_samples_one_call_each(tmp_path: Path):
    result = run_cli("run", "--backends", "numpy", "--devices", "cpu", "--workloads", "elementwise",
                     "--sizes", "small", "--cold", *FAST, "--output-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    (r,) = load_results(tmp_path / "results.json").records
    assert r.status == "ok"
    assert r.number == 1  # only the first call after an eviction is cold
    assert load_results(tmp_path / "results.json").settings["cold"] is True


def test_sweep_finds_crossovers_from_the_command_line(tmp_path: Path):
    result = run_cli("sweep", "--workload", "sort", "--backends", "numpy,torch", "--devices", "cpu",
                     "--sizes", "100:1600", *FAST, "--output-dir", str(tmp_path))
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
    result = run_cli("run", "--backends", "jax,numpy", "--devices", "cpu", "--workloads", "elementwise",
                     "--sizes", "small", "--mode", "latency,compiled", *FAST, "--output-dir", str(tmp_path))
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


def test_roofline_measures_ceilings_and_shares(tmp_path: Path):
    result = run_cli("run", "--backends", "numpy", "--devices", "cpu", "--workloads", "elementwise",
                     "--sizes", "small", "--roofline", "--processes", "1", "--max-time", "0.05",
                     "--min-samples", "3", "--output-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    res = load_results(tmp_path / "results.json")
    assert {r.workload for r in res.records} == {"elementwise", "ceiling_bandwidth", "ceiling_matmul"}
    assert all(r.status == "ok" for r in res.records)
    assert (tmp_path / "roofline.svg").exists()
    assert "of peak" in result.stdout
