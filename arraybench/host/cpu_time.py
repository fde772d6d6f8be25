"""CPU time from /proc, the machine's and one process's (Linux; elsewhere none): read by a worker
around each sample and by the parent while workers take turns; others' load is busy time less ours."""

from __future__ import annotations

import os

#: The length of one tick of /proc's CPU counts.
TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


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


def process_seconds(pid: int | str) -> float:
    """A process's user and system CPU seconds, its threads' together (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return 0.0
    fields = text[text.rindex(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S  # utime, stime: fields 14 and 15 of stat
