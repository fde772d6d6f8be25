"""Each cell's results over the stored runs of one machine (a **series**, oldest first), the steps
in them, and why. A step is called where both runs had two or more processes (one process's
interval holds its own noise only), their 95% intervals separate, ``compare``'s test survives
Benjamini–Hochberg across every pair of every series, and the ratio passes ``threshold``; it is
attributed to what both runs recorded, and recorded differently.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any, Iterable, Mapping, Sequence

from ..model.cell import config_label, environment_in_key
from ..model.runs import (Entry, RunInfo, describe, fingerprint_changes, machine_environment,
                          settings_differences)
from .compare import DEFAULT_THRESHOLD, LogEstimate, benjamini_hochberg, beyond, welch_test
from .grouping import is_valid

#: The false discovery rate allowed across all the steps of one history.
DEFAULT_FDR = 0.05


@dataclass(frozen=True)
class Point:
    """A series' value in one run."""

    run: RunInfo
    entry: Entry

    @property
    def valid(self) -> bool:
        return is_valid(self.entry)

    @property
    def median_s(self) -> float:
        return self.entry.median_s or 0.0

    @property
    def low(self) -> float:
        return self.entry.ci_low_s if self.entry.ci_low_s is not None else self.median_s

    @property
    def high(self) -> float:
        return self.entry.ci_high_s if self.entry.ci_high_s is not None else self.median_s

    @property
    def processes(self) -> int:
        """The processes that measured this point."""
        return self.entry.n_replicates

    @property
    def environment(self) -> Mapping[str, Any]:
        """The environment of the machine that measured it."""
        return machine_environment(self.run.environment, self.entry.machine)


@dataclass
class Series:
    """One cell on one machine across runs, oldest first."""

    machine_id: str
    cell: str
    label: str  # "PyTorch CPU", as tables name the configuration
    workload: str
    size_label: str
    size: int
    machine: str  # the machine in words
    points: list[Point] = field(default_factory=list)

    @property
    def case(self) -> str:
        n = f"n = {self.size:,}"
        return n if self.size_label == str(self.size) else f"{self.size_label} ({n})"


@dataclass
class Untested:
    """Two consecutive valid points no test can judge: a side had a single process."""

    series: Series
    before: Point
    after: Point


@dataclass
class Step(Untested):
    """A change called between two consecutive runs of a series."""

    ratio: float  # after / before: above 1 is slower
    p_value: float
    causes: list[str]

    @property
    def slower(self) -> bool:
        return self.ratio > 1


@dataclass(frozen=True)
class VersionChange:
    """Library versions that changed on a machine between two consecutive runs (a mark on the plots)."""

    machine_id: str
    run: RunInfo
    changes: tuple[tuple[str, str, str], ...]

    @property
    def text(self) -> str:
        return ", ".join(f"{name} {a} → {b}" for name, a, b in self.changes)


@dataclass
class History:
    """Series, the steps called in them, the runs in time order and the version changes."""

    series: list[Series]
    steps: list[Step]
    runs: list[RunInfo]
    version_changes: list[VersionChange]
    threshold: float
    fdr: float
    tested: int  # pairs of consecutive points tested, across all series
    #: Consecutive pairs not tested because a side had one process: no step can be called there.
    one_process: list[Untested] = field(default_factory=list)
    #: Each machine's latest run among those read (by machine id), interrupted or not.
    latest: dict[str, RunInfo] = field(default_factory=dict)

    @property
    def one_process_series(self) -> list[Series]:
        """The series with a pair that a single process left untested, in order."""
        return list({id(u.series): u.series for u in self.one_process}.values())

    def regressions(self, limit: float) -> list[Step]:
        """Slowdowns above ``1 + limit`` that arrived with the latest run of their series."""
        return [s for s in self.steps if s.slower and s.ratio > 1 + limit
                and s.after is s.series.points[-1]]

    def unjudged_above(self, limit: float) -> list[Untested]:
        """Slowdowns above ``1 + limit`` with the latest run that no test could judge (one process)."""
        return [u for u in self.one_process
                if u.after is u.series.points[-1] and u.before.median_s > 0
                and u.after.median_s / u.before.median_s > 1 + limit]

    def interrupted_latest(self) -> list[RunInfo]:
        """Machines' latest runs that were interrupted (history leaves them out: a gate must not)."""
        return list({r.run_id: r for r in self.latest.values() if not r.complete}.values())

    def unseen_in_latest(self) -> list[Series]:
        """Series valid in their machine's complete run before the latest that the latest did not
        measure validly: a gate passing them passes what it never saw."""
        def valid_in(s: Series, run: RunInfo) -> bool:
            return any(p.run.run_id == run.run_id and p.valid for p in s.points)

        return [s for machine, ordered in _runs_by_machine(self.series).items() if len(ordered) >= 2
                for s in self.series if s.machine_id == machine
                and valid_in(s, ordered[-2][0]) and not valid_in(s, ordered[-1][0])]

    def restricted(self, cells: set[str]) -> "History":
        """Only the series of ``cells`` with two valid points or more, and their steps."""
        series = [s for s in self.series if s.cell in cells and sum(p.valid for p in s.points) >= 2]
        keep = {id(s) for s in series}
        return replace(self, series=series, steps=[st for st in self.steps if id(st.series) in keep],
                       one_process=[u for u in self.one_process if id(u.series) in keep])

    def for_workload(self, workload: str) -> list[Series]:
        return [s for s in self.series if s.workload == workload]


def _order(run: RunInfo) -> tuple[str, str]:
    return (run.started_at, run.run_id)


def build_series(entries: Iterable[Entry], runs: Mapping[str, RunInfo]) -> list[Series]:
    """Entries grouped into series (one per machine and cell), points in time order."""
    by_key: dict[tuple[str, str], Series] = {}
    for e in entries:
        run = runs.get(e.run_id)
        if run is None or not run.complete:  # an interrupted run is no point of a history
            continue
        key = (e.machine_id, e.cell)
        if key not in by_key:
            label = config_label(e.backend, e.device, e.mode, transfer=e.transfer,
                                 environment=environment_in_key(e.cell))
            by_key[key] = Series(e.machine_id, e.cell, label, e.workload, e.size_label, e.size,
                                 describe(machine_environment(run.environment, e.machine)))
        by_key[key].points.append(Point(run, e))
    for s in by_key.values():
        s.points.sort(key=lambda p: _order(p.run))
    return sorted(by_key.values(), key=lambda s: (s.workload, s.size, s.size_label, s.machine_id, s.label))


def step_p_value(a: Point, b: Point) -> float | None:
    """Two-sided p-value of a change in the log median (None: no interval, or one process)."""
    before, after = (LogEstimate.from_interval(p.median_s, p.entry.ci_low_s, p.entry.ci_high_s,
                                               p.processes) for p in (a, b))
    return None if before is None or after is None else welch_test(before, after).p_value


def causes(before: Point, after: Point) -> list[str]:
    """What both runs of a step recorded and recorded differently, in words."""
    env_a, env_b = before.environment, after.environment

    def code(point: Point) -> Any:  # the workload's code's fingerprint, where the run recorded it
        tables = [t for env in (point.environment, point.run.environment)
                  if isinstance(t := env.get("workload_code"), Mapping) and point.entry.workload in t]
        return tables[0][point.entry.workload] if tables else None

    a, b = code(before), code(after)
    changed = None not in (a, b) and a != b
    out = [f"the workload's code ({str(a)[:8]} → {str(b)[:8]})"] if changed else []
    out += [f"{name} {a} → {b}" for name, a, b in library_changes(env_a, env_b)]
    if env_a.get("blas") != env_b.get("blas") and env_a.get("blas") and env_b.get("blas"):
        out.append(f"BLAS {env_a.get('blas')} → {env_b.get('blas')}")
    fp_a, fp_b = env_a.get("fingerprint"), env_b.get("fingerprint")
    if fp_a and fp_b:
        out += [f"machine: {what} {a} → {b}" for what, a, b in fingerprint_changes(fp_a, fp_b)]
    ctx_a, ctx_b = before.run.context or {}, after.run.context or {}
    out += [f"context {k}: {ctx_a[k]} → {ctx_b[k]}" for k in ctx_b if k in ctx_a and ctx_a[k] != ctx_b[k]]
    out += [f"setting {name}: {a} → {b}"
            for name, a, b in settings_differences(before.run.settings, after.run.settings)]
    return out


def library_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(name, before, after) for the libraries, Python and arraybench whose versions differ, among
    those both runs list (``None``: not installed; an older arraybench did not look for others)."""
    libs_a, libs_b = a.get("libraries") or {}, b.get("libraries") or {}
    return [*((name, str(libs_a[name] or "none"), str(libs_b[name] or "none"))
              for name in libs_b if name in libs_a and libs_a[name] != libs_b[name]),
            *(("Python" if name == "python" else name, str(a[name]), str(b[name]))
              for name in ("python", "arraybench")
              if a.get(name) and b.get(name) and a[name] != b[name])]


def _runs_by_machine(series: Sequence[Series]) -> dict[str, list[tuple[RunInfo, str]]]:
    """Each machine's (complete) runs that hold one of its series, with its label, in time order."""
    by_machine: dict[str, dict[str, tuple[RunInfo, str]]] = {}
    for s in series:
        for p in s.points:
            by_machine.setdefault(s.machine_id, {})[p.run.run_id] = (p.run, p.entry.machine)
    return {m: sorted(runs.values(), key=lambda rl: _order(rl[0]))
            for m, runs in by_machine.items()}


def version_changes(series: Sequence[Series]) -> list[VersionChange]:
    """For each machine, the runs where library versions changed from the machine's run before."""
    return [VersionChange(machine_id, run, tuple(changed))
            for machine_id, ordered in _runs_by_machine(series).items()
            for (prev, prev_label), (run, label) in zip(ordered, ordered[1:])
            if (changed := library_changes(machine_environment(prev.environment, prev_label),
                                           machine_environment(run.environment, label)))]


def history(entries: Iterable[Entry], runs: Mapping[str, RunInfo], *,
            threshold: float = DEFAULT_THRESHOLD, fdr: float = DEFAULT_FDR) -> History:
    """Series from stored entries, with the steps called in them (see the module's docstring)."""
    entries = list(entries)
    series = build_series(entries, runs)
    # Each machine's latest run: the last of its runs in time order.
    latest = dict(sorted(((e.machine_id, runs[e.run_id]) for e in entries if e.run_id in runs),
                         key=lambda machine_run: _order(machine_run[1])))
    consecutive = [(s, a, b) for s in series for a, b in pairwise([p for p in s.points if p.valid])]
    one_process = [Untested(s, a, b) for s, a, b in consecutive if a.processes < 2 or b.processes < 2]
    # step_p_value is None for those, and where an interval is missing.
    candidates = [(s, a, b, p) for s, a, b in consecutive if (p := step_p_value(a, b)) is not None]
    reject = benjamini_hochberg([c[3] for c in candidates], fdr)
    steps = [Step(s, a, b, b.median_s / a.median_s, p, causes(a, b))
             for (s, a, b, p), significant in zip(candidates, reject)
             if significant and beyond(b.median_s / a.median_s, threshold)
             and (b.low > a.high or b.high < a.low)]  # the 95% intervals do not overlap
    ordered_runs = sorted({p.run.run_id: p.run for s in series for p in s.points}.values(), key=_order)
    return History(series, steps, ordered_runs, version_changes(series), threshold, fdr, len(candidates),
                   one_process, latest)
