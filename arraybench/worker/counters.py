"""The counters a worker reads around each sample: its own CPU time, faults, switches and memory,
hardware counts where allowed, and the load the rest of the machine put on it.

The worker samples its cells round-robin, so each sample window (``begin`` before a sample,
``end`` after it) is attributed to the cell being sampled; nothing here runs inside the timed loop.
Each read costs some 20 µs (getrusage, /proc/stat, /proc/loadavg, /proc/self/status), against
samples of 5 ms or more. ``usage(i)`` turns a cell's windows into its ``Usage``.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass

from ..host.cpu_time import MachineTime
from .perf_events import Counters as HardwareCounters
from .perf_events import open_counters
from ..model.usage import Usage



def _open(path: str, flags: int = os.O_RDONLY) -> int | None:
    try:
        return os.open(path, flags)
    except OSError:
        return None


@dataclass
class _Snapshot:
    wall: float
    user: float
    system: float
    minflt: int
    majflt: int
    nvcsw: int
    nivcsw: int
    busy: float | None  # machine CPU seconds (all CPUs), steal excluded
    steal: float | None
    total: float | None
    rss: int | None
    hardware: dict[str, int] | None


class SampleCounters:
    """Per-cell usage, accumulated over the windows around that cell's samples."""

    def __init__(self, cells: int, hardware: bool = True) -> None:
        self._usage = [Usage() for _ in range(cells)]
        self._peak = [None] * cells  # type: list[int | None]
        self._machine_time = MachineTime()
        self._loadavg = _open("/proc/loadavg")
        self._status = _open("/proc/self/status")
        # Writing 5 to clear_refs resets the peak resident size (VmHWM) to the current one.
        self._clear_refs = _open("/proc/self/clear_refs", os.O_WRONLY)
        self._cpus = os.cpu_count() or 1
        self._hw: HardwareCounters | None = open_counters() if hardware else None
        self._begin: _Snapshot | None = None

    # -- reading -------------------------------------------------------------------------------
    def _machine(self) -> tuple[float | None, float | None, float | None]:
        """(busy, steal, total) CPU seconds of the whole machine since boot (``host/cpu_time``)."""
        return self._machine_time.read() or (None, None, None)

    def _status_kb(self, key: bytes) -> int | None:
        if self._status is None:
            return None
        try:
            text = os.pread(self._status, 4096, 0)
            start = text.index(key) + len(key)
            return int(text[start:text.index(b"kB", start)].strip(b": \t")) * 1024
        except (OSError, ValueError):
            return None

    def _snapshot(self) -> _Snapshot:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        busy, steal, total = self._machine()
        return _Snapshot(time.perf_counter(), ru.ru_utime, ru.ru_stime, ru.ru_minflt, ru.ru_majflt,
                         ru.ru_nvcsw, ru.ru_nivcsw, busy, steal, total,
                         self._status_kb(b"VmRSS"), self._hw.read() if self._hw else None)

    # -- the windows ---------------------------------------------------------------------------
    def begin(self, cell: int) -> None:
        """Just before a sample of ``cell``."""
        if self._hw is not None:
            self._hw.refresh()  # a thread pool may have started since the last sample
        if self._clear_refs is not None:
            try:
                os.write(self._clear_refs, b"5")
            except OSError:
                self._clear_refs = None
        self._begin = self._snapshot()

    def resident_growth(self) -> int | None:
        """How much the resident memory grew since ``begin`` (None where it cannot be read)."""
        now = self._status_kb(b"VmRSS")
        if now is None or self._begin is None or self._begin.rss is None:
            return None
        return now - self._begin.rss

    def cancel(self) -> None:
        """Forget the window ``begin`` opened: its sample was taken back (a warm-up's)."""
        self._begin = None

    def end(self, cell: int, calls: int) -> None:
        """Just after that sample, which made ``calls`` calls."""
        a = self._begin
        if a is None:
            return
        self._begin = None
        b = self._snapshot()
        u = self._usage[cell]
        wall = b.wall - a.wall
        user, system = max(b.user - a.user, 0.0), max(b.system - a.system, 0.0)
        faults = b.minflt - a.minflt
        u.calls += calls
        u.wall_s += wall
        u.user_s += user
        u.system_s += system
        u.minor_faults += faults
        u.major_faults += b.majflt - a.majflt
        u.voluntary_switches += b.nvcsw - a.nvcsw
        u.involuntary_switches += b.nivcsw - a.nivcsw
        others = None
        if None not in (a.busy, b.busy, a.total, b.total, a.steal, b.steal):
            busy = max(b.busy - a.busy, 0.0)  # type: ignore[operator]
            u.machine_busy_s += busy
            u.steal_s += max(b.steal - a.steal, 0.0)  # type: ignore[operator]
            u.machine_total_s += max(b.total - a.total, 0.0)  # type: ignore[operator]
            others = max(busy - user - system, 0.0) / wall if wall > 0 else None
        load = self._load()
        if load is not None:
            u.load_sum += load
            u.load_readings += 1
        peak = self._status_kb(b"VmHWM") if self._clear_refs is not None else None
        if peak is not None and a.rss is not None:
            growth = max(peak - a.rss, 0)
            self._peak[cell] = growth if self._peak[cell] is None else max(self._peak[cell], growth)
        if a.hardware is not None and b.hardware is not None:
            for name, value in b.hardware.items():
                setattr(u, name, (getattr(u, name) or 0) + max(value - a.hardware[name], 0))
        if calls:
            cpu = user + system
            u.sample_minor_faults.append(faults / calls)
            u.sample_cores.append(cpu / wall if wall > 0 else 0.0)
            u.sample_kernel_share.append(system / cpu if cpu > 0 else 0.0)
            u.sample_others_cores.append(others if others is not None else 0.0)

    def _load(self) -> float | None:
        if self._loadavg is None:
            return None
        try:
            return float(os.pread(self._loadavg, 128, 0).split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def usage(self, cell: int) -> Usage | None:
        """What ``cell`` used over its windows; None when it was never sampled in one."""
        u = self._usage[cell]
        if not u.calls:
            return None
        u.peak_growth_bytes = self._peak[cell]
        u.machine_cpus = self._cpus
        if self._hw is not None and self._hw.reason:
            u.hardware_absent = self._hw.reason
        elif self._hw is None:
            u.hardware_absent = "hardware counters not requested"
        return u.derive()

    def close(self) -> None:
        self._machine_time.close()
        for fd in (self._loadavg, self._status, self._clear_refs):
            if fd is not None:
                os.close(fd)
        self._loadavg = self._status = self._clear_refs = None
        if self._hw is not None:
            self._hw.close()
