"""The names of the files a run writes for people: one per plot, safe on every file system.

A case plot is ``WORKLOAD_SIZE.svg``; the plots of a whole run are ``summary_SIZE.svg``,
``sweep_WORKLOAD.svg`` and ``roofline.svg``. A workload may be called ``summary`` or ``sweep``
(they are users' names), so a case plot whose name would start like a run-wide plot's gets
``case_`` in front, as does one that already starts with ``case_``: no two kinds of plot can then
share a file name, and no plot overwrites another.
"""

from __future__ import annotations

#: Longest file name stem we write: file systems refuse names over 255 bytes.
MAX_STEM = 120
#: Beginnings that only the run-wide plots' names have (and the escape itself).
_RESERVED = ("summary_", "sweep_", "case_")


def plot_file_name(workload: str, size_label: str) -> str:
    """The SVG file of one workload at one size: ``matmul_large.svg``."""
    stem = f"{safe(workload)}_{safe(size_label)}"
    if stem.startswith(_RESERVED):
        stem = f"case_{stem}"
    return f"{stem}.svg"


def summary_file_name(size_label: str) -> str:
    """The summary SVG of one size label: ``summary_large.svg``."""
    return f"summary_{safe(size_label)}.svg"


def sweep_file_name(workload: str) -> str:
    """The sweep SVG of one workload: ``sweep_matmul.svg``."""
    return f"sweep_{safe(workload)}.svg"


def safe(text: str) -> str:
    """``text`` as a file-name part: letters, digits, ``-_.`` kept, anything else ``_``."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:MAX_STEM]


def history_file_name(workload: str) -> str:
    """The history SVG of one workload: ``history_matmul.svg``."""
    return f"history_{safe(workload)}.svg"
