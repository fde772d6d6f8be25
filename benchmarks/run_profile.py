"""Where a run's wall time goes: worker start-up and imports, preparation, turns, the rest.

    python benchmarks/run_profile.py run --output-dir /tmp/prof        # the default suite
    python benchmarks/run_profile.py pytest tests_of_mine.py -q         # a pytest session

The command runs in this process, with every worker's messages time-stamped as the parent reads
them. Per worker it takes: start -> Ready (interpreter, imports, device), the preparation it was
asked for (PREPARE -> Prepared: first calls, checks, calibration), its time in the turns, and the
end (FINISH -> Done), and its exit (Done -> closed; a pytest session's kept workers close at its
end). It prints the sum of each over the workers, and what of the wall time no
worker phase covers (the parent: plan, references, analysis, reports). Phases of workers alive
together overlap, so the sums are work, not wall time; "busy" is the wall time during which at
least one worker was in that phase.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from typing import Any, Iterator

from arraybench.executors import worker_process
from arraybench.worker import protocol

_EVENTS: list[tuple[float, int, str]] = []  # (time, worker id, what)
_ORIGINAL_INIT = worker_process.WorkerProcess.__init__
_ORIGINAL_MESSAGES = worker_process.WorkerProcess.messages
_ORIGINAL_SEND = worker_process.WorkerProcess.send
_ORIGINAL_CLOSE = worker_process.WorkerProcess.close
_ORIGINAL_WAIT = worker_process.WorkerProcess.wait_started


_BACKEND: dict[int, str] = {}
_STATE: dict[int, str] = {}  # the allocator state a worker started in
_INDEX: dict[int, int] = {}  # the replicate index (process number) of a worker's job


def _init(self: Any, job: Any, *args: Any, **kwargs: Any) -> None:
    _BACKEND[id(self)] = job.backend
    _STATE[id(self)] = job.allocator or "left alone"
    _INDEX[id(self)] = job.replicate
    _EVENTS.append((time.monotonic(), id(self), "start"))
    _ORIGINAL_INIT(self, job, *args, **kwargs)


def _messages(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
    for msg in _ORIGINAL_MESSAGES(self, *args, **kwargs):
        _EVENTS.append((time.monotonic(), id(self), type(msg).__name__))
        yield msg


def _send(self: Any, line: str) -> None:
    what = "PREPARE" if line.startswith('{"event": "prepare"') else \
        "FINISH" if line == protocol.FINISH.to_json() else "Turn"
    _EVENTS.append((time.monotonic(), id(self), what))
    _ORIGINAL_SEND(self, line)


def _wait_started(self: Any, timeout: float) -> bool:
    came = _ORIGINAL_WAIT(self, timeout)
    if came:  # a worker started ahead of its index: ready now, read later
        _EVENTS.append((time.monotonic(), id(self), "Ready"))
    return came


def _close(self: Any) -> None:
    _ORIGINAL_CLOSE(self)
    _EVENTS.append((time.monotonic(), id(self), "closed"))


def _phases(backend: str | None = None, index: int | None = None) -> dict[str, list[tuple[float, float]]]:
    """Each worker's phases as (start, end) intervals, by phase name (``backend``'s workers, and
    those of replicate ``index``, only)."""
    by_worker: dict[int, list[tuple[float, str]]] = defaultdict(list)
    for t, w, what in _EVENTS:
        if backend is not None and _BACKEND.get(w) != backend:
            continue
        if index is not None and _INDEX.get(w) != index:
            continue
        by_worker[w].append((t, what))
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for events in by_worker.values():
        first = {}
        last = {}
        for t, what in events:
            first.setdefault(what, t)
            last[what] = t
        start = first.get("start")
        ready = first.get("Ready")
        if start is not None and ready is not None:
            out["start-up (to Ready)"].append((start, ready))
        if "PREPARE" in first and "Prepared" in first:
            out["prepare (alone)"].append((first["PREPARE"], first["Prepared"]))
        elif ready is not None and "Turn" not in first:
            # A worker on its own: everything from Ready to Done is its measuring.
            end = first.get("Done", last.get("closed"))
            if end is not None:
                out["measure (alone)"].append((ready, end))
        if "Turn" in first and "FINISH" in first:
            out["turns"].append((first["Turn"], first["FINISH"]))
        if "FINISH" in first and "Done" in first:
            out["finish (to Done)"].append((first["FINISH"], first["Done"]))
        if "Done" in first and "closed" in last:
            out["exit (Done to closed)"].append((first["Done"], last["closed"]))
    return out


def _union(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "pytest"):
        print(__doc__.strip().splitlines()[2])
        return 2
    worker_process.WorkerProcess.__init__ = _init  # type: ignore[method-assign]
    worker_process.WorkerProcess.messages = _messages  # type: ignore[method-assign]
    worker_process.WorkerProcess.send = _send  # type: ignore[method-assign]
    worker_process.WorkerProcess.close = _close  # type: ignore[method-assign]
    worker_process.WorkerProcess.wait_started = _wait_started  # type: ignore[method-assign]
    started = time.monotonic()
    if argv[0] == "run":
        from arraybench.commands.main import main as arraybench_main

        code = arraybench_main(argv)
    else:
        import pytest

        code = int(pytest.main(argv[1:]))
    wall = time.monotonic() - started
    phases = _phases()
    every = [iv for ivs in phases.values() for iv in ivs]
    workers = len({w for _, w, what in _EVENTS if what == "start"})
    print(f"\nwall {wall:.1f} s, {workers} workers")
    print(f"{'phase':<22}{'workers':>8}{'sum s':>9}{'busy s':>9}")
    for name, ivs in phases.items():
        print(f"{name:<22}{len(ivs):>8}{sum(b - a for a, b in ivs):>9.1f}{_union(ivs):>9.1f}")
    print(f"{'no worker phase':<22}{'':>8}{'':>9}{wall - _union(every):>9.1f}")
    print("\nmean seconds per worker, by library")
    names = list(phases)
    print(f"{'library':<10}" + "".join(f"{n.split(' ')[0]:>10}" for n in names))
    for backend in dict.fromkeys(_BACKEND.values()):
        mine = _phases(backend)
        print(f"{backend:<10}" + "".join(
            f"{sum(b - a for a, b in mine[n]) / len(mine[n]):>10.2f}" if mine.get(n) else f"{'-':>10}"
            for n in names))
    print("\nby process (replicate index): workers, the seconds during which one of them was in a phase "
          "(workers started early overlap the index before), and each phase's")
    print(f"{'index':<7}{'workers':>8}{'busy':>7}" + "".join(f"{n.split(' ')[0]:>10}" for n in names))
    for index in sorted(set(_INDEX.values())):
        mine = _phases(index=index)
        spans = [iv for ivs in mine.values() for iv in ivs]
        if not spans:
            continue
        wall_i = _union(spans)
        count = sum(1 for i in _INDEX.values() if i == index)
        print(f"{index:<7}{count:>8}{wall_i:>7.1f}" + "".join(
            f"{_union(mine[n]):>10.1f}" if mine.get(n) else f"{'-':>10}" for n in names))
    print("\ntimeline, seconds since the command began: each index's first start, first PREPARE, "
          "first Turn, last Done")
    for index in sorted(set(_INDEX.values())):
        mine = [(t, what) for t, w, what in _EVENTS if _INDEX.get(w) == index]
        marks = [min((t for t, what in mine if what == name), default=None)
                 for name in ("start", "PREPARE", "Turn")]
        marks.append(max((t for t, what in mine if what == "Done"), default=None))
        print(f"{index:<7}" + "".join(f"{m - started:>9.1f}" if m is not None else f"{'-':>9}" for m in marks))
    print("\nby allocator state: workers, turns taken, seconds in them, seconds preparing")
    for state in dict.fromkeys(_STATE.values()):
        mine = {w for w, s in _STATE.items() if s == state}
        turns, in_turns, preparing = _turn_and_prepare_time(mine)
        print(f"{state:<12}{len(mine):>4}{turns:>8}{in_turns:>9.1f}{preparing:>9.1f}")
    return code


def _turn_and_prepare_time(workers: set[int]) -> tuple[int, float, float]:
    """(turns taken, seconds from each Turn to its Sampled, seconds from PREPARE to Prepared) of
    ``workers``."""
    turns, in_turns, preparing = 0, 0.0, 0.0
    handed: dict[int, float] = {}
    asked: dict[int, float] = {}
    for t, w, what in _EVENTS:
        if w not in workers:
            continue
        if what == "Turn":
            handed[w] = t
        elif what == "Sampled" and w in handed:
            turns += 1
            in_turns += t - handed.pop(w)
        elif what == "PREPARE":
            asked[w] = t
        elif what == "Prepared" and w in asked:
            preparing += t - asked.pop(w)
    return turns, in_turns, preparing


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
