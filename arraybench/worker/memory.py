"""Out-of-memory errors in words: what the library tried to allocate, and what there was.

Every library says it differently; the messages below are the libraries' own (checked against
their sources and, where there is no GPU, against the exceptions they raise on the CPU):

- NumPy: ``Unable to allocate 7.11 PiB for an array with shape (10**15,) and data type float64``
- PyTorch CPU: ``DefaultCPUAllocator: can't allocate memory: you tried to allocate 8000 bytes``
- PyTorch CUDA: ``CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of
  79.15 GiB of which 1.23 GiB is free. ...`` (before 2.1: ``(GPU 0; 7.93 GiB total capacity; ...;
  47.06 MiB free; ...)``)
- CuPy: ``Out of memory allocating 8,000,000,000 bytes (allocated so far: 1,000 bytes).``
- JAX: ``RESOURCE_EXHAUSTED: Out of memory allocating 8000 bytes.`` (CPU) or ``... while trying to
  allocate 8000 bytes.`` (GPU; some versions print ``16.00GiB``)
"""

from __future__ import annotations

import re

_UNITS = {
    "": 1, "b": 1, "byte": 1, "bytes": 1,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50, "eib": 2**60,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15,
}
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
    return f"{n} bytes"  # unreachable


def describe(message: str, stage: str, available: tuple[int, int] | None, where: str) -> str:
    """``out of memory during the first call (needed 7.11 PiB, available 9.8 GiB of 15.6 GiB host
    memory): <the library's own words>``.

    ``available`` is (free, total) bytes as the backend sees them now, used where the message does
    not say; ``where`` names the memory ("host memory", "on the GPU").
    """
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
    detail = " ".join(message.split())
    detail = _ENFORCE.sub("", detail)  # PyTorch's C++ assertion prefix says nothing to a user
    if len(detail) > 240:
        detail = detail[:239] + "…"
    return f"{head}: {detail}" if detail else head
