"""The measurement engine end to end: threads, modes, cold caches, several processes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arraybench import backends, records

from .conftest import FAST, run_cli


def _cpu_backends() -> list[str]:
    return [n for n in ("numpy", "torch", "jax") if backends.SPECS[n].preflight("cpu") is None]


@pytest.fixture(scope="module")
def one_thread_run(tmp_path_factory) -> records.Results:
    out = tmp_path_factory.mktemp("threads")
    result = run_cli("run", "--backends", ",".join(_cpu_backends()), "--devices", "cpu",
                     "--workloads", "matmul", "--sizes", "small", "--threads", "1",
                     *FAST, "--output-dir", str(out))
    assert result.returncode == 0, result.stderr
    return records.load(out / "results.json")


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
    info = records.load(tmp_path / "results.json").environment["backends"]["numpy/cpu"]
    assert info["affinity_cpus"] == len(os.sched_getaffinity(0))


def test_latency_throughput_and_several_processes(tmp_path: Path):
    result = run_cli("run", "--backends", "numpy", "--devices", "cpu", "--workloads", "elementwise",
                     "--sizes", "small", "--mode", "latency,throughput", "--processes", "2",
                     "--max-time", "0.1", "--min-samples", "4", "-q", "--output-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    res = records.load(tmp_path / "results.json")
    modes = {r.mode: r for r in res.records}
    assert set(modes) == {"latency", "throughput"}
    for r in modes.values():
        assert r.status == "ok"
        assert r.n_processes == 2 and len(r.process_medians_s) == 2
        assert r.ci_low_s <= r.median_s <= r.ci_high_s
        assert r.cv is not None and r.number >= 1
    assert "throughput" in modes["throughput"].config_label


def test_cold_cache_samples_one_call_each(tmp_path: Path):
    result = run_cli("run", "--backends", "numpy", "--devices", "cpu", "--workloads", "elementwise",
                     "--sizes", "small", "--cold", *FAST, "--output-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    (r,) = records.load(tmp_path / "results.json").records
    assert r.status == "ok"
    assert r.number == 1  # only the first call after an eviction is cold
    assert records.load(tmp_path / "results.json").settings["cold"] is True
