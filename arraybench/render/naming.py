"""The names of the files a run writes for people: one per plot, safe on every file system."""

from __future__ import annotations

#: Longest file name stem we write: file systems refuse names over 255 bytes.
MAX_STEM = 120


def plot_file_name(workload: str, size_label: str) -> str:
    """The SVG file of one workload at one size: ``matmul_large.svg``."""
    return f"{safe(workload)}_{safe(size_label)}.svg"


def summary_file_name(size_label: str) -> str:
    """The summary SVG of one size label: ``summary_large.svg``."""
    return f"summary_{safe(size_label)}.svg"


def safe(text: str) -> str:
    """``text`` as a file-name part: letters, digits, ``-_.`` kept, anything else ``_``."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:MAX_STEM]


def history_file_name(workload: str) -> str:
    """The history SVG of one workload: ``history_matmul.svg``."""
    return f"history_{safe(workload)}.svg"
