"""GPU health from NVML (``nvidia-ml-py``): clocks, temperature, power and throttle reasons.

nvbench's practice: a GPU that lowers its clocks for power or heat mid-measurement runs slower for
reasons that have nothing to do with the code measured. A worker snapshots its GPU before and after
each cell and asks, after every sample, whether the GPU is throttling; the record keeps the
snapshots and says how many samples were taken while it was. Without ``nvidia-ml-py``, a driver or
a GPU there is no monitor, and the reason is kept instead.
"""

from __future__ import annotations

from typing import Any, Callable

#: NVML clock event reasons that slow a busy GPU down (nvmlClocksEventReason*/ThrottleReason* bits).
#: Left out on purpose: GpuIdle (0x1), ApplicationsClocksSetting (0x2), SyncBoost (0x10) and
#: DisplayClockSetting (0x100) say why clocks are where they are, not that work is being slowed.
#: 0x200 and 0x400 are NVML's: nvidia-ml-py 13.615 (pynvml.py) defines
#: ``nvmlClocksThrottleReasonBoardLimit = 0x200`` and ``nvmlClocksThrottleReasonReliability = 0x400``
#: and counts them in ``nvmlClocksThrottleReasonAll``; its ``nvmlClocksEventReason*`` set stops
#: at 0x100. Where the bindings define a bit, ``throttle_reasons`` takes it from them.
THROTTLE_REASONS: dict[int, str] = {
    0x4: "SW power cap",
    0x8: "HW slowdown",
    0x20: "SW thermal slowdown",
    0x40: "HW thermal slowdown",
    0x80: "HW power brake",
    0x200: "board limit",
    0x400: "reliability",
}

INSTALL_HINT = "pip install 'arraybench[nvml]'"


#: The bindings' constant names for THROTTLE_REASONS' bits (event names first, then the old ones).
_CONSTANTS: dict[str, tuple[str, ...]] = {
    "SW power cap": ("nvmlClocksEventReasonSwPowerCap", "nvmlClocksThrottleReasonSwPowerCap"),
    "HW slowdown": ("nvmlClocksEventReasonHwSlowdown", "nvmlClocksThrottleReasonHwSlowdown"),
    "SW thermal slowdown": ("nvmlClocksEventReasonSwThermalSlowdown", "nvmlClocksThrottleReasonSwThermalSlowdown"),
    "HW thermal slowdown": ("nvmlClocksEventReasonHwThermalSlowdown", "nvmlClocksThrottleReasonHwThermalSlowdown"),
    "HW power brake": ("nvmlClocksEventReasonHwPowerBrakeSlowdown",
                       "nvmlClocksThrottleReasonHwPowerBrakeSlowdown"),
    "board limit": ("nvmlClocksThrottleReasonBoardLimit",),
    "reliability": ("nvmlClocksThrottleReasonReliability",),
}


def throttle_reasons(nvml: Any = None) -> dict[int, str]:
    """Bit -> reason: the bindings' own constants where ``nvml`` (pynvml) defines them, else ours."""
    if nvml is None:
        return THROTTLE_REASONS
    table: dict[int, str] = {}
    for bit, name in THROTTLE_REASONS.items():
        given = next((getattr(nvml, c) for c in _CONSTANTS[name] if isinstance(getattr(nvml, c, None), int)), bit)
        table[int(given)] = name
    return table


def throttle_names(mask: int, reasons: dict[int, str] | None = None) -> list[str]:
    """The throttle reasons set in an NVML reasons bit mask."""
    return [name for bit, name in (reasons or THROTTLE_REASONS).items() if mask & bit]


class GpuMonitor:
    """One GPU seen through NVML. ``nvml`` is the ``pynvml`` module (a fake of it in tests)."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        self.nvml = nvml
        self.handle = handle
        self.reasons = throttle_reasons(nvml)

    def _read(self, fn: str, *args: Any) -> Any:
        """One NVML query; None where this GPU does not support it (NVML_ERROR_NOT_SUPPORTED...)."""
        try:
            return getattr(self.nvml, fn)(self.handle, *args)
        except Exception:
            return None

    def _reasons_mask(self) -> int | None:
        # Renamed in NVML 12.3 (clocks "event" reasons); older bindings have only the old name.
        for fn in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            if hasattr(self.nvml, fn):
                return self._read(fn)
        return None

    def throttling(self) -> list[str]:
        """The throttle reasons in effect now (empty when none): one NVML call, cheap enough per sample."""
        mask = self._reasons_mask()
        return throttle_names(mask, self.reasons) if mask else []

    def energy_counter_mj(self) -> "Callable[[], float] | str":
        """A reader of the board's energy since the driver loaded, in millijoules
        (``nvmlDeviceGetTotalEnergyConsumption``, Volta and later), or why it cannot be read."""
        fn = getattr(self.nvml, "nvmlDeviceGetTotalEnergyConsumption", None)
        if fn is None:
            return "GPU energy not readable: these NVML bindings have no nvmlDeviceGetTotalEnergyConsumption"
        try:
            fn(self.handle)
        except Exception as exc:  # NVML_ERROR_NOT_SUPPORTED before Volta, or no permission
            return f"GPU energy not readable: NVML: {_first_line(exc)}"
        return lambda: float(fn(self.handle))

    def snapshot(self) -> dict[str, Any]:
        """Clocks (MHz), temperature (°C), power (W) and throttle reasons, now."""
        n = self.nvml
        power_mw = self._read("nvmlDeviceGetPowerUsage")
        limit_mw = self._read("nvmlDeviceGetEnforcedPowerLimit")
        mask = self._reasons_mask()
        return {
            "sm_clock_mhz": self._read("nvmlDeviceGetClockInfo", n.NVML_CLOCK_SM),
            "max_sm_clock_mhz": self._read("nvmlDeviceGetMaxClockInfo", n.NVML_CLOCK_SM),
            "mem_clock_mhz": self._read("nvmlDeviceGetClockInfo", n.NVML_CLOCK_MEM),
            "temperature_c": self._read("nvmlDeviceGetTemperature", n.NVML_TEMPERATURE_GPU),
            "power_w": None if power_mw is None else round(power_mw / 1000, 1),
            "power_limit_w": None if limit_mw is None else round(limit_mw / 1000, 1),
            "throttle": throttle_names(mask, self.reasons) if mask else [],
        }


def open_monitor(pci_bus_id: str | None, nvml: Any = None) -> tuple[GpuMonitor | None, str]:
    """(a monitor, "") for the GPU at ``pci_bus_id``, or (None, why there is none).

    The PCI bus id is the one key both sides agree on: NVML numbers GPUs in PCI order, CUDA
    fastest first unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, and ``CUDA_VISIBLE_DEVICES`` renumbers
    only CUDA's; matching by index could watch the wrong GPU.
    """
    if not pci_bus_id:
        return None, "the CUDA driver gave no PCI bus id to find the GPU in NVML by"
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError:
            return None, f"nvidia-ml-py is not installed ({INSTALL_HINT})"
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return None, f"NVML cannot start ({_first_line(exc)})"
    try:
        handle = nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode("ascii"))
    except Exception as exc:
        return None, f"NVML cannot find the GPU at {pci_bus_id} ({_first_line(exc)})"
    return GpuMonitor(nvml, handle), ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
