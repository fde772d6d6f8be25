"""The counters and kernels behind a number, as short text for the HTML report and the tables.

``usage_lines`` is a record's "used" column (cores, kernel share, page faults and context switches
per call, hardware counts where counted, and whether the machine was busy); ``kernel_rows`` are the
environment rows naming the kernels each library runs and the variables that change them.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..model.record import Record
from ..model.usage import Usage


def _count(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:.2g}"


def usage_lines(r: Record) -> list[str]:
    """The record's usage in a few short lines; empty when nothing was counted."""
    u = r.usage
    if u is None:
        return []
    lines = []
    if u.cores is not None:
        kernel = f", {u.kernel_share:.0%} in kernel" if u.kernel_share is not None else ""
        lines.append(f"{u.cores:.1f} cores{kernel}")
    if u.minor_faults_per_call is not None:
        major = f" ({_count(u.major_faults_per_call)} major)" if u.major_faults_per_call else ""
        lines.append(f"{_count(u.minor_faults_per_call)} faults/call{major}")
    if u.involuntary_switches_per_call is not None:
        lines.append(f"{_count(u.involuntary_switches_per_call)} preempted/call")
    if u.ipc is not None:
        lines.append(f"IPC {u.ipc:.2f}")
    if r.busy:
        lines.append(f"busy: others {u.others_cores:.1f} cores" if u.others_cores is not None else "busy")
    return lines


def usage_title(u: Usage | None) -> str:
    """Every rate, for a tooltip."""
    if u is None:
        return ""
    from ..model.usage import RATES

    parts = [f"{name} {getattr(u, name):.4g}" for name in RATES if getattr(u, name) is not None]
    if u.hardware_absent:
        parts.append(f"hardware counters: {u.hardware_absent}")
    return "; ".join(parts)


def kernel_rows(env: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(what, text) rows: the kernels each library's worker reported, the CPU's own ISA, and the
    environment variables that change kernels, threads or precision."""
    rows = []
    fp = env.get("fingerprint") or {}
    if isinstance(fp, Mapping) and fp.get("cpu_isa"):
        rows.append(("CPU features", " ".join(str(f) for f in fp["cpu_isa"])))
    workers = env.get("backends") or {}
    if isinstance(workers, Mapping):
        for config, info in workers.items():
            text = library_kernels(info) if isinstance(info, Mapping) else ""
            if text:
                rows.append((f"kernels ({config})", text))
    rows.append(("kernel variables", knobs_text(env.get("kernel_env"))))
    return rows


def library_kernels(info: Mapping[str, Any]) -> str:
    """The kernels one worker's library reported running ("" where it reported none)."""
    bits = []
    if info.get("library") in ("numpy", None) and info.get("blas_architecture"):
        bits.append(f"OpenBLAS {info['blas_architecture']} kernels")
    for key, words in (("cpu_capability", "ATen"), ("mkl_isa", "MKL"), ("onednn_isa", "oneDNN"),
                       ("xla_cpu_target", "XLA target"), ("xla_cpu_max_isa", "XLA ISA cap")):
        if info.get(key):
            bits.append(f"{words} {info[key]}")
    return "; ".join(bits)


def knobs_text(knobs: Any) -> str:
    """The variables that change kernels, threads or precision, as ``NAME=value`` text."""
    if isinstance(knobs, Mapping) and knobs:
        return ", ".join(f"{k}={v}" for k, v in knobs.items())
    return "none set"
