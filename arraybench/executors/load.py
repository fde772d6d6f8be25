"""What the rest of the machine does while the workers take turns: other processes' CPU, from /proc.

A tenant that takes a core in bursts does not slow two libraries alike: a library that runs on
two threads loses one of them (and waits at every barrier for it), one that runs on one thread
keeps a free core. So a round of turns taken during a burst pairs two times the quiet machine
would not give. ``LoadWatch`` reads, every ``PERIOD_S``, the CPU time of the whole machine and of
arraybench's own processes (this one and its workers, ``host/cpu_time``); what is left is the
others'. ``others`` says how many cores they used over a span of time (a turn's,
``executors/turns``).

Only Linux has /proc: elsewhere the watch reads nothing and every round counts.
"""

from __future__ import annotations

import bisect
import threading
import time
from types import TracebackType

from ..host.cpu_time import MachineTime, process_seconds

#: How often the watch reads the counters: /proc/stat counts in ticks of 10 ms per CPU, so one
#: read of 2 CPUs every 50 ms resolves a fifth of a core; the tenant's bursts last 0.5 s or more.
PERIOD_S = 0.05
#: A window shorter than this is widened to it, centred, before the others' cores are read over it.
LEAST_WINDOW_S = 0.2
#: Other processes using this many cores during a round make it a busy round.
BUSY_CORES = 0.5


class LoadWatch:
    """A thread that reads the others' CPU use until the watch is closed (a context manager)."""

    def __init__(self, pids: list[int], period_s: float = PERIOD_S) -> None:
        self._pids = list(pids)
        self._period = period_s
        self._machine = MachineTime()
        self._times: list[float] = []
        self._others: list[float] = []  # others' CPU seconds, cumulative, at each time
        self._last: dict[int, float] = {}  # each worker's CPU seconds when last read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "LoadWatch":
        if self._machine.read() is not None:
            self._read()
            self._thread = threading.Thread(target=self._run, name="arraybench-load-watch", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._read()
        self._machine.close()

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            self._read()

    def _read(self) -> None:
        machine = self._machine.read()
        if machine is None:
            return
        for pid in self._pids:  # a worker that ended keeps the time it had: not others' then
            self._last[pid] = max(self._last.get(pid, 0.0), process_seconds(pid))
        ours = process_seconds("self") + sum(self._last.values())
        # Times first: a reader in another thread takes no more reads than ``_others`` holds.
        self._times.append(time.monotonic())
        self._others.append(machine[0] - ours)

    def others(self, start: float, end: float) -> float | None:
        """The cores other processes used from ``start`` to ``end`` (``time.monotonic``), over a
        window of ``LEAST_WINDOW_S`` at least; None where the watch read nothing then."""
        if end - start < LEAST_WINDOW_S:
            middle = (start + end) / 2
            start, end = middle - LEAST_WINDOW_S / 2, middle + LEAST_WINDOW_S / 2
        n = len(self._others)  # the watch's thread may be adding a read
        first = max(bisect.bisect_right(self._times, start, 0, n) - 1, 0)
        last = min(bisect.bisect_left(self._times, end, 0, n), n - 1)
        if last <= first:
            return None
        span = self._times[last] - self._times[first]
        # A worker's ticks can lag the machine's by one read: never below nothing.
        return max(self._others[last] - self._others[first], 0.0) / span

    def busy(self, start: float, end: float) -> bool:
        """Whether other processes used ``BUSY_CORES`` or more from ``start`` to ``end``, or over
        any ``LEAST_WINDOW_S`` of it: a burst over part of a long round (a batch of small calls
        that a lost thread made last seconds) is in its sample, which is a mean over the batch."""
        cores = self.others(start, end)
        if cores is None:
            return False
        if cores >= BUSY_CORES:
            return True
        n = len(self._others)
        first = bisect.bisect_right(self._times, start, 0, n)
        last = bisect.bisect_left(self._times, end, 0, n)
        return any((self.others(self._times[k], self._times[k] + LEAST_WINDOW_S) or 0.0) >= BUSY_CORES
                   for k in range(first, last) if self._times[k] + LEAST_WINDOW_S <= end)
