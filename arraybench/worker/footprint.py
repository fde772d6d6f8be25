"""What one call costs besides time: its peak memory and, where the hardware tells, its energy.

Both are measured after sampling, around calls of their own, never inside the timed loop: reading
``/proc`` or resetting a library's counters between timed calls would be timed with them.

Peak memory on the host is the process's resident high-water mark: writing "5" to
``/proc/self/clear_refs`` resets ``VmHWM`` to the present ``VmRSS`` (Linux >= 4.0), so after one
call ``VmHWM - VmRSS(before)`` is what the call added at its highest. Freed memory the C allocator
still holds would serve the call without raising the resident size, so it is handed back first
(``malloc_trim``). On a GPU the library's own accounting answers (``Backend.device_peak``).

Energy comes from counters the hardware keeps: RAPL on the CPU (``/sys/class/powercap``), NVML's
total-energy counter on NVIDIA GPUs. Where none is readable (a VM, no permission), the replicate
keeps why, never a figure.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_POWERCAP = Path("/sys/class/powercap")
#: Calls go on until the energy counters have moved for this long: RAPL updates about every
#: millisecond, NVML's counter less often, and one call's joules are far below either's resolution.
ENERGY_SPAN_S = 0.2


@dataclass(frozen=True)
class Peak:
    """Bytes a call added at its highest, or None and why not."""

    bytes: int | None
    note: str = ""


@dataclass(frozen=True)
class Energy:
    """Joules per call, or None and why not."""

    joules: float | None
    note: str = ""


def _status_kib(*names: str) -> dict[str, int]:
    """``VmHWM``, ``VmRSS``... from /proc/self/status, in bytes."""
    found: dict[str, int] = {}
    for line in _STATUS.read_text().splitlines():
        key, _, value = line.partition(":")
        if key in names:
            found[key] = int(value.split()[0]) * 1024
    return found


@functools.cache
def _libc() -> ctypes.CDLL:
    """The C library, as this process already has it loaded (no search of the system's)."""
    return ctypes.CDLL(None)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
        "keepcost")]


def _allocated() -> int | None:
    """Bytes the C allocator holds allocated, over every arena and mmap (glibc's ``mallinfo2``);
    None elsewhere."""
    try:
        mallinfo2 = _libc().mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return int(info.uordblks + info.hblkhd)


def _trim() -> None:
    """Give the C allocator's free memory back to the kernel, so that a call's own allocations
    raise the resident size (glibc only; elsewhere nothing to do)."""
    try:
        _libc().malloc_trim(0)
    except (OSError, AttributeError):
        pass


def host_peak(call: Callable[[], Any]) -> Peak:
    """Resident bytes one ``call`` added at its highest (``VmHWM`` after minus ``VmRSS`` before)."""
    try:
        _status_kib("VmRSS")
    except (OSError, ValueError) as exc:
        return Peak(None, f"host peak memory not measured: /proc/self/status not readable ({exc})")
    gc.collect()
    _trim()
    try:
        # Resets the high-water mark to the present resident size.
        _CLEAR_REFS.write_text("5")
    except OSError as exc:
        return Peak(None, "host peak memory not measured: /proc/self/clear_refs not writable "
                          f"({exc.strerror or exc}), so the resident high-water mark cannot be reset")
    allocated = _allocated()
    before = _status_kib("VmRSS", "VmHWM")
    result = call()
    after = _status_kib("VmHWM")
    # What the call still holds (its result) counts even where it reused memory already resident:
    # freed memory a library's own threads keep in their malloc arenas (glibc trims only the main
    # arena's top) would otherwise hide a JAX matmul's 32 MB output.
    held = _allocated()
    del result
    if "VmHWM" not in after or "VmRSS" not in before:
        return Peak(None, "host peak memory not measured: this kernel reports no VmHWM")
    grown = max(after["VmHWM"] - before["VmRSS"], 0)
    kept = held - allocated if held is not None and allocated is not None else 0
    return Peak(max(grown, kept),
                "host resident high-water mark over one call (clear_refs 5, VmHWM - VmRSS before), "
                "at least what the call still holds allocated at its end (mallinfo2)")


def peak(backend: Any, call: Callable[[], Any]) -> Peak:
    """One call's peak memory: from the library's accounting on a device, else on the host."""
    if backend.device != "cpu":
        try:
            measured = backend.device_peak(call)
        except Exception as exc:  # the extra call or the library's counters; never the samples
            return Peak(None, f"device peak memory not measured: {type(exc).__name__}: {exc}")
        if measured is not None:
            return Peak(*measured)
    try:
        return host_peak(call)
    except Exception as exc:
        return Peak(None, f"host peak memory not measured: {type(exc).__name__}: {exc}")


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

    def joules(self, before: list[int], after: list[int]) -> float:
        """Joules between two reads, each counter's wrap-around undone."""
        total = 0
        for (_, wrap), a, b in zip(self.zones, before, after):
            total += b - a if b >= a else b + wrap - a
        return total / 1e6


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
           rapl: Rapl | None = None) -> Energy:
    """Joules per call from the counters read around a burst of calls: NVML's on an NVIDIA GPU
    (the board's energy), RAPL's on the CPU (the packages'); None and why where neither reads."""
    if backend.device != "cpu":
        counter = backend.energy_counter_mj()
        if isinstance(counter, str):
            return Energy(None, counter)
        start = counter()
        calls = _repeat(call, span_s)
        return Energy((counter() - start) / 1e3 / calls,
                      "GPU board energy from NVML's total-energy counter, its idle draw included")
    rapl = rapl if rapl is not None else Rapl()
    if not rapl.zones:
        return Energy(None, rapl.why)
    try:
        before = rapl.read()
        calls = _repeat(call, span_s)
        after = rapl.read()
    except (OSError, ValueError) as exc:
        return Energy(None, f"RAPL not readable: {exc}")
    return Energy(rapl.joules(before, after) / calls,
                  "CPU package energy from RAPL, the machine's idle draw included")
