"""`arraybench info` and `arraybench list` on this machine, checked against what it really has."""

from __future__ import annotations

import json

import pytest

from arraybench import backends, workloads
from arraybench.host import machine
from arraybench.workloads import BUILTIN

from ..conftest import ROOT, probes_once, run_here


@pytest.fixture(scope="module")
def info_json() -> dict:
    with probes_once():  # the text below reads the same answers
        result = run_here("info", "--json", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_info_names_the_machine_python_and_libraries(info_json):
    env = info_json["environment"]
    assert env["cpu_model"] == machine.cpu_model()
    assert env["cpu_count"] >= env["cpus_available"] >= 1
    assert env["cpu_physical_cores"] is None or 1 <= env["cpu_physical_cores"] <= env["cpu_count"]
    assert env["python"].count(".") == 2
    assert env["libraries"]["numpy"] == backends.SPECS["numpy"].version()


def test_info_says_for_every_backend_whether_it_works_and_why_not(info_json):
    state = info_json["backends"]
    assert set(state) == set(backends.SPECS)
    for name, s in state.items():
        spec = backends.SPECS[name]
        assert set(s["devices"]) == set(spec.devices)
        assert s["usable"] == any(reason is None for reason in s["devices"].values())
        for device, reason in s["devices"].items():
            cheap = spec.preflight(device)
            if cheap is not None:
                assert reason == cheap  # not installed, no GPU, CPU-only build...
            if reason is not None:
                assert isinstance(reason, str) and reason
    assert state["numpy"]["usable"]


def test_info_reports_blas_lapack_and_threads_as_each_library_sees_them(info_json):
    numpy_info = info_json["backends"]["numpy"]["info"]
    assert numpy_info["blas"]  # threadpoolctl's view of the loaded BLAS
    assert numpy_info["lapack"]  # from NumPy's build config
    assert any(p["user_api"] == "blas" and p["num_threads"] >= 1 for p in numpy_info["threadpools"])
    torch_state = info_json["backends"]["torch"]
    if not torch_state["usable"]:
        pytest.skip(f"PyTorch is not usable here: {torch_state['devices']}")
    torch_info = torch_state["info"]
    assert torch_info["torch_blas"] and torch_info["torch_lapack"]
    assert torch_info["torch_threads"] >= 1


def test_info_text_shows_it_all(tmp_path, probed_once):  # the probes info_json made, in this process
    result = run_here("info", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    for needle in ("Python", "CPU", machine.cpu_model(), "GPUs", "threads", "BLAS/LAPACK",
                   "NumPy", "usable"):
        assert needle in text, needle
    for name, spec in backends.SPECS.items():
        for device in spec.devices:
            reason = spec.preflight(device)
            if reason:
                assert reason.split(" (")[0] in text  # the why, not just "unavailable"


def test_torch_build_linalg_reads_the_build_settings_line():
    pytest.importorskip("torch", reason="PyTorch is not installed")
    from arraybench.backends.torch_support import torch_build_linalg

    config = ("PyTorch built with:\n  - GCC 13.3\n"
              "  - Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for Intel(R) 64\n"
              "  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, LAPACK_INFO=mkl, USE_MKL=ON,\n")
    got = torch_build_linalg(config)
    assert got["torch_blas"] == "mkl" and got["torch_lapack"] == "mkl"
    assert got["torch_blas_detail"].startswith("Intel(R) oneAPI Math Kernel Library Version 2024.2")
    openblas = torch_build_linalg("  - Build settings: BLAS_INFO=open, LAPACK_INFO=open, USE_MKL=OFF\n")
    assert openblas == {"torch_blas": "open", "torch_lapack": "open"}


def test_list_shows_workloads_sizes_what_they_measure_and_their_work(tmp_path):
    result = run_here("list", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    entries = {e["name"]: e for e in json.loads(result.stdout)}
    assert set(BUILTIN) <= set(entries)
    for name in BUILTIN:
        wl = workloads.REGISTRY[name]
        assert entries[name]["sizes"] == wl.sizes
        assert entries[name]["description"] == wl.description and wl.description
    n = workloads.REGISTRY["matmul"].sizes["small"]
    assert entries["matmul"]["work_float64"]["small"]["flops"] == 2 * n**3
    text = run_here("list", cwd=tmp_path)
    assert text.returncode == 0
    for name in BUILTIN:
        assert name in text.stdout
    assert "work per call" in text.stdout and "compute-bound" in text.stdout
    assert f"small {n:,}" in text.stdout


def test_list_includes_a_users_workload_file(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text("import arraybench\n\n"
                 "@arraybench.workload(sizes={'tiny': 7}, inputs=lambda n, rng: rng.standard_normal(n))\n"
                 "def softplus(xp, x):\n    \"\"\"log(1 + exp(x)), my activation\"\"\"\n"
                 "    return xp.log1p(xp.exp(x))\n")
    result = run_here("list", "--workload-file", str(f), cwd=tmp_path, env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert "softplus" in result.stdout and "my activation" in result.stdout and "tiny 7" in result.stdout
