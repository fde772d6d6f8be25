"""Findings that explain, on synthetic records with known counters: page faults behind a slow mode,
cores used, BLAS kernels forced below the CPU, the quantity that differs between a bimodal cell's
modes, and a busy machine."""

from __future__ import annotations

from arraybench.analysis.aggregate import aggregate
from arraybench.analysis.explanations import (bimodal_causes, busy_machine, cores_used,
                                              explanations, forced_kernels, page_faults)
from arraybench.analysis.findings import findings
from arraybench.model.replicate import Replicate
from arraybench.plan import Cell
from arraybench.model.usage import Usage

from ..synthetic import spread


def _usage(calls: int = 20, cores: float = 1.0, kernel: float = 0.02, faults: float = 0.0,
           switches: float = 0.0, others: float = 0.0, wall: float = 0.5, cpus: int = 2) -> Usage:
    cpu = cores * wall
    return Usage(calls=calls, wall_s=wall, user_s=cpu * (1 - kernel), system_s=cpu * kernel,
                 minor_faults=int(faults * calls), involuntary_switches=int(switches * calls),
                 machine_busy_s=cpu + others * wall, machine_total_s=wall * cpus, machine_cpus=cpus,
                 load_sum=1.0 * calls, load_readings=calls).derive()


def _record(workload: str, backend: str, processes: list[tuple[float, Usage]], size_label="large",
            size=1_000_000):
    cell = Cell(workload, size_label, size, backend, "cpu", "float64", "latency")
    reps = []
    for median, usage in processes:
        samples = spread(median, n=20, width=0.01)
        usage.sample_minor_faults = [usage.minor_faults_per_call] * len(samples)
        usage.sample_cores = [usage.cores] * len(samples)
        reps.append(Replicate(samples_s=samples, number=1, max_rel_error=0.0, tolerance=1e-14, usage=usage))
    return aggregate(cell, reps, len(reps), rel_ci=0.02, stop="budget")


def _fft_with_fresh_pages():
    # Like NumPy FFT at n = 1,000,000: processes that fault 8,950 pages a call take 32 ms,
    # those that reuse memory 16 ms.
    slow = [(32e-3, _usage(faults=8950, kernel=0.5)) for _ in range(3)]
    fast = [(16e-3, _usage(faults=0.5, kernel=0.02)) for _ in range(3)]
    return _record("fft", "numpy", slow + fast)


def test_page_faults_behind_a_slow_mode_are_named_with_the_speed_they_cost():
    rec = _fft_with_fresh_pages()
    (text,) = page_faults([rec])
    assert text.startswith("NumPy CPU on fft large (n = 1,000,000) takes ~4,475 page faults per call")
    assert "~17 MB of fresh memory from the kernel" in text
    assert "26% of its CPU time is spent in the kernel" in text
    assert "the 3 of 6 processes that reused memory instead ran 2.0× faster (16 ms against 32 ms)" in text
    # The record's warning names the same quantity between the two modes.
    assert any(w.startswith("bimodal: samples cluster at 16") and
               "minor page faults per call: 8,950 in the slow processes, 0.5 in the fast ones" in w
               for w in rec.warnings)
    # bimodal_causes leaves page faults to page_faults: one sentence, not two.
    assert bimodal_causes([rec]) == []


def test_faults_that_cost_nothing_are_not_a_finding():
    rec = _record("matmul", "torch", [(0.2, _usage(faults=4000, kernel=0.03)) for _ in range(3)])
    assert page_faults([rec]) == []


def test_cores_used_per_library():
    torch = _record("matmul", "torch", [(0.1, _usage(cores=1.9)) for _ in range(3)])
    torch_small = _record("matmul", "torch", [(1e-4, _usage(cores=1.1)) for _ in range(3)], "small", 100)
    numpy = _record("matmul", "numpy", [(0.2, _usage(cores=1.0)) for _ in range(3)])
    (text,) = cores_used([numpy, torch, torch_small])
    assert text == ("Cores used while timed (CPU time ÷ wall time, the median over each library's "
                    "cells): PyTorch CPU 1.5 (up to 1.9 on matmul large (n = 1,000,000)); NumPy CPU 1.0.")


def _environment(arch: str, isa: list[str], coretype: str | None) -> dict:
    env = {"OPENBLAS_CORETYPE": coretype} if coretype else {}
    return {"cpu_model": "Test CPU", "fingerprint": {"cpu_isa": isa},
            "kernel_env": env,
            "backends": {"numpy/cpu": {"blas_architecture": arch, "kernel_env": env}}}


def test_openblas_forced_below_the_cpu_is_said_with_its_cause():
    env = _environment("Haswell", ["sse4_2", "avx", "avx2", "fma", "avx512f"], "Haswell")
    (text,) = forced_kernels(env)
    assert text.startswith("NumPy's OpenBLAS runs Haswell kernels (AVX2) because "
                           "OPENBLAS_CORETYPE=Haswell is set; this CPU supports AVX-512")


def test_openblas_below_the_cpu_without_the_variable_is_said_too():
    (text,) = forced_kernels(_environment("Sandybridge", ["avx", "avx2"], None))
    assert "runs Sandybridge kernels (AVX)" in text and "this CPU supports AVX2" in text
    assert "OPENBLAS_CORETYPE" not in text


def test_a_forced_core_type_that_matches_the_cpu_is_only_noted():
    # This development VM: an AMD EPYC with AVX2, OpenBLAS picking its Haswell kernels.
    (text,) = forced_kernels(_environment("Haswell", ["avx", "avx2", "fma"], "Haswell"))
    assert text == ("OPENBLAS_CORETYPE=Haswell is set, so NumPy's OpenBLAS runs Haswell kernels, "
                    "which match this CPU's best ISA (AVX2).")
    assert forced_kernels(_environment("Haswell", ["avx", "avx2"], None)) == []


def test_pytorch_kernels_and_mkl_on_an_amd_cpu():
    env = {"cpu_model": "AMD EPYC", "backends": {"torch/cpu": {
        "cpu_capability": "AVX2", "mkl_isa": "generic", "torch_blas": "mkl",
        "mkl_code_path": "Intel Architecture processors", "onednn_isa": "Intel AVX2"}}}
    (text,) = forced_kernels(env)
    assert text == ("PyTorch runs ATen's AVX2 kernels, MKL's code path for Intel Architecture "
                    "processors (generic, not its AVX2 or AVX-512 path), oneDNN's Intel AVX2 "
                    "kernels on an AMD CPU.")


def test_a_bimodal_cell_names_the_quantity_that_differs_between_its_modes():
    # Processes preempted ~100 times a call ran at half speed: a neighbour took their cores.
    slow = [(0.4, _usage(switches=96, cores=1.0)) for _ in range(2)]
    fast = [(0.2, _usage(switches=12, cores=1.0)) for _ in range(2)]
    rec = _record("matmul", "torch", slow + fast, "large", 2000)
    (text,) = bimodal_causes([rec])
    assert text == ("PyTorch CPU on matmul large (n = 2,000) runs in two modes, 200 ms and 400 ms: "
                    "involuntary context switches per call: 96 in the slow processes, 12 in the fast ones.")


def test_a_bimodal_cell_within_each_process_is_explained_sample_by_sample():
    cell = Cell("fft", "large", 1_000_000, "numpy", "cpu", "float64", "latency")
    reps = []
    for _ in range(3):
        samples = [16e-3, 32e-3] * 10
        u = _usage(faults=10)
        u.sample_minor_faults = [0.0 if s < 20e-3 else 9000.0 for s in samples]
        u.sample_cores = [1.0] * len(samples)
        reps.append(Replicate(samples_s=samples, number=1, max_rel_error=0.0, tolerance=1e-14, usage=u))
    rec = aggregate(cell, reps, 3, rel_ci=0.02)
    assert any("minor page faults per call: 9,000 in the slow samples, 0 in the fast ones" in w
               for w in rec.warnings)


def test_a_busy_machine_is_named_once_for_the_run():
    busy = _record("sort", "jax", [(0.4, _usage(others=1.2)) for _ in range(3)])
    quiet = _record("sort", "numpy", [(0.01, _usage(others=0.0)) for _ in range(3)])
    assert busy.busy is True and quiet.busy is False
    (text,) = busy_machine([busy, quiet])
    assert text.startswith("1 of 2 cells were measured while other processes loaded the machine "
                           "(up to 1.2 of 2 cores, on JAX CPU sort large")
    assert busy_machine([quiet]) == []


def test_findings_include_the_explanations_with_the_environment():
    rec = _fft_with_fresh_pages()
    env = _environment("Haswell", ["avx", "avx2", "avx512f"], "Haswell")
    found = findings([rec], env)
    assert found[:2] == explanations([rec], env)[:2]
    assert any("OPENBLAS_CORETYPE=Haswell is set" in f for f in found)
    assert not any("OPENBLAS" in f for f in findings([rec]))  # no environment: no kernel finding
