"""Hardware counters (instructions, cycles, cache references and misses) through ``perf_event_open``.

A small ctypes binding to the Linux system call, so that no extra package is needed. Counters are
opened per thread of this process (a library's thread pool does the work of a matmul), in user
space only (what ``perf_event_paranoid`` 2, the usual default, allows an unprivileged process),
and read between samples, never inside the timed loop. Where the kernel refuses, ``open_counters``
says why in one line: most cloud VMs expose no PMU, so the call fails with ENOENT.

>>> counters = open_counters()
>>> isinstance(counters.reason, str)
True
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

#: The system call's number, per architecture.
_SYSCALL = {"x86_64": 298, "amd64": 298, "aarch64": 241, "arm64": 241, "riscv64": 241,
            "ppc64le": 319, "ppc64": 319, "s390x": 331, "i386": 336, "i686": 336}

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
#: Hardware event ids (``PERF_COUNT_HW_*``).
HARDWARE_EVENTS = {"cycles": 0, "instructions": 1, "cache_references": 2, "cache_misses": 3}
#: Software events, which every Linux kernel has: used to test the binding where no PMU exists.
SOFTWARE_TASK_CLOCK = 1

_DISABLED, _EXCLUDE_KERNEL, _EXCLUDE_HV = 1 << 0, 1 << 5, 1 << 6
_IOC_ENABLE, _IOC_DISABLE = 0x2400, 0x2401
#: read_format: the value, then the time enabled and the time running (to see multiplexing).
_READ_TIMES = 1 | 2


class _Attr(ctypes.Structure):
    """``struct perf_event_attr`` up to PERF_ATTR_SIZE_VER5 (112 bytes)."""

    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("config", ctypes.c_uint64),
                ("sample_period", ctypes.c_uint64), ("sample_type", ctypes.c_uint64),
                ("read_format", ctypes.c_uint64), ("flags", ctypes.c_uint64),
                ("wakeup_events", ctypes.c_uint32), ("bp_type", ctypes.c_uint32),
                ("config1", ctypes.c_uint64), ("config2", ctypes.c_uint64),
                ("branch_sample_type", ctypes.c_uint64), ("sample_regs_user", ctypes.c_uint64),
                ("sample_stack_user", ctypes.c_uint32), ("clockid", ctypes.c_int32),
                ("sample_regs_intr", ctypes.c_uint64), ("aux_watermark", ctypes.c_uint32),
                ("sample_max_stack", ctypes.c_uint16), ("reserved_2", ctypes.c_uint16)]


class PerfError(OSError):
    """perf_event_open refused; the message says why in words."""


def paranoid_level() -> int | None:
    """``/proc/sys/kernel/perf_event_paranoid``: 2 (the usual default) allows user-space counting
    of one's own process; 3 or more (some distributions) forbids it."""
    try:
        with open("/proc/sys/kernel/perf_event_paranoid", encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def open_event(kind: int, config: int, tid: int = 0) -> int:
    """A file descriptor counting one event for thread ``tid`` (0: the calling thread), disabled
    until ``enable``; ``PerfError`` with the reason when the kernel refuses."""
    number = _SYSCALL.get(platform.machine().lower())
    if number is None:
        raise PerfError(errno.ENOSYS, f"no perf_event_open binding for {platform.machine()}")
    attr = _Attr(type=kind, size=ctypes.sizeof(_Attr), config=config, read_format=_READ_TIMES,
                 flags=_DISABLED | _EXCLUDE_KERNEL | _EXCLUDE_HV)
    fd = _libc().syscall(number, ctypes.byref(attr), tid, -1, -1, 0)
    if fd < 0:
        code = ctypes.get_errno()
        raise PerfError(code, _reason(code))
    return fd


def _reason(code: int) -> str:
    name = errno.errorcode.get(code, str(code))
    level = paranoid_level()
    paranoid = "" if level is None else f"; perf_event_paranoid is {level}"
    if code == errno.ENOENT or code == errno.EOPNOTSUPP:
        why = "this machine exposes no hardware counters (no PMU; usual in VMs)"
    elif code in (errno.EACCES, errno.EPERM):
        why = "not permitted (perf_event_paranoid or a seccomp profile forbids it)"
    elif code == errno.ENOSYS:
        why = "the kernel has no perf_event_open"
    else:
        why = os.strerror(code)
    return f"perf_event_open failed with {name}: {why}{paranoid}"


def enable(fd: int) -> None:
    _libc().ioctl(fd, _IOC_ENABLE, 0)


def read_count(fd: int) -> int:
    """The event's count so far, scaled up where the kernel multiplexed it with other events."""
    value, enabled, running = struct.unpack("QQQ", os.read(fd, 24))
    if running and running < enabled:
        return int(value * enabled / running)
    return int(value)


def _threads() -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir("/proc/self/task"))
    except OSError:
        return [0]


class Counters:
    """Events counted on every thread of this process; threads started later are added by
    ``refresh``. ``reason`` is empty when counting works, else why nothing is counted."""

    def __init__(self, events: dict[str, tuple[int, int]]) -> None:
        self.events = events
        self.reason = ""
        self._fds: dict[int, dict[str, int]] = {}

    def refresh(self) -> None:
        """Open the events on threads not counted yet (a thread pool started since)."""
        if self.reason:
            return
        for tid in _threads():
            if tid in self._fds:
                continue
            opened: dict[str, int] = {}
            try:
                for name, (kind, config) in self.events.items():
                    opened[name] = open_event(kind, config, tid)
                    enable(opened[name])
            except PerfError as exc:
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
                try:
                    totals[name] += read_count(fd)
                except OSError:
                    pass
        return totals

    def close(self) -> None:
        for opened in self._fds.values():
            for fd in opened.values():
                os.close(fd)
        self._fds.clear()


def open_counters(events: dict[str, tuple[int, int]] | None = None) -> Counters:
    """Hardware counters on every thread of this process (``reason`` says why not, where not)."""
    chosen = events or {name: (PERF_TYPE_HARDWARE, config) for name, config in HARDWARE_EVENTS.items()}
    counters = Counters(chosen)
    counters.refresh()
    return counters
