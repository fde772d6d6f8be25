"""What one call costs besides time: its peak memory and, where the hardware tells, its energy;
and an out-of-memory error in words.

Both are measured after sampling, around calls of their own, never inside the timed loop.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import os
import re
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_POWERCAP = Path("/sys/class/powercap")
#: Calls go on until the energy counters have moved for this long: one call's joules are far below
#: the resolution of RAPL (updated about every ms) or NVML (less often).
ENERGY_SPAN_S = 0.2
#: What a CPU package and a GPU board draw at most, generously: a counter that moved by more jumped.
PACKAGE_MAX_W = 1000.0
BOARD_MAX_W = 3000.0
#: Added to the span between two reads before judging a jump: a short span may see a whole update's.
_UPDATE_SLACK_S = 0.01


class Reading(NamedTuple):
    """A call's peak bytes or joules, or None and why not; how it was measured."""

    value: float | None
    note: str = ""


def status_bytes(key: bytes, fd: int | None = None) -> int | None:
    """A ``kB`` line of /proc/self/status (``VmRSS``, ``VmHWM``) in bytes, read through ``fd`` where
    it is kept open (around every sample); None where it cannot be read."""
    try:
        text = os.pread(fd, 4096, 0) if fd is not None else _STATUS.read_bytes()
        start = text.index(key + b":") + len(key) + 1
        return int(text[start:text.index(b"kB", start)].strip()) * 1024
    except (OSError, ValueError):
        return None


@functools.cache
def _libc() -> ctypes.CDLL:
    """The C library, as this process already has it loaded (no search of the system's)."""
    return ctypes.CDLL(None)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
        "keepcost")]


def _allocated() -> int | None:
    """Bytes the C allocator holds allocated (glibc's ``mallinfo2``); None elsewhere."""
    try:
        mallinfo2 = _libc().mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return int(info.uordblks + info.hblkhd)


def host_peak(call: Callable[[], Any]) -> Reading:
    """Resident bytes one ``call`` added at its highest (``VmHWM`` after minus ``VmRSS`` before)."""
    if status_bytes(b"VmRSS") is None:
        return Reading(None, "host peak memory not measured: /proc/self/status not readable")
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # free memory back, so a call's allocations show
        _libc().malloc_trim(0)
    try:
        _CLEAR_REFS.write_text("5")  # the high-water mark is the present resident size again
    except OSError as exc:
        return Reading(None, "host peak memory not measured: /proc/self/clear_refs not writable "
                          f"({exc.strerror or exc}), so the resident high-water mark cannot be reset")
    allocated = _allocated()
    before = status_bytes(b"VmRSS")
    result = call()
    after = status_bytes(b"VmHWM")
    # What the call still holds counts even where it reused resident memory: other threads' malloc
    # arenas (glibc trims only the main one) would otherwise hide a JAX matmul's 32 MB output.
    held = _allocated()
    del result
    if after is None or before is None:
        return Reading(None, "host peak memory not measured: this kernel reports no VmHWM")
    grown = max(after - before, 0)
    kept = held - allocated if held is not None and allocated is not None else 0
    return Reading(max(grown, kept),
                "host resident high-water mark over one call (clear_refs 5, VmHWM - VmRSS before), "
                "at least what the call still holds allocated at its end (mallinfo2)")


def peak(backend: Any, call: Callable[[], Any]) -> Reading:
    """One call's peak memory: from the library's accounting on a device, else on the host."""
    if backend.device != "cpu":
        try:
            measured = backend.device_peak(call)
        except Exception as exc:  # the extra call or the library's counters; never the samples
            return Reading(None, f"device peak memory not measured: {type(exc).__name__}: {exc}")
        if measured is not None:
            return Reading(*measured)
    try:
        return host_peak(call)
    except Exception as exc:
        return Reading(None, f"host peak memory not measured: {type(exc).__name__}: {exc}")


# -- energy --

class Rapl:
    """The CPU packages' RAPL energy counters (``intel-rapl:N/energy_uj``), where readable."""

    def __init__(self, root: Path = _POWERCAP) -> None:
        self.zones: list[tuple[Path, int]] = []  # (energy_uj file, max_energy_range_uj)
        self.why = ""
        if not root.is_dir():
            self.why = f"RAPL not readable: {root} does not exist (a VM, or no intel_rapl driver)"
            return
        # Top-level zones are the packages; their subzones (core, dram) are counted within them.
        zones = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)
        if not zones:
            self.why = f"RAPL not readable: no intel-rapl zone under {root}"
            return
        for zone in zones:
            try:
                int((zone / "energy_uj").read_text())
                wrap = int((zone / "max_energy_range_uj").read_text())
            except (OSError, ValueError) as exc:
                self.zones = []
                self.why = (f"RAPL not readable: {zone / 'energy_uj'} "
                            f"({getattr(exc, 'strerror', None) or exc}; root only since Linux 5.10)")
                return
            self.zones.append((zone / "energy_uj", wrap))

    def read(self) -> list[int]:
        """Microjoules per package, now."""
        return [int(path.read_text()) for path, _ in self.zones]

    def moved(self, before: list[int], after: list[int]) -> list[tuple[str, float | None]]:
        """(counter, joules) each package's counter moved between two reads, its wrap-around undone
        (None: backwards)."""
        return [(f"RAPL counter {path.parent.name}", None if (uj := _moved(a, b, wrap)) is None else uj / 1e6)
                for (path, wrap), a, b in zip(self.zones, before, after)]


def _moved(a: int, b: int, wrap: int) -> int | None:
    """Microjoules a RAPL counter moved from ``a`` to ``b``, a wrap at ``wrap`` undone; None where
    it went backwards (or reads what no counter in its range can)."""
    if a < 0 or b < 0:
        return None
    if b >= a:
        return b - a
    return b + wrap - a if a <= wrap else None


def _judge(what: str, joules: float | None, elapsed: float, ceiling_w: float) -> str:
    """Why a counter that moved by ``joules`` (None: backwards) in ``elapsed`` seconds of calls
    gives no figure; "" where it is a plausible reading."""
    if joules is None or joules < 0:
        return f"energy not given: the {what} ran backwards"
    if joules != joules:  # NaN
        return f"energy not given: the {what} read no number"
    if joules == 0:
        return f"energy not given: the {what} did not move in {elapsed:.2f} s of calls (frozen)"
    if joules > ceiling_w * (elapsed + _UPDATE_SLACK_S):
        return (f"energy not given: the {what} jumped by {joules:.4g} J in {elapsed:.2f} s, "
                f"more than {ceiling_w:.0f} W could draw")
    return ""


def _repeat(call: Callable[[], Any], span_s: float) -> int:
    """Calls made until ``span_s`` has passed (at least one)."""
    calls = 0
    end = time.perf_counter() + span_s
    while True:
        call()
        calls += 1
        if time.perf_counter() >= end:
            return calls


def energy_metered(backend: Any) -> bool:
    """Whether ``energy`` would read a counter for ``backend`` (one that counts the whole package
    or board, so its burst of calls must run alone)."""
    if backend.device != "cpu":
        return not isinstance(backend.energy_counter_mj(), str)
    return bool(Rapl().zones)


def energy(backend: Any, call: Callable[[], Any], span_s: float = ENERGY_SPAN_S,
           rapl: Rapl | None = None) -> Reading:
    """Joules per call from the counters read around a burst of calls: NVML's on an NVIDIA GPU
    (the board's energy), RAPL's on the CPU (the packages'); None and why where neither reads, or
    where what it read is no plausible reading (frozen, backwards, a jump)."""
    try:
        if backend.device != "cpu":
            counter = backend.energy_counter_mj()
            if isinstance(counter, str):
                return Reading(None, counter)
            began = time.perf_counter()
            start = counter()
            calls = _repeat(call, span_s)
            moved: list[tuple[str, float | None]] = [("GPU's NVML energy counter", (counter() - start) / 1e3)]
            note, ceiling = "GPU board energy from NVML's total-energy counter, its idle draw included", \
                BOARD_MAX_W
        else:
            rapl = rapl if rapl is not None else Rapl()
            if not rapl.zones:
                return Reading(None, rapl.why)
            try:
                began = time.perf_counter()
                before = rapl.read()
                calls = _repeat(call, span_s)
                moved = rapl.moved(before, rapl.read())
            except (OSError, ValueError) as exc:
                return Reading(None, f"RAPL not readable: {exc}")
            note, ceiling = "CPU package energy from RAPL, the machine's idle draw included", PACKAGE_MAX_W
        elapsed = time.perf_counter() - began
        why = next(filter(None, (_judge(what, joules, elapsed, ceiling) for what, joules in moved)), "")
        return Reading(None, why) if why else Reading(sum(j or 0.0 for _, j in moved) / calls, note)
    except Exception as exc:  # the extra calls or the counters: a side reading, never the samples
        return Reading(None, f"energy not measured: {type(exc).__name__}: {exc}")


# -- out of memory: each library's own message (checked against its source), in words

_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1, **{f"{p}ib": 1024 ** (i + 1) for i, p in enumerate("kmgtpe")},
          **{f"{p}b": 1000 ** (i + 1) for i, p in enumerate("kmgtpe")}}
# NumPy prints sizes with "%.3g" and a trailing point: "Unable to allocate 149. GiB".
_SIZE = r"(\d[\d,]*(?:\.\d*)?)\s*(bytes|byte|[KMGTPE]i?B|B)?\b"
_NEEDED = re.compile(r"(?:tried to allocate|trying to allocate|unable to allocate|allocating)\s+" + _SIZE,
                     re.IGNORECASE)
_FREE = (
    re.compile(r"of which\s+" + _SIZE + r"\s+is free", re.IGNORECASE),  # torch >= 2.1
    re.compile(r";\s*" + _SIZE + r"\s+free;", re.IGNORECASE),  # torch < 2.1
)
_TOTAL = (
    re.compile(r"total capacity of\s+" + _SIZE, re.IGNORECASE),
    re.compile(_SIZE + r"\s+total capacity", re.IGNORECASE),
)


_ENFORCE = re.compile(r"^\[enforce fail at [^\]]*\]\s*(?:[^.]*==[^.]*\.\s*)?")


def _bytes(number: str, unit: str | None) -> int:
    return int(float(number.replace(",", "")) * _UNITS[(unit or "").lower()])


def needed_bytes(message: str) -> int | None:
    """The allocation that failed, as the library's message states it; None if it does not."""
    m = _NEEDED.search(message)
    return _bytes(*m.groups()) if m else None


def available_in_message(message: str) -> tuple[int | None, int | None]:
    """(free, total) bytes where the message itself says them (PyTorch on CUDA does)."""
    free = next((_bytes(*m.groups()) for p in _FREE if (m := p.search(message))), None)
    total = next((_bytes(*m.groups()) for p in _TOTAL if (m := p.search(message))), None)
    return free, total


def format_bytes(n: int) -> str:
    """``8000000000`` -> ``"7.45 GiB"``."""
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{n} bytes" if unit == "bytes" else f"{value:.3g} {unit}"
        value /= 1024
    return f"{n} bytes"


def describe(message: str, stage: str, available: tuple[int, int] | None, where: str) -> str:
    """``out of memory during the first call (needed 7.11 PiB, available 9.8 GiB of 15.6 GiB host
    memory): <the library's own words>``; ``available``: (free, total) bytes where the message does
    not say them; ``where`` names the memory ("host memory", "on the GPU")."""
    parts = []
    needed = needed_bytes(message)
    if needed is not None:
        parts.append(f"needed {format_bytes(needed)}")
    free, total = available_in_message(message)
    if free is None and available is not None:
        free, total = available
    if free is not None:
        of = f" of {format_bytes(total)}" if total else ""
        parts.append(f"available {format_bytes(free)}{of} {where}".rstrip())
    head = f"out of memory during {stage}"
    if parts:
        head += f" ({', '.join(parts)})"
    # PyTorch's C++ assertion prefix says nothing to a user.
    detail = _ENFORCE.sub("", " ".join(message.split()))
    if len(detail) > 240:
        detail = detail[:239] + "…"
    return f"{head}: {detail}" if detail else head
