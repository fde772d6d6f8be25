"""One thread setting, applied the same way to every library's worker.

Environment variables must be set before a library loads its thread pools, and the CPU affinity is
the one limit XLA reliably respects, so both are decided here, in the parent, and handed to the
worker process at its start. Inside the worker, threadpoolctl and ``torch.set_num_threads`` apply
the limit again and the library's own view is recorded (see ``backends.cpu.cpu_threads_info``).
"""

from __future__ import annotations

import os
from typing import Mapping


def available_cpus() -> list[int]:
    """The CPUs this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def worker_cpus(threads: int | None) -> list[int] | None:
    """The CPUs a worker is pinned to, or None to leave it free (the default: all cores)."""
    if threads is None:
        return None
    cpus = available_cpus()
    return cpus[: max(1, min(threads, len(cpus)))]


def worker_env(base: Mapping[str, str], *, threads: int | None, backend: str, device: str,
               allow_tf32: bool) -> dict[str, str]:
    """The environment of a worker process."""
    env = dict(base)
    env["PYTHONUNBUFFERED"] = "1"
    # Keep the worker from writing bytecode caches into a user's tree mid-benchmark.
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    if threads is not None:
        n = str(threads)
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
            env[var] = n
        if backend == "jax":
            flags = env.get("XLA_FLAGS", "")
            # XLA's CPU thread pool follows the affinity; one thread also needs Eigen's pool off.
            if threads == 1:
                flags += " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
            env["XLA_FLAGS"] = flags.strip()
    if backend == "jax" and device == "cpu":
        # A CPU worker must not initialise CUDA (slow, and it reserves GPU memory).
        env["JAX_PLATFORMS"] = "cpu"
    if backend == "cupy":
        env["CUPY_TF32"] = "1" if allow_tf32 else "0"
    return env
