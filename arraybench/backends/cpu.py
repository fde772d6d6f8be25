"""What the CPU backends share: cache eviction and the view of thread pools from inside a worker."""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np


def last_level_cache_bytes() -> int:
    """The largest CPU cache, from sysfs; 32 MiB when the system does not say."""
    best = 0
    for path in Path("/sys/devices/system/cpu/cpu0/cache").glob("*/size"):
        with suppress(OSError):
            text = path.read_text().strip()
            digits = text[:-1] if text[-1:] in ("K", "M", "G") else text
            if digits.isdigit():
                best = max(best, int(digits) * {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1))
    return best or 32 * 1024**2


def cpu_flush() -> Callable[[], None]:
    """A function that writes, then reads, a buffer twice the last-level cache, evicting it."""
    buf = np.zeros(2 * last_level_cache_bytes() // 8, dtype=np.float64)

    def flush() -> None:
        np.add(buf, 1.0, out=buf)
        float(buf[:: 4096 // 8].sum())

    return flush


def cpu_threads_info() -> dict[str, Any]:
    """Thread pools as the libraries inside this process report them (threadpoolctl's view)."""
    info: dict[str, Any] = {}
    try:
        info["affinity_cpus"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        info["affinity_cpus"] = os.cpu_count()
    try:
        from threadpoolctl import threadpool_info

        pools = threadpool_info()
        # "architecture": the kernel family OpenBLAS (or BLIS) chose, or was forced to (OPENBLAS_CORETYPE).
        keys = ("user_api", "internal_api", "num_threads", "version", "prefix", "architecture")
        info["threadpools"] = [{k: p.get(k) for k in keys} for p in pools]
        blas = [p for p in pools if p.get("user_api") == "blas"]
        if blas:
            info["blas"] = f"{blas[0].get('internal_api')} {blas[0].get('version') or ''}".strip()
            if blas[0].get("architecture"):
                info["blas_architecture"] = blas[0]["architecture"]
    except Exception as exc:  # threadpoolctl inspects native libraries; never fail a run over it
        info["threadpools_error"] = str(exc)
    return info


@contextmanager
def stdout_to(fd: int) -> Iterator[None]:
    """File descriptor 1, where C libraries print, pointed at ``fd`` for the block and given back;
    what was written on either side is flushed first (C stdio buffers what printf writes to a file)."""

    def flush() -> None:
        with suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
            ctypes.CDLL(None).fflush(None)

    flush()
    saved = os.dup(1)
    os.dup2(fd, 1)
    try:
        yield
    finally:
        flush()
        os.dup2(saved, 1)
        os.close(saved)


def captured_stdout(fn: Callable[[], Any]) -> str:
    """What ``fn`` writes to file descriptor 1 (C libraries' verbose modes print there), as text."""
    with tempfile.TemporaryFile() as tmp:
        with stdout_to(tmp.fileno()):
            fn()
        tmp.seek(0)
        return tmp.read().decode("utf-8", "replace")


def host_memory() -> tuple[int, int] | None:
    """(available, total) bytes of host memory for this process, cgroup limits included."""
    info: dict[str, int] = {}
    with suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                info[key] = int(parts[0]) * 1024
    total, available = info.get("MemTotal"), info.get("MemAvailable", info.get("MemTotal"))
    if total is None:
        try:
            page = os.sysconf("SC_PAGE_SIZE")
            total = os.sysconf("SC_PHYS_PAGES") * page
            available = os.sysconf("SC_AVPHYS_PAGES") * page
        except (ValueError, OSError, AttributeError):
            return None
    with suppress(OSError):  # a cgroup v2 memory limit, where one is set ("max": none)
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        usage = Path("/sys/fs/cgroup/memory.current").read_text().strip()
        if limit.isdigit() and usage.isdigit() and int(limit) < total:
            total, available = int(limit), min(available, max(0, int(limit) - int(usage)))
    return available, total
