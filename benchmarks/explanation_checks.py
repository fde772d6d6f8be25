"""Is each explanation arraybench gives true? Every note checked against a measurement of its own.

Used by ``verdict_corpus.py`` after its run; each check prints its figures and ``held`` or ``NOT
held``. A note's claim is measured the way a user would test it:

- **oversubscription** ("give it the cores it gets: --threads N"): the same cell run again with
  ``threads=N`` and without, one after the other: held where N threads is at least 1.1x faster.
  Where no cell got the note, the cells that ran the most cores are run with ``threads=1`` too:
  held where none of them is 1.1x faster (no note was owed).
- **allocator cost** ("N ms with reused memory, M ms with fresh pages"): the cells measured in
  each state alone (``allocator="reused"``, then ``allocator="fresh"``), a worker per state: held
  where the measured ratio is within [0.67, 1.5]x of the one the note states.
- **compile cache** ("served from a disk cache"): a torch.compile cell run twice with one fresh
  Inductor cache folder: held where the first run's record does not name the cache and the second's
  does, with a compile time shorter than the first's.

On a shared machine the times are indicative; the verdicts need factors, not percents.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import arraybench
from arraybench.render.explanations import allocator_states
from arraybench.analysis.oversubscription import oversubscribed

QUICK = dict(devices="cpu", dtype="float64", processes=2, max_processes=2, min_samples=5, store=False,
             plots=False, progress=False)
AGREE = (0.67, 1.5)


def _median(results: Any, name: str, backend: str) -> float | None:
    return next((r.median_s for r in results.records
                 if r.workload == name and r.backend == backend and r.status == "ok"), None)


def _verdict(ok: bool) -> str:
    return "held" if ok else "NOT held"


def oversubscription(results: Any, workloads: dict[str, Any], max_time: float) -> list[str]:
    """Each oversubscription note against runs with and without the thread count it recommends."""
    found = oversubscribed(results.records, results.environment)
    out = []
    cells = [(c.record, c.threads_to_use, True) for c in found[:4]]
    if not cells:  # no note: check that none was owed where the most cores ran
        busiest = sorted((r for r in results.records if r.usage and r.usage.cores and r.status == "ok"),
                         key=lambda r: -(r.usage.cores or 0))[:3]
        cells = [(r, 1, False) for r in busiest]
    for r, n, noted in cells:
        wl = workloads[r.workload]
        runs = [arraybench.run([wl], backends=r.backend, max_time=max_time, threads=t, allocator="reused", **QUICK)
                for t in (None, n)]
        default, fewer = (_median(x, r.workload, r.backend) for x in runs)
        if not default or not fewer:
            out.append(f"  {r.workload} {r.backend}: not measured again")
            continue
        faster = default / fewer
        ok = faster >= 1.1 if noted else faster < 1.1
        claim = f"note: --threads {n} would help" if noted else f"no note ({r.usage.cores:.1f} cores)"
        out.append(f"  {r.workload} {r.backend} ({claim}): {default * 1e3:.3g} ms with its threads, "
                   f"{fewer * 1e3:.3g} ms with --threads {n} ({faster:.2f}x): {_verdict(ok)}")
    return out


def allocator_cost(workloads: list[Any], backends: str, max_time: float) -> list[str]:
    """The allocator note of a run with both states against runs of each state alone."""
    both = arraybench.run(workloads, backends=backends, max_time=max_time, allocator="both", **QUICK)
    notes = allocator_states(both.records)
    alone = {state: arraybench.run(workloads, backends=backends, max_time=max_time, allocator=state, **QUICK)
             for state in ("reused", "fresh")}
    out = [f"  note: {notes[0][:160]}..." if notes else "  no allocator note in the run with both states"]
    for r in both.records:
        if r.other_median_s is None or not r.median_s:
            continue
        stated = r.other_median_s / r.median_s
        reused, fresh = (_median(alone[s], r.workload, r.backend) for s in ("reused", "fresh"))
        if not reused or not fresh:
            continue
        measured = fresh / reused
        ok = AGREE[0] <= measured / stated <= AGREE[1]
        out.append(f"  {r.workload} {r.backend}: stated fresh/reused {stated:.2f}x, measured alone "
                   f"{fresh * 1e3:.3g}/{reused * 1e3:.3g} ms = {measured:.2f}x: {_verdict(ok)}")
    return out


def compile_cache(max_time: float) -> list[str]:
    """A torch.compile cell twice with one fresh Inductor cache: the note only where it served."""
    @arraybench.workload(sizes={"c": 1000}, inputs=lambda n, rng: rng.standard_normal(n), name="ec_compiled")
    def ec_compiled(xp: Any, x: Any) -> Any:
        return xp.tanh(x) * 2.0 + 1.0

    saved = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache  # inherited by the workers
        try:
            runs = [arraybench.run([ec_compiled], backends="torch", modes="compiled", max_time=max_time,
                                   allocator="reused", **{**QUICK, "processes": 1, "max_processes": 1})
                    for _ in range(2)]
        finally:
            if saved is None:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            else:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved
    recs = [next((r for r in x.records if r.mode == "compiled"), None) for x in runs]
    if any(r is None or r.compile_s is None for r in recs):
        return ["  torch.compile: not measured (" + "; ".join(r.reason for r in recs if r) + ")"]
    said = ["served from a disk cache" in " ".join(r.warnings) for r in recs]
    ok = not said[0] and said[1] and recs[1].compile_s < recs[0].compile_s
    return [f"  torch.compile, cold cache: compile {recs[0].compile_s:.2f} s, cache named: {said[0]}; "
            f"same cache again: {recs[1].compile_s:.2f} s, cache named: {said[1]}: {_verdict(ok)}"]
