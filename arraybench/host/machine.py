"""What machine and libraries produced a result, gathered without importing torch, jax or cupy; what
only a library knows (BLAS, its thread pools, GPU names) the workers report under ``backends``."""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
from typing import Any

from ..backends import SPECS
from ..model.cell import worker_key
from ..model.runs import machine_id
from ..model import version as arraybench_version
from .threads import GPU, available_cpus, recorded

_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "XLA_FLAGS")


def _cpuinfo() -> list[dict[str, str]]:
    """/proc/cpuinfo, one dict a CPU (keys in lower case); empty without it."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            blocks = f.read().split("\n\n")
    except OSError:
        return []
    return [{k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in block.splitlines())}
            for block in blocks if block.strip()]


def cpu_model() -> str:
    """The CPU's marketing name, from /proc/cpuinfo where there is one."""
    name = next((cpu["model name"] for cpu in _cpuinfo() if cpu.get("model name")), None)
    return name or platform.processor() or platform.machine()


def physical_cores() -> int | None:
    """Physical cores (distinct socket/core pairs in /proc/cpuinfo); None where it does not say."""
    return len({(cpu.get("physical id"), cpu["core id"]) for cpu in _cpuinfo() if "core id" in cpu}) or None


def memory_gib() -> float | None:
    """Total physical memory."""
    with contextlib.suppress(ValueError, OSError, AttributeError):
        return round(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 1024**3, 1)
    return None


def gpus() -> list[dict[str, str]]:
    """NVIDIA GPUs as nvidia-smi lists them; empty without a driver."""
    try:  # no nvidia-smi on the PATH is an OSError too
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    rows = [[p.strip() for p in line.split(",")] for line in out.strip().splitlines()]
    return [dict(zip(("name", "driver", "memory"), row)) for row in rows if len(row) == 3]


def library_versions() -> dict[str, str | None]:
    """Installed versions from package metadata."""
    versions: dict[str, str | None] = {name: s.version() for name, s in SPECS.items()}
    # numba and llvmlite: NumPy's compiled mode; jax-metal: JAX on Apple GPUs.
    for extra in ("jaxlib", "numba", "llvmlite", "jax-metal", "threadpoolctl", "array-api-compat", "matplotlib"):
        versions[extra] = None
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[extra] = importlib.metadata.version(extra)
    return versions


#: The instruction-set extensions that decide which kernels BLAS, FFT and XLA pick.
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
             "avx512_bf16", "amx_tile", "asimd", "sve", "sve2")


def cpu_flags() -> list[str]:
    """The CPU's feature flags as the kernel lists them (``flags`` on x86, ``Features`` on Arm)."""
    return next((cpu[k].split() for cpu in _cpuinfo() for k in ("flags", "features") if k in cpu), [])


def fingerprint(found_gpus: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """What makes this machine this one, without personal data (the host name only hashed)."""
    flags = cpu_flags()
    host = socket.gethostname()
    return {
        "cpu_model": cpu_model(),
        "cpu_isa": [f for f in ISA_FLAGS if f in flags],
        "cpu_flags_sha": hashlib.sha256(" ".join(sorted(flags)).encode()).hexdigest()[:12],
        "cpu_count": os.cpu_count(),
        "cpu_physical_cores": physical_cores(),
        "memory_gib": memory_gib(),
        "gpus": [{"name": g.get("name"), "driver": g.get("driver")} for g in (found_gpus or [])],
        "os": f"{platform.system()} {platform.release()}",
        "arch": platform.machine(),
        "host_sha": hashlib.sha256(host.encode()).hexdigest()[:12],
    }


def collect(threads: int | None = None) -> dict[str, Any]:
    """The parent's view of the machine."""
    found_gpus = gpus()
    fp = fingerprint(found_gpus)
    return {
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds"),
        "arraybench": arraybench_version(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        **{k: fp[k] for k in ("cpu_model", "cpu_count", "cpu_physical_cores", "memory_gib")},
        "cpus_available": len(available_cpus()),
        "gpus": found_gpus,
        "gpu_name": found_gpus[0]["name"] if found_gpus else None,
        "libraries": library_versions(),
        "threads_requested": threads,
        "thread_env": {k: os.environ[k] for k in _THREAD_VARS if k in os.environ},
        # every variable that changes kernels, threads or precision
        "kernel_env": recorded(os.environ),
        "fingerprint": fp,
        "machine_id": machine_id(fp),
        "gpu_env": {k: os.environ[k] for k in GPU if k in os.environ},
        "backends": {},
    }


def merge_worker_info(env: dict[str, Any], backend: str, device: str, info: dict[str, Any],
                      environment: str = "") -> None:
    """Fold a worker's self-report into the environment; an ``environment``'s under ``numpy/cpu[np126]``,
    its BLAS only where the run has no other."""
    # Update, not replace: what only one worker of the configuration reports (its kernels) stays.
    env.setdefault("backends", {}).setdefault(worker_key(backend, device, environment), {}).update(info)
    if environment and env.get("blas"):
        return
    if backend == "numpy" and info.get("blas"):
        env["blas"] = info["blas"]
    if device == "gpu" and info.get("device_name") and not env.get("gpu_name"):
        env["gpu_name"] = info["device_name"]
