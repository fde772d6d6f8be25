"""The counters a worker reads around each sample: its own CPU time, faults, switches and memory,
hardware counts where allowed, and the load the rest of the machine put on it.

Each sample window (``begin`` before a sample, ``end`` after it) is attributed to the cell being
sampled, outside the timed loop: a read costs some 20 µs against samples of 5 ms or more. Hardware
counters come from a small ctypes binding to ``perf_event_open``, per thread (a library's thread
pool does the work), user space only (what ``perf_event_paranoid`` 2 allows; most VMs have no PMU).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import resource
import struct
import time
from dataclasses import dataclass

from ..host.cpu_time import MachineTime
from ..model.replicate import Usage
from .footprint import status_bytes

#: The system call's number, per architecture.
_SYSCALL = {"x86_64": 298, "amd64": 298, "aarch64": 241, "arm64": 241, "riscv64": 241,
            "ppc64le": 319, "ppc64": 319, "s390x": 331, "i386": 336, "i686": 336}

PERF_TYPE_HARDWARE = 0
#: Hardware event ids (``PERF_COUNT_HW_*``).
HARDWARE_EVENTS = {"cycles": 0, "instructions": 1, "cache_references": 2, "cache_misses": 3}

_DISABLED, _EXCLUDE_KERNEL, _EXCLUDE_HV = 1 << 0, 1 << 5, 1 << 6
_IOC_ENABLE = 0x2400
#: read_format: the value, then the time enabled and the time running (to see multiplexing).
_READ_TIMES = 1 | 2


class _Attr(ctypes.Structure):
    """``struct perf_event_attr`` up to PERF_ATTR_SIZE_VER0 (64 bytes), every kernel's: the fields
    this binding sets; a later field the kernel reads as zero."""

    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("config", ctypes.c_uint64),
                ("sample_period", ctypes.c_uint64), ("sample_type", ctypes.c_uint64),
                ("read_format", ctypes.c_uint64), ("flags", ctypes.c_uint64),
                ("wakeup_events", ctypes.c_uint32), ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64)]


def paranoid_level() -> int | None:
    """``/proc/sys/kernel/perf_event_paranoid``: 2 (the usual default) allows user-space counting
    of one's own process; 3 or more (some distributions) forbids it."""
    with contextlib.suppress(OSError, ValueError), open("/proc/sys/kernel/perf_event_paranoid", "rb") as f:
        return int(f.read())
    return None


def _open_event(kind: int, config: int, tid: int) -> int:
    """A file descriptor counting one event for thread ``tid``, enabled; ``OSError`` with the
    reason in words when the kernel refuses."""
    number = _SYSCALL.get(platform.machine().lower())
    if number is None:
        raise OSError(errno.ENOSYS, f"no perf_event_open binding for {platform.machine()}")
    attr = _Attr(type=kind, size=ctypes.sizeof(_Attr), config=config, read_format=_READ_TIMES,
                 flags=_DISABLED | _EXCLUDE_KERNEL | _EXCLUDE_HV)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(number, ctypes.byref(attr), tid, -1, -1, 0)
    if fd < 0:
        code = ctypes.get_errno()
        level = paranoid_level()
        paranoid = "" if level is None else f"; perf_event_paranoid is {level}"
        raise OSError(code, f"perf_event_open failed with {errno.errorcode.get(code, str(code))}: "
                            f"{_WHY.get(code) or os.strerror(code)}{paranoid}")
    libc.ioctl(fd, _IOC_ENABLE, 0)
    return fd


_NO_PMU = "this machine exposes no hardware counters (no PMU; usual in VMs)"
_FORBIDDEN = "not permitted (perf_event_paranoid or a seccomp profile forbids it)"
#: Why perf_event_open failed, in words, by its errno.
_WHY = {errno.ENOENT: _NO_PMU, errno.EOPNOTSUPP: _NO_PMU, errno.EACCES: _FORBIDDEN, errno.EPERM: _FORBIDDEN,
        errno.ENOSYS: "the kernel has no perf_event_open"}


class Counters:
    """Events (the hardware's by default) counted on every thread of this process; threads started
    later are added by ``refresh``. ``reason`` is empty when counting works, else why nothing is.

    >>> isinstance(Counters().reason, str)
    True
    """

    def __init__(self, events: dict[str, tuple[int, int]] | None = None) -> None:
        self.events = events or {name: (PERF_TYPE_HARDWARE, config) for name, config in HARDWARE_EVENTS.items()}
        self.reason = ""
        self._fds: dict[int, dict[str, int]] = {}
        self.refresh()

    def refresh(self) -> None:
        """Open the events on threads not counted yet (a thread pool started since)."""
        if self.reason:
            return
        try:
            threads = sorted(int(t) for t in os.listdir("/proc/self/task"))
        except OSError:
            threads = [0]
        for tid in (t for t in threads if t not in self._fds):
            opened: dict[str, int] = {}
            try:
                for name, (kind, config) in self.events.items():
                    opened[name] = _open_event(kind, config, tid)
            except OSError as exc:
                for fd in opened.values():
                    os.close(fd)
                if not self._fds:
                    self.reason = str(exc.strerror)
                    return
                continue  # a thread that just ended; the others still count
            self._fds[tid] = opened

    def read(self) -> dict[str, int] | None:
        """Each event's total over the counted threads, or None when nothing is counted."""
        if self.reason or not self._fds:
            return None
        totals = dict.fromkeys(self.events, 0)
        for opened in self._fds.values():
            for name, fd in opened.items():
                with contextlib.suppress(OSError):
                    # Scaled up where the kernel multiplexed the event with others.
                    value, enabled, running = struct.unpack("QQQ", os.read(fd, 24))
                    totals[name] += int(value * enabled / running) if running and running < enabled else value
        return totals

    def close(self) -> None:
        for opened in self._fds.values():
            for fd in opened.values():
                os.close(fd)
        self._fds.clear()


def _open(path: str, flags: int = os.O_RDONLY) -> int | None:
    with contextlib.suppress(OSError):
        return os.open(path, flags)
    return None


@dataclass
class _Snapshot:
    wall: float
    ru: resource.struct_rusage
    machine: tuple[float, float, float] | None  # the machine's CPU seconds (``MachineTime.read``)
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
        self._hw: Counters | None = Counters() if hardware else None
        self._begin: _Snapshot | None = None

    def _snapshot(self) -> _Snapshot:
        return _Snapshot(time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF), self._machine_time.read(),
                         status_bytes(b"VmRSS", self._status), self._hw.read() if self._hw else None)

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
        now = status_bytes(b"VmRSS", self._status)
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
        user, system = max(b.ru.ru_utime - a.ru.ru_utime, 0.0), max(b.ru.ru_stime - a.ru.ru_stime, 0.0)
        faults = b.ru.ru_minflt - a.ru.ru_minflt
        u.calls += calls
        u.wall_s += wall
        u.user_s += user
        u.system_s += system
        u.minor_faults += faults
        u.major_faults += b.ru.ru_majflt - a.ru.ru_majflt
        u.voluntary_switches += b.ru.ru_nvcsw - a.ru.ru_nvcsw
        u.involuntary_switches += b.ru.ru_nivcsw - a.ru.ru_nivcsw
        others = None
        if a.machine is not None and b.machine is not None:
            busy, steal, total = (max(y - x, 0.0) for x, y in zip(a.machine, b.machine))
            # Busy time is sampled at the ticks, which turns can fall in step with (a worker's nine
            # 5.5 ms windows each read 10-20 ms busy); idle time is kept to the microsecond, so
            # busy is what of the CPUs' wall time was not idle.
            busy = max(self._cpus * wall - (total - busy), 0.0)
            u.machine_busy_s += busy
            u.steal_s += steal
            u.machine_total_s += total
            others = max(busy - user - system, 0.0) / wall if wall > 0 else None
        if self._loadavg is not None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                u.load_sum += float(os.pread(self._loadavg, 128, 0).split()[0])
                u.load_readings += 1
        peak = status_bytes(b"VmHWM", self._status) if self._clear_refs is not None else None
        if peak is not None and a.rss is not None:
            self._peak[cell] = max(peak - a.rss, 0, self._peak[cell] or 0)
        if a.hardware is not None and b.hardware is not None:
            for name, value in b.hardware.items():
                setattr(u, name, (getattr(u, name) or 0) + max(value - a.hardware[name], 0))
        if calls:
            cpu = user + system
            u.sample_minor_faults.append(faults / calls)
            u.sample_cores.append(cpu / wall if wall > 0 else 0.0)
            u.sample_kernel_share.append(system / cpu if cpu > 0 else 0.0)
            u.sample_others_cores.append(others if others is not None else 0.0)

    def usage(self, cell: int) -> Usage | None:
        """What ``cell`` used over its windows; None when it was never sampled in one."""
        u = self._usage[cell]
        if not u.calls:
            return None
        u.peak_growth_bytes = self._peak[cell]
        u.machine_cpus = self._cpus
        u.hardware_absent = self._hw.reason if self._hw is not None else "hardware counters not requested"
        return u.derive()

    def close(self) -> None:
        self._machine_time.close()
        for fd in (self._loadavg, self._status, self._clear_refs):
            if fd is not None:
                os.close(fd)
        self._loadavg = self._status = self._clear_refs = None
        if self._hw is not None:
            self._hw.close()
