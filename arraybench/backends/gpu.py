"""What the GPU backends share: the CUDA driver asked directly, NVML's view of the GPU's health, and
timing on the device (CUDA-style events, with a spin kernel that holds the stream).

Importing this module loads nothing; the driver's and NVML's functions answer None, or a reason,
where there is no driver or no ``nvidia-ml-py``.
"""

from __future__ import annotations

import ctypes
import time
from contextlib import suppress
from typing import Any, Callable

# -- the CUDA driver ------------------------------------------------------------------------------
# JAX has no API for a GPU's L2 size or PCI bus id; every NVIDIA driver's libcuda answers for any
# library. Ordinals are the CUDA runtime's, counted after CUDA_VISIBLE_DEVICES.

#: ``CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`` from cuda.h.
L2_CACHE_SIZE = 38

_LIBRARIES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")


class DriverError(Exception):
    """The driver is missing or refused a call; the message says which and why."""


class Driver:
    """``libcuda``, initialised. ``lib`` stands in for the shared library in tests."""

    def __init__(self, lib: Any = None) -> None:
        self.lib = lib if lib is not None else _load()
        self._call("cuInit", 0)

    def _call(self, name: str, *args: Any) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise DriverError(f"{name} returned CUDA error {status}")

    def _device(self, ordinal: int) -> ctypes.c_int:
        device = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(device), int(ordinal))
        return device

    def attribute(self, ordinal: int, attribute: int) -> int:
        """One ``cuDeviceGetAttribute`` value of a device."""
        value = ctypes.c_int()
        self._call("cuDeviceGetAttribute", ctypes.byref(value), attribute, self._device(ordinal))
        return int(value.value)

    def total_memory(self, ordinal: int) -> int:
        """The device's memory in bytes."""
        size = ctypes.c_size_t()
        self._call("cuDeviceTotalMem_v2", ctypes.byref(size), self._device(ordinal))
        return int(size.value)

    def pci_bus_id(self, ordinal: int) -> str:
        """``0000:3B:00.0``: how NVML finds the same device whatever order it counts in."""
        buf = ctypes.create_string_buffer(32)
        self._call("cuDeviceGetPCIBusId", buf, len(buf), self._device(ordinal))
        return buf.value.decode("ascii")


def _load() -> Any:
    for name in _LIBRARIES:
        with suppress(OSError):
            return ctypes.CDLL(name)
    raise DriverError("no NVIDIA driver (libcuda.so.1 not found)")


def _ask(question: str, ordinal: int | None, driver: Driver | None, *args: Any) -> Any:
    """``Driver.<question>(ordinal, *args)``, or None where the driver (or the ordinal) is unknown."""
    if ordinal is None:
        return None
    try:
        return getattr(driver or Driver(), question)(ordinal, *args)
    except DriverError:
        return None


def l2_cache_bytes(ordinal: int | None, driver: Driver | None = None) -> int | None:
    """The device's L2 cache size, or None where the driver cannot say (or no ordinal is known)."""
    return _ask("attribute", ordinal, driver, L2_CACHE_SIZE) or None


def pci_bus_id(ordinal: int, driver: Driver | None = None) -> str | None:
    """The device's PCI bus id, or None where the driver cannot say."""
    return _ask("pci_bus_id", ordinal, driver)


def total_memory(ordinal: int, driver: Driver | None = None) -> int | None:
    """The device's memory in bytes, or None where the driver cannot say."""
    return _ask("total_memory", ordinal, driver)


# -- GPU health from NVML -------------------------------------------------------------------------
# nvbench's practice: a GPU that lowers its clocks for power or heat mid-measurement runs slower
# for reasons that have nothing to do with the code measured, so a worker snapshots its GPU around
# each cell and asks after every sample whether it is throttling.

#: NVML clock event reasons that slow a busy GPU down, each with how the bindings name its bit
#: (``nvmlClocksEventReason<this>``, or in older bindings ``nvmlClocksThrottleReason<this>``). Left
#: out: GpuIdle (0x1), ApplicationsClocksSetting (0x2), SyncBoost (0x10) and DisplayClockSetting
#: (0x100) say why clocks are where they are, not that work is slowed. 0x200 and 0x400 are in
#: nvidia-ml-py 13.615's ``nvmlClocksThrottleReasonAll``, though its ``nvmlClocksEventReason*`` set
#: stops at 0x100.
THROTTLE_REASONS: dict[int, tuple[str, str]] = {
    0x4: ("SW power cap", "SwPowerCap"),
    0x8: ("HW slowdown", "HwSlowdown"),
    0x20: ("SW thermal slowdown", "SwThermalSlowdown"),
    0x40: ("HW thermal slowdown", "HwThermalSlowdown"),
    0x80: ("HW power brake", "HwPowerBrakeSlowdown"),
    0x200: ("board limit", "BoardLimit"),
    0x400: ("reliability", "Reliability"),
}

def throttle_reasons(nvml: Any = None) -> dict[int, str]:
    """Bit -> reason: the bindings' own constants where ``nvml`` (pynvml) defines them, else ours."""
    def bit(ours: int, name: str) -> int:
        found = (getattr(nvml, f"nvmlClocks{kind}Reason{name}", None) for kind in ("Event", "Throttle"))
        return next((b for b in found if isinstance(b, int)), ours)

    return {bit(ours, name): words for ours, (words, name) in THROTTLE_REASONS.items()}


class GpuMonitor:
    """One GPU seen through NVML. ``nvml`` is the ``pynvml`` module (a fake of it in tests)."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        self.nvml = nvml
        self.handle = handle
        self.reasons = throttle_reasons(nvml)

    def _read(self, fn: str, *args: Any) -> Any:
        """One NVML query; None where this GPU does not support it."""
        try:
            return getattr(self.nvml, fn)(self.handle, *args)
        except Exception:
            return None

    def throttling(self) -> list[str]:
        """The throttle reasons in effect now: one NVML call, cheap enough per sample."""
        # Renamed in NVML 12.3 (clocks "event" reasons); older bindings have only the old name.
        fn = next((f for f in ("nvmlDeviceGetCurrentClocksEventReasons",
                               "nvmlDeviceGetCurrentClocksThrottleReasons") if hasattr(self.nvml, f)), None)
        mask = self._read(fn) if fn else None
        return [name for bit, name in self.reasons.items() if mask & bit] if mask else []

    def energy_counter_mj(self) -> "Callable[[], float] | str":
        """A reader of the board's energy since the driver loaded, in millijoules (Volta and
        later), or why it cannot be read."""
        fn = getattr(self.nvml, "nvmlDeviceGetTotalEnergyConsumption", None)
        if fn is None:
            return "GPU energy not readable: these NVML bindings have no nvmlDeviceGetTotalEnergyConsumption"
        try:
            fn(self.handle)
        except Exception as exc:  # NVML_ERROR_NOT_SUPPORTED before Volta, or no permission
            return f"GPU energy not readable: NVML: {first_line(exc)}"
        return lambda: float(fn(self.handle))

    def snapshot(self) -> dict[str, Any]:
        """Clocks (MHz), temperature (°C), power (W) and throttle reasons, now."""
        n = self.nvml
        power_mw = self._read("nvmlDeviceGetPowerUsage")
        limit_mw = self._read("nvmlDeviceGetEnforcedPowerLimit")
        return {
            "sm_clock_mhz": self._read("nvmlDeviceGetClockInfo", n.NVML_CLOCK_SM),
            "max_sm_clock_mhz": self._read("nvmlDeviceGetMaxClockInfo", n.NVML_CLOCK_SM),
            "mem_clock_mhz": self._read("nvmlDeviceGetClockInfo", n.NVML_CLOCK_MEM),
            "temperature_c": self._read("nvmlDeviceGetTemperature", n.NVML_TEMPERATURE_GPU),
            "power_w": None if power_mw is None else round(power_mw / 1000, 1),
            "power_limit_w": None if limit_mw is None else round(limit_mw / 1000, 1),
            "throttle": self.throttling(),
        }


def open_monitor(pci_bus_id: str | None, nvml: Any = None) -> tuple[GpuMonitor | None, str]:
    """(a monitor, "") for the GPU at ``pci_bus_id`` (the one key NVML and CUDA agree on), or
    (None, why there is none)."""
    if not pci_bus_id:
        return None, "the CUDA driver gave no PCI bus id to find the GPU in NVML by"
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError:
            return None, "nvidia-ml-py is not installed (pip install 'arraybench[nvml]')"
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return None, f"NVML cannot start ({first_line(exc)})"
    try:
        handle = nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode("ascii"))
    except Exception as exc:
        return None, f"NVML cannot find the GPU at {pci_bus_id} ({first_line(exc)})"
    return GpuMonitor(nvml, handle), ""


def first_line(exc: BaseException) -> str:
    """An exception's first line, or its type's name where it says nothing."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- timing on the device -------------------------------------------------------------------------

#: The shortest hold before a timed call, and the longest (see ``CudaEvents.hold``).
MIN_HOLD_S = 20e-6
MAX_HOLD_S = 10e-3


class CudaEvents:
    """Device-side timing, a pair of CUDA (or MPS) events around the timed calls: ``begin`` and
    ``end`` mark the stream, ``elapsed`` waits. ``hold``, before ``begin`` in the device pass, runs
    ``spin(seconds)``, a kernel that keeps the stream busy while the host issues the call
    (nvbench's way): else a fast call's events would span the host issuing its kernels."""

    def __init__(self, make_event: Callable[[], Any], elapsed_ms: Callable[[Any, Any], float],
                 spin: Callable[[float], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._start = make_event()
        self._end = make_event()
        self._elapsed_ms = elapsed_ms
        self._spin = spin
        self._clock = clock
        #: The next hold: twice the host's issuing time of the last held call, or half the last
        #: hold if that is longer (a slow issue raises it at once, fast ones lower it over a few
        #: calls), within [MIN_HOLD_S, MAX_HOLD_S].
        self.hold_s = 1e-3
        self._issued_at: float | None = None
        #: Held calls whose issuing outlasted their hold (their events include host time).
        self.uncovered = 0

    def hold(self) -> None:
        """Keep the stream busy while the next call is issued (before ``begin``; the device pass only)."""
        if self._spin is not None:
            self._spin(self.hold_s)
            self._issued_at = self._clock()

    def begin(self) -> None:
        self._start.record()

    def end(self) -> None:
        self._end.record()
        if self._issued_at is not None:
            issued = self._clock() - self._issued_at
            self._issued_at = None
            if issued > self.hold_s:
                self.uncovered += 1
            self.hold_s = min(MAX_HOLD_S, max(MIN_HOLD_S, 2 * issued, self.hold_s / 2))

    def elapsed(self) -> float:
        self._end.synchronize()
        return self._elapsed_ms(self._start, self._end) / 1e3


class SpinKernel:
    """Seconds of device time as GPU clock cycles, for a kernel that spins that long. The rate is
    measured once, with events: clocks boost and idle, and CUDA 13 dropped ``clockRate``."""

    #: Cycles in the calibrating spin (about a millisecond at 1-2 GHz).
    CALIBRATION_CYCLES = 2_000_000

    def __init__(self, spin_cycles: Callable[[int], None], make_event: Callable[[], Any],
                 elapsed_ms: Callable[[Any, Any], float]) -> None:
        self._spin_cycles = spin_cycles
        self._make_event = make_event
        self._elapsed_ms = elapsed_ms
        self._hz: float | None = None

    def cycles_per_second(self) -> float:
        if self._hz is None:
            start, end = self._make_event(), self._make_event()
            self._spin_cycles(self.CALIBRATION_CYCLES // 10)  # the first launch loads the kernel
            start.record()
            self._spin_cycles(self.CALIBRATION_CYCLES)
            end.record()
            end.synchronize()
            seconds = self._elapsed_ms(start, end) / 1e3
            self._hz = self.CALIBRATION_CYCLES / seconds if seconds > 0 else 2e9
        return self._hz

    def __call__(self, seconds: float) -> None:
        self._spin_cycles(max(1, int(seconds * self.cycles_per_second())))
