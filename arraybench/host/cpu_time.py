"""CPU time from /proc, the machine's and one process's (Linux; elsewhere none): read by a worker
around each sample and by the parent while workers take turns; others' load is busy time less ours.
And a worker's own threads, which it lets settle before each cell's calls."""

from __future__ import annotations

import os
import threading
import time
from contextlib import suppress
from typing import Collection

from ..model.replicate import TICK_S
from ..numeric.stopping import SETTLE_S


class MachineTime:
    """The machine's CPU seconds since boot, all CPUs, from /proc/stat kept open."""

    def __init__(self) -> None:
        try:
            self._fd: int | None = os.open("/proc/stat", os.O_RDONLY)
        except OSError:
            self._fd = None

    def read(self) -> tuple[float, float, float] | None:
        """(busy, steal, total) seconds (busy leaves out idle, I/O wait and steal); None without /proc/stat."""
        if self._fd is None:
            return None
        try:
            line = os.pread(self._fd, 512, 0).split(b"\n", 1)[0].split()
            ticks = [int(v) for v in line[1:9]]
        except (OSError, ValueError, IndexError):
            return None
        user, nice, system, idle, iowait, irq, softirq, steal = ticks + [0] * (8 - len(ticks))
        busy = user + nice + system + irq + softirq
        return busy * TICK_S, steal * TICK_S, (busy + idle + iowait + steal) * TICK_S

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _read(path: str) -> bytes:
    with suppress(OSError), open(path, "rb") as f:
        return f.read()
    return b""


def process_seconds(pid: int | str) -> float:
    """A process's user and system CPU seconds, its threads' together (0 once it is gone)."""
    fields = (text := _read(f"/proc/{pid}/stat"))[text.rfind(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S if text else 0.0  # utime, stime: fields 14, 15


def _others() -> list[str]:
    """This process's threads but the caller's."""
    with suppress(OSError):
        return [tid for tid in os.listdir("/proc/self/task") if tid != str(threading.get_native_id())]
    return []


def thread_seconds() -> dict[str, float]:
    """Each of this process's other threads' seconds on a CPU (schedstat's first field, in ns)."""
    return {tid: int(text.split()[0]) / 1e9 for tid in _others() if (text := _read(f"/proc/self/task/{tid}/schedstat"))}


class OwnThreads:
    """This process's other threads, running or not (Linux; elsewhere none)."""

    def __init__(self) -> None:
        #: Threads that ran on past one whole wait: a library's own busy thread, not waited for again.
        self.always_busy: set[str] = set()

    def running(self) -> set[str]:
        """The threads running or ready to run (state R), but those always busy."""
        stats = {tid: _read(f"/proc/self/task/{tid}/stat") for tid in _others() if tid not in self.always_busy}
        return {tid for tid, text in stats.items() if text[text.rfind(b")") + 2:][:1] == b"R"}

    def settle(self, own: Collection[str] = (), most_s: float = SETTLE_S) -> float:
        """Wait up to ``most_s`` until no other thread runs but ``own`` (the pool of the calls to
        come); the seconds waited. A BLAS pool spins after a call (OpenBLAS's for ~0.1 s of a
        core): left by another operation, a neighbour a user's loop of one operation never has."""
        start = time.monotonic()
        while running := self.running() - set(own):
            if time.monotonic() - start >= most_s:
                self.always_busy |= running
                break
            time.sleep(0.001)
        return time.monotonic() - start
