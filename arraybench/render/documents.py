"""What ``compare --json`` and ``history --json`` print: one JSON document, the numbers and the
verdicts as the tables show them, for scripts (times in seconds; ratios new/base)."""

from __future__ import annotations

import json
import math
from typing import Any

from ..analysis.compare import Comparison
from ..units import format_change
from ..analysis.history import History


def _plain(value: Any) -> Any:
    """JSON has no NaN or infinity: they are null, as a missing value is."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def comparison_json(comparison: Comparison, *, failures: list[str] | None = None) -> str:
    """The comparison: its counts, geometric mean, every cell's row and (with a gate) why it fails."""
    g = comparison.geometric_mean
    doc = {"summary": comparison.summary(), "counts": comparison.counts(),
           "geometric_mean": _plain(g), "change": format_change(g) if g is not None else None,
           "threshold": comparison.threshold, "alpha": comparison.alpha,
           "cells": [{k: _plain(v) for k, v in row.items()} for row in comparison.rows()]}
    if failures is not None:
        doc["gate"] = {"passed": not failures, "failures": failures}
    return json.dumps(doc, allow_nan=False)


def history_json(found: History, *, regressions: list[str] | None = None) -> str:
    """The history: every series with its points (oldest first), and the steps called."""
    series = [{"machine_id": s.machine_id, "machine": s.machine, "cell": s.cell, "label": s.label,
               "workload": s.workload, "size_label": s.size_label, "size": s.size,
               "points": [{"run_id": p.run.run_id, "started_at": p.run.started_at,
                           "status": p.entry.status, "median_s": _plain(p.entry.median_s),
                           "ci_low_s": _plain(p.entry.ci_low_s), "ci_high_s": _plain(p.entry.ci_high_s),
                           "processes": p.processes, "context": p.run.context} for p in s.points]}
              for s in found.series]
    steps = [{"cell": st.series.cell, "machine_id": st.series.machine_id, "label": st.series.label,
              "before_run": st.before.run.run_id, "after_run": st.after.run.run_id,
              "ratio": _plain(st.ratio), "change": format_change(st.ratio), "p_value": _plain(st.p_value),
              "causes": list(st.causes)} for st in found.steps]
    doc: dict[str, Any] = {"threshold": found.threshold, "alpha": found.fdr, "series": series, "steps": steps}
    if regressions is not None:
        doc["gate"] = {"passed": not regressions, "failures": regressions}
    return json.dumps(doc, allow_nan=False)
