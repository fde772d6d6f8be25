"""Findings that explain, on synthetic records with known counters: page faults behind a slow mode,
cores used, BLAS kernels forced below the CPU, the quantity that differs between a bimodal cell's
modes, thread pools competing for cores, and a busy machine."""

from __future__ import annotations

from arraybench.analysis.aggregate import aggregate
from arraybench.render.explanations import (bimodal_causes, busy_machine, cores_used,
                                              explanations, forced_kernels, oversubscription,
                                              page_faults)
from arraybench.analysis.oversubscription import oversubscribed
from arraybench.render.findings import findings
from arraybench.model.cell import Cell
from arraybench.model.replicate import Replicate, Usage

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
        u.sample_cores = [1.0 if s > 1e-3 else 1.9 for s in samples]  # both threads ran when they could
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


def test_a_machine_busy_only_with_the_hypervisor_says_so_and_names_no_cores():
    stolen = _usage(others=0.0)
    stolen.steal_s = 0.08 * stolen.machine_total_s
    stolen.derive()
    rec = _record("matmul", "numpy", [(0.2, stolen) for _ in range(3)])
    assert rec.busy is True
    assert busy_machine([rec]) == ["1 of 1 cells were measured while the hypervisor stole up to 8% of the "
                                   "CPU time: their times are slower and less repeatable than on a quiet "
                                   "machine; each says so."]


def test_findings_include_the_explanations_with_the_environment():
    rec = _fft_with_fresh_pages()
    env = _environment("Haswell", ["avx", "avx2", "avx512f"], "Haswell")
    found = findings([rec], env)
    assert found[:2] == explanations([rec], env)[:2]
    assert any("OPENBLAS_CORETYPE=Haswell is set" in f for f in found)
    assert not any("OPENBLAS" in f for f in findings([rec]))  # no environment: no kernel finding


# -- thread pools competing for cores (oversubscription) -----------------------------------------
def _pools(backend: str = "torch", threads: int = 2, affinity: int = 2, machine_id: str = "m1") -> dict:
    """An environment whose worker of ``backend`` reported a pool of ``threads`` threads."""
    info = {"affinity_cpus": affinity, "threadpools": [{"user_api": "openmp", "num_threads": threads}]}
    if backend == "torch":
        info["torch_threads"] = threads
    return {"machine_id": machine_id, "backends": {f"{backend}/cpu": info}}


def _contended_matmul(busy: int = 3, quiet: int = 3, slow: float = 10e-3, fast: float = 46e-6):
    # Like PyTorch's 100 x 100 matmul on 2 cores: 46 µs alone, 10 ms while another process spun
    # on a core and its two threads took turns (each preempted ~35 times a call).
    return _record("matmul", "torch",
                   [(slow, _usage(others=1.0, cores=0.9, switches=35)) for _ in range(busy)]
                   + [(fast, _usage(others=0.0, cores=1.9, switches=0)) for _ in range(quiet)],
                   "small", 100)


def test_a_pool_that_outnumbers_the_cores_left_it_is_named_with_its_cost_and_the_fix():
    rec = _contended_matmul()
    (text,) = oversubscription(oversubscribed([rec], _pools()))
    assert text == (
        "The thread pool of PyTorch CPU competed for cores on matmul small (n = 100): 2 threads on the "
        "1.0 of 2 cores other processes left it, preempted 35 times a call (oversubscription: a call "
        "waits for its slowest thread, and a thread without a core waits its turn while the others "
        "spin); the 3 of 6 processes that competed took 10 ms a call against 46 µs in those that had "
        "the cores (217× slower). Give it the cores it gets: threads=1 here, "  # from Python: the API's name
        "torch.set_num_threads(1) in your own program.")
    # In the run's findings, once: the bimodal note leaves the cause to this sentence.
    found = findings([rec], _pools())
    assert sum("competed for cores" in f for f in found) == 1
    assert bimodal_causes([rec]) and not bimodal_causes([rec], {rec.key})
    assert not any("runs in two modes" in f for f in found)


def test_a_quiet_machine_never_has_an_oversubscribed_pool():
    # Two modes, but no other process: the pool had its cores (the slow mode is something else).
    rec = _record("matmul", "torch", [(10e-3, _usage(others=0.05, switches=35)) for _ in range(3)]
                  + [(46e-6, _usage(others=0.0)) for _ in range(3)], "small", 100)
    assert rec.busy is False
    assert oversubscribed([rec], _pools()) == []
    assert not any("competed for cores" in f or "--threads" in f for f in findings([rec], _pools()))


def test_a_busy_machine_is_not_oversubscription_when_the_threads_fit_or_there_is_one():
    # 4 threads of 8 CPUs while others use 1.5: they fit. One thread cannot compete with itself.
    fits = _record("matmul", "torch", [(10e-3, _usage(others=1.5, cpus=8)) for _ in range(3)], "small", 100)
    assert fits.busy is True
    assert oversubscribed([fits], _pools(threads=4, affinity=8)) == []
    one = _record("matmul", "torch", [(10e-3, _usage(others=1.8)) for _ in range(3)], "small", 100)
    assert oversubscribed([one], _pools(threads=1)) == []
    # Without the worker's thread counts nothing is claimed.
    assert oversubscribed([_contended_matmul()], None) == []


def test_competing_that_was_measured_to_cost_nothing_is_not_a_finding():
    rec = _contended_matmul(slow=1e-3, fast=1e-3)
    assert oversubscribed([rec], _pools()) == []


def test_every_process_competing_gives_the_modes_of_its_samples_or_says_nothing_unmeasured():
    cell = Cell("matmul", "small", 100, "torch", "cpu", "float64", "latency")
    reps = []
    for _ in range(3):
        samples = [46e-6, 10e-3] * 10  # within each process, the samples that lost a core are slow
        u = _usage(others=1.0, switches=20)
        u.sample_others_cores = [1.6 if s > 1e-3 else 0.2 for s in samples]
        u.sample_cores = [1.0 if s > 1e-3 else 1.9 for s in samples]  # both threads ran when they could
        reps.append(Replicate(samples_s=samples, number=1, max_rel_error=0.0, tolerance=1e-14, usage=u))
    rec = aggregate(cell, reps, 3, rel_ci=0.02)
    (text,) = oversubscription(oversubscribed([rec], _pools()))
    # The modes differ in the cores the pool got (its own, or those others left it): both say it.
    assert "its samples fall in two modes, 46 µs and 10 ms (217× slower; cores used" in text
    assert "in the slow samples" in text
    # Every process competed the whole time: the cost was not measured, so nothing is claimed.
    steady = _record("matmul", "torch", [(10e-3, _usage(others=1.7, switches=4)) for _ in range(3)], "small", 100)
    assert oversubscribed([steady], _pools()) == []


def test_the_same_cell_run_with_one_thread_gives_the_cost():
    # The mask-gather: 8.19 ms with all threads on a busy machine, 55.7 µs with --threads 1,
    # two runs of one machine merged (each record labelled with its run).
    every = _record("mask_gather", "torch", [(8.19e-3, _usage(others=1.2, switches=12)) for _ in range(3)])
    one = _record("mask_gather", "torch", [(55.7e-6, _usage(others=1.2, cores=1.0)) for _ in range(3)])
    every.machine, one.machine = "all-threads", "threads-1"
    env = {"machines": {"all-threads": _pools(threads=2), "threads-1": _pools(threads=1, affinity=1)}}
    found = oversubscribed([every, one], env)
    assert [c.record for c in found] == [every]
    (text,) = oversubscription(found)
    assert text.startswith("The thread pool of PyTorch CPU @ all-threads competed for cores on mask_gather large")
    assert "with 1 thread (threads-1) the same cell took 55.7 µs (147× faster)" in text
    # Another machine's single-thread run says nothing about this one: no cost measured, no note.
    env["machines"]["threads-1"] = _pools(threads=1, affinity=1, machine_id="m2")
    assert oversubscribed([every, one], env) == []


def _with_fewer(rec, env, fewer_env, median):
    """``rec`` and the same cell measured with fewer threads on the same machine, merged."""
    fewer = _record(rec.workload, rec.backend, [(median, _usage(others=rec.replicates[0].usage.others_cores,
                                                                cpus=rec.replicates[0].usage.machine_cpus))
                                                for _ in range(3)], rec.size_label, rec.size)
    rec.machine, fewer.machine = "all", "fewer"
    return [rec, fewer], {"machines": {"all": env, "fewer": fewer_env}}


def test_more_threads_than_cpus_and_each_librarys_own_fix():
    # OMP_NUM_THREADS=8 on 2 CPUs: oversubscribed however quiet the machine, and measured so by a
    # run with 2 threads.
    numpy = _record("matmul", "numpy", [(1e-3, _usage(others=0.0, switches=3)) for _ in range(3)], "small", 100)
    assert oversubscribed([numpy], _pools("numpy", threads=8)) == []  # no cost measured: nothing said
    (text,) = oversubscription(oversubscribed(*_with_fewer(numpy, _pools("numpy", threads=8),
                                                           _pools("numpy", threads=2), 0.4e-3)))
    assert "The thread pool of NumPy CPU @ all competed for cores on matmul small (n = 100): 8 threads on 2 CPUs" in text
    # Its 2 CPUs were free: 2 threads fit them.
    assert text.endswith("threads=2 here, threadpoolctl.threadpool_limits(2), or OMP_NUM_THREADS=2 "
                         "before NumPy loads in your own program.")
    jax = _record("sort", "jax", [(1e-3, _usage(others=1.5, cpus=4)) for _ in range(3)], "small", 100)
    (text,) = oversubscription(oversubscribed(*_with_fewer(jax, _pools("jax", threads=1, affinity=4),
                                                           _pools("jax", threads=1, affinity=2), 0.5e-3)))
    assert "The thread pool of JAX CPU @ all competed for cores on sort small (n = 100): 4 threads on the 2.5 of 4" in text
    assert "threads=2 here, os.sched_setaffinity(0, range(2)) (or taskset) before JAX starts" in text


def test_single_threaded_code_on_a_loaded_machine_is_never_told_to_use_fewer_threads():
    # NumPy's element-wise code with an idle 2-thread BLAS pool: 0.99 cores in every process, slower
    # where another process spun. Load, not threads: no oversubscription note.
    rec = _record("elementwise", "numpy", [(2e-3, _usage(others=1.0, cores=0.99, switches=5)) for _ in range(3)]
                  + [(1e-3, _usage(others=0.0, cores=1.0)) for _ in range(3)])
    assert oversubscribed([rec], _pools("numpy", threads=2)) == []
    assert not any("competed for cores" in f for f in findings([rec], _pools("numpy", threads=2)))
