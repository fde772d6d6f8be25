"""The CUDA driver asked directly (ctypes): device facts that not every array library exposes.

JAX has no API for a GPU's L2 size or PCI bus id. Every NVIDIA driver installs ``libcuda.so.1``,
whose ``cuDeviceGetAttribute`` and ``cuDeviceGetPCIBusId`` answer for any library. Ordinals are the
CUDA runtime's, counted after ``CUDA_VISIBLE_DEVICES``, as torch, JAX and CuPy count them.
Importing this module loads nothing; every function returns None where there is no driver.
"""

from __future__ import annotations

import ctypes
from typing import Any

#: ``CUdevice_attribute`` values from cuda.h (the runtime's ``cudaDevAttr*`` share the numbering).
L2_CACHE_SIZE = 38
COMPUTE_CAPABILITY_MAJOR = 75

_LIBRARIES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")


class DriverError(Exception):
    """The driver is missing or refused a call; the message says which and why."""


class Driver:
    """``libcuda``, initialised. ``lib`` stands in for the shared library in tests."""

    def __init__(self, lib: Any = None) -> None:
        self.lib = lib if lib is not None else _load()
        self._check(self.lib.cuInit(0), "cuInit")

    def _check(self, status: int, call: str) -> None:
        if status != 0:
            raise DriverError(f"{call} returned CUDA error {status}")

    def _device(self, ordinal: int) -> ctypes.c_int:
        device = ctypes.c_int()
        self._check(self.lib.cuDeviceGet(ctypes.byref(device), int(ordinal)), "cuDeviceGet")
        return device

    def attribute(self, ordinal: int, attribute: int) -> int:
        """One ``cuDeviceGetAttribute`` value of a device."""
        value = ctypes.c_int()
        self._check(self.lib.cuDeviceGetAttribute(ctypes.byref(value), attribute,
                                                  self._device(ordinal)), "cuDeviceGetAttribute")
        return int(value.value)

    def total_memory(self, ordinal: int) -> int:
        """The device's memory in bytes (``cuDeviceTotalMem_v2``)."""
        size = ctypes.c_size_t()
        self._check(self.lib.cuDeviceTotalMem_v2(ctypes.byref(size), self._device(ordinal)),
                    "cuDeviceTotalMem_v2")
        return int(size.value)

    def pci_bus_id(self, ordinal: int) -> str:
        """``0000:3B:00.0``: how NVML finds the same device whatever order it counts in."""
        buf = ctypes.create_string_buffer(32)
        self._check(self.lib.cuDeviceGetPCIBusId(buf, len(buf), self._device(ordinal)),
                    "cuDeviceGetPCIBusId")
        return buf.value.decode("ascii")


def _load() -> Any:
    for name in _LIBRARIES:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise DriverError("no NVIDIA driver (libcuda.so.1 not found)")


def l2_cache_bytes(ordinal: int | None, driver: Driver | None = None) -> int | None:
    """The device's L2 cache size, or None where the driver cannot say (or no ordinal is known)."""
    if ordinal is None:
        return None
    try:
        size = (driver or Driver()).attribute(ordinal, L2_CACHE_SIZE)
    except DriverError:
        return None
    return size or None


def pci_bus_id(ordinal: int, driver: Driver | None = None) -> str | None:
    """The device's PCI bus id, or None where the driver cannot say."""
    try:
        return (driver or Driver()).pci_bus_id(ordinal)
    except DriverError:
        return None


def total_memory(ordinal: int, driver: Driver | None = None) -> int | None:
    """The device's memory in bytes, or None where the driver cannot say."""
    try:
        return (driver or Driver()).total_memory(ordinal)
    except DriverError:
        return None
