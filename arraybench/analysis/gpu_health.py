"""A record's GPU health, summed over its processes' NVML snapshots (``backends/gpu_monitor``)."""

from __future__ import annotations

from typing import Any


def summarize(health: list[dict[str, Any]]) -> dict[str, Any]:
    """One record's GPU health from its processes' shard entries (``gpu_health``).

    The first process's ``before``, the last one's ``after``, throttled samples summed over
    processes, every reason seen; or the reason there was no monitor.
    """
    measured = [h for h in health if "before" in h]
    if not measured:
        reasons = [h["unavailable"] for h in health if h.get("unavailable")]
        return {"unavailable": reasons[0]} if reasons else {}
    seen: list[str] = []
    for h in measured:
        for name in [*h.get("reasons", []), *h["before"].get("throttle", []),
                     *(h.get("after") or {}).get("throttle", [])]:
            if name not in seen:
                seen.append(name)
    return {
        "before": measured[0]["before"],
        "after": measured[-1].get("after"),
        "throttled_samples": sum(int(h.get("throttled_samples", 0)) for h in measured),
        "samples": sum(int(h.get("samples", 0)) for h in measured),
        "reasons": seen,
    }


def throttle_warning(summary: dict[str, Any]) -> str | None:
    """``3 of 40 samples taken while the GPU was throttled (SW power cap)``, or None."""
    k = summary.get("throttled_samples", 0)
    if not k:
        return None
    reasons = ", ".join(summary.get("reasons") or []) or "reason not reported"
    return (f"{k} of {summary.get('samples', k)} samples taken while the GPU was throttled "
            f"({reasons}): its clocks were lowered while they ran")
