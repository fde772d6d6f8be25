"""Configurations side by side in time: one replicate index's workers alive together, taking turns.

Each worker prepares its cells alone; then, case by case in a shuffled order, every cell of the case
takes one sample a round, so that a verdict's two sides sample the same seconds of the machine. A
worker without the turn is stopped (SIGSTOP, with its group): a BLAS pool still spinning cannot take a
core from the library timed. ``LoadWatch`` says which rounds other processes loaded (busy rounds).
"""

from __future__ import annotations

import bisect
import random
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Callable, Iterator, Protocol

from ..analysis.policy import pairs_on, short_of_quiet, takes_turn
from ..host.cpu_time import MachineTime, process_seconds
from ..model.cell import Cell, Config, case_key
from ..model.replicate import cut_error
from ..worker.protocol import FINISH, Board, Message, Prepare, Prepared, Ready, ReplicateDone, Sampled, Turn
from .session import RunHandle
from .worker_process import (STARTUP_TIMEOUT_S, StopRequested, WorkerExited, WorkerProcess, WorkerTimeout,
                             end_together, stop_grace_s)

@dataclass
class _Side:
    """One configuration's worker during the turns."""

    config: Config
    cells: list[Cell]
    worker: WorkerProcess
    listener: "Listener"
    messages: Iterator[Message]
    remaining: dict[str, Cell]
    timeout: float  # seconds without progress before it is taken for hung (``--timeout``)
    retry: bool  # its cells were handed back before: where it dies outside any cell, they fail
    #: Its large outputs in the other allocator state: its failures are its listener's to say.
    extra: bool = False
    alive: bool = True
    sampling: set[int] = field(default_factory=set)  # cells it still samples, by index in its job
    finished: bool = False  # every cell answered after its turns: it may do another job
    ends_alone: bool = True  # its end reads an energy counter of the whole package or board


class Listener(Protocol):
    """What acts on one worker's messages (``local.Listener``)."""

    ready: bool

    def handle(self, msg: Message) -> bool: ...

    def fail(self, cell: Cell, reason: str) -> None: ...


StartWorker = Callable[[Config, list[Cell]], tuple[WorkerProcess, Listener, dict[str, Cell]]]


def take_turns(session: RunHandle, plan: dict[Config, list[Cell]], start: StartWorker, *,
               timeout: float, seed: int, extra: dict[Config, list[Cell]], start_extra: StartWorker,
               before_prepare: Callable[[], None], keep: Callable[[WorkerProcess], bool],
               judged: Callable[[Cell], bool], retry: bool) -> dict[Config, list[Cell]]:
    """Measure ``plan`` with its workers taking turns; return the cells handed back (a worker that
    crashed or hung) to take turns again. ``start(config, cells)`` gives a worker, its listener and
    the cells it answers for; ``extra`` sides (``start_extra``: the other allocator state) take turns
    beside them. ``before_prepare`` runs once every worker is ready; ``keep(worker)`` may keep one
    that finished cleanly (``pool``); ``judged(cell)``: an earlier process judged its result."""
    rng = random.Random(seed)
    every: list[_Side] = []  # each worker started, closed at the end whatever happened
    left: dict[Config, list[Cell]] = {}
    order = list(plan)
    rng.shuffle(order)
    try:
        for config in order:
            every.append(_start(session, config, plan[config], start, timeout, retry=retry))
        for config, cells in extra.items():
            if cells:
                every.append(_start(session, config, cells, start_extra, timeout, extra=True))
        # Every worker imports its library at once (nothing is timed yet), then each prepares
        # its cells alone, first calls and all, while the others wait.
        sides = [side for side in every if _until(session, side, Ready, left)]
        before_prepare()
        for side in sides:
            mine = [i for i, c in enumerate(side.cells) if c.key in side.remaining]
            done = [i for i in mine if judged(side.cells[i])]
            only = mine if len(mine) < len(side.cells) else None
            side.worker.send(Prepare(only=only, judged=done).to_json())
            if _until(session, side, Prepared, left):
                side.sampling = {i for i, c in enumerate(side.cells) if c.key in side.remaining}
                side.worker.pause()
        sides = [side for side in sides if side.alive]
        with LoadWatch([side.worker.proc.pid for side in sides]) as watch:
            spans = _turns(session, sides, rng, left, watch)
        busy = {turn: watch.busy(*span) for turn, span in spans.items()}
        # Ends that measure nothing of the machine's overlap; one that reads an energy counter
        # runs alone (``_finish`` tells it to end).
        together = [side for side in sides if side.alive and not side.ends_alone]
        for side in together:
            side.worker.resume()
            side.worker.send(FINISH.to_json())
        for side in together + [side for side in sides if side.ends_alone]:
            _finish(session, side, left, busy)
    except StopRequested:
        for side in every:
            _wind_down(session, side)
        raise
    except BaseException:
        for side in every:
            side.worker.kill()
        raise
    finally:
        ending = [side for side in every if not (side.finished and keep(side.worker))]
        end_together([side.worker for side in ending])
    return left


def _start(session: RunHandle, config: Config, cells: list[Cell], start: StartWorker, timeout: float,
           extra: bool = False, retry: bool = False) -> _Side:
    """Start ``config``'s worker; it imports its library, says it is ready and waits."""
    worker, listener, remaining = start(config, cells)
    messages = worker.messages(timeout, startup_timeout=STARTUP_TIMEOUT_S, stop=session.stop_requested)
    # Its job's cells: a worker started early may have more than it measures (``remaining``).
    return _Side(config, list(worker.cells), worker, listener, messages, remaining, timeout, retry, extra)


def _until(session: RunHandle, side: _Side, kind: type, left: dict[Config, list[Cell]]) -> bool:
    """Act on a worker's messages until one of ``kind``; False where it never came (the worker ended)."""
    try:
        for msg in side.messages:
            if isinstance(msg, Ready):
                side.ends_alone = msg.ends_alone
            if side.listener.handle(msg):
                side.alive = False
                side.remaining.clear()  # unavailable: the listener said so to the run
                return False
            if isinstance(msg, kind):
                return True
        _hand_back(side, left)  # done without preparing: whatever is left is measured alone
    except (WorkerTimeout, WorkerExited) as exc:
        _failed(session, side, exc, cell=None, left=left)
    side.alive = False
    return False


Spans = dict[tuple[int, int, int], tuple[float, float]]  # each turn's span, by (id(side), cell, round)


def _turns(session: RunHandle, sides: list[_Side], rng: random.Random, left: dict[Config, list[Cell]],
           watch: LoadWatch) -> Spans:
    """Hand turns until every cell has finished sampling, and each turn's span. A cell done by its
    own rule goes on taking turns while another of its case samples, so that every round pairs
    all of them; and longer where the case is short of quiet rounds (``analysis/policy``)."""
    spans: Spans = {}
    quiet: dict[str, int] = {}  # rounds of each case that no other process loaded, so far
    rested = 0  # rounds of any case that no other process loaded
    current: _Side | None = None
    members: dict[str, list[tuple[_Side, int]]] = {}
    for side in sides:
        for i in sorted(side.sampling):
            members.setdefault(case_key(side.cells[i]), []).append((side, i))
    still = {id(side): set(side.sampling) for side in sides}  # cells whose own sampling goes on
    taken: dict[tuple[int, int], int] = {}  # turns each cell took, by (side, cell)
    done_at: dict[tuple[int, int], int] = {}  # the turns it had taken when its own sampling ended
    round_ = 0
    spent: dict[str, float] = {}  # seconds each case's rounds took, so far
    per_call: dict[tuple[int, int], list[float]] = {}  # each cell's samples so far, by (side, cell)

    def short(key: str) -> bool:
        return short_of_quiet(quiet.get(key, 0), spent.get(key, 0.0), rested, round_)

    def turn_takers(key: str) -> list[tuple[_Side, int]]:
        # The other allocator state's cells (``extra``) pair with nothing: none waits on them.
        sampling = [per_call.get((id(side), i), []) for side, i in members[key]
                    if side.alive and not side.extra and i in still[id(side)]]
        return [(side, i) for side, i in members[key] if side.alive and i in side.sampling
                and (i in still[id(side)] or pairs_on(per_call.get((id(side), i), []), sampling, short(key)))
                and takes_turn(side.extra, taken.get((id(side), i), 0), done_at.get((id(side), i)), short(key))]

    while True:
        # A case is open while a cell of it samples by its own rule, or while it is short of
        # quiet rounds and two of its cells may still pair on.
        open_cases = [key for key, group in members.items()
                      if any(side.alive and i in still[id(side)] for side, i in group)
                      or (short(key) and sum(not side.extra for side, _ in turn_takers(key)) >= 2)]
        if not open_cases:
            break
        rng.shuffle(open_cases)
        for key in open_cases:
            group = turn_takers(key)
            rng.shuffle(group)
            began = time.monotonic()
            for side, i in group:
                if not side.alive:
                    continue
                if session.stop_requested():
                    raise StopRequested()
                if current is not side:
                    if current is not None and current.alive:
                        current.worker.pause()
                    side.worker.resume()
                    current = side
                handed = time.monotonic()
                side.worker.send(Turn(i, round_).to_json())
                try:
                    msg = _next_sampled(side)
                except (WorkerTimeout, WorkerExited) as exc:
                    _failed(session, side, exc, cell=side.cells[i], left=left)
                    current = None
                    continue
                spans[(id(side), i, round_)] = (handed, time.monotonic())
                taken[(id(side), i)] = taken.get((id(side), i), 0) + 1
                if msg.seconds > 0:
                    per_call.setdefault((id(side), i), []).append(msg.seconds)
                if msg.done:
                    still[id(side)].discard(i)
                    done_at.setdefault((id(side), i), taken[(id(side), i)])
                    if msg.error:
                        side.sampling.discard(i)  # a cell that failed takes no more turns
                elif done_at.pop((id(side), i), None) is not None:
                    # Done, then not: its batch grew (``Sampling._regrow``), its samples taken back
                    # as warm-up; it samples by its own rule again, or it would keep none.
                    still[id(side)].add(i)
                    per_call.pop((id(side), i), None)
            ended = time.monotonic()
            spent[key] = spent.get(key, 0.0) + ended - began
            if group and not watch.busy(began, ended):  # the reads so far: enough to go on
                quiet[key] = quiet.get(key, 0) + 1
                rested += 1
            round_ += 1
    if current is not None and current.alive:
        current.worker.pause()
    return spans


def _next_sampled(side: _Side) -> Sampled:
    """The worker's answer to the turn just handed."""
    for msg in side.messages:
        if isinstance(msg, Sampled):
            return msg
        side.listener.handle(msg)
    raise WorkerExited(side.worker.proc.returncode, side.worker.last_error_line())


def _finish(session: RunHandle, side: _Side, left: dict[Config, list[Cell]],
            busy: dict[tuple[int, int, int], bool]) -> None:
    """End the turns of one worker: it finishes every cell and sends its replicates, each with
    the rounds whose turn ``busy`` says other processes loaded the machine in."""
    if not side.alive:
        return
    if side.ends_alone:
        side.worker.resume()
        side.worker.send(FINISH.to_json())
    position = {cell.key: i for i, cell in enumerate(side.cells)}
    try:
        for msg in side.messages:
            if isinstance(msg, ReplicateDone) and msg.replicate.rounds and not side.extra:
                i = position.get(msg.key, -1)
                msg.replicate.busy_rounds = sorted({r for r in msg.replicate.rounds if busy.get((id(side), i, r))})
            side.listener.handle(msg)
    except (WorkerTimeout, WorkerExited) as exc:
        _failed(session, side, exc, cell=None, left=left)
        return
    side.alive = False
    side.finished = not side.remaining
    _hand_back(side, left)


def _failed(session: RunHandle, side: _Side, exc: Exception, cell: Cell | None,
            left: dict[Config, list[Cell]]) -> None:
    """A worker crashed or hung: the cell under way fails, the others are handed back."""
    side.worker.kill()
    side.alive = False
    if side.extra:  # its listener says why for every cell it had; its configuration is unharmed
        side.listener.fail(cell or side.cells[0], str(exc))
        side.remaining.clear()
        return
    if not side.listener.ready:
        what = "did not start within the startup timeout" if isinstance(exc, WorkerTimeout) \
            else f"could not start: {exc}"
        session.start_failed(side.config, f"worker {what}")
        side.remaining.clear()
        return
    if cell is None:  # while preparing or finishing: the cell its heartbeat board names
        position = exc.cell if isinstance(exc, WorkerTimeout) else Board.read(side.worker.board_path)[0]
        cell = side.cells[position] if 0 <= position < len(side.cells) else None
    why = (f"timed out after {side.timeout:g} s without progress (--timeout)" if isinstance(exc, WorkerTimeout)
           else f"worker crashed: {exc}")
    if cell is not None and cell.key in side.remaining:
        side.listener.fail(side.remaining.pop(cell.key), why)
    elif side.retry:  # died outside any cell, again: a fresh worker would not get further
        for c in list(side.remaining.values()):
            side.listener.fail(c, why)
    _hand_back(side, left)


def _hand_back(side: _Side, left: dict[Config, list[Cell]]) -> None:
    if side.remaining and not side.extra:
        left.setdefault(side.config, []).extend(side.remaining.values())
        side.remaining.clear()


def _wind_down(session: RunHandle, side: _Side) -> None:
    """Ask a worker to stop, keep the cells it finished, then make sure it is gone."""
    if side.alive and side.listener.ready:
        side.worker.request_stop()
        grace = stop_grace_s()
        deadline = time.monotonic() + grace
        with suppress(StopRequested, WorkerTimeout, WorkerExited):
            for msg in side.worker.messages(grace, deadline=deadline, stop=session.stop_now):
                side.listener.handle(msg)
    side.worker.kill()


# -- other processes' CPU meanwhile, from /proc (elsewhere nothing is read and every round counts) --
# A burst of load does not slow two libraries alike (one on two threads loses one and waits at every
# barrier): a round taken during one pairs two times a quiet machine would not give.

#: How often the watch reads: ticks of 10 ms on 2 CPUs every 50 ms resolve a fifth of a core.
PERIOD_S = 0.05
#: A window shorter than this is widened to it, centred, before the others' cores are read over it.
LEAST_WINDOW_S = 0.2
#: Other processes using this many cores during a round make it a busy round.
BUSY_CORES = 0.5


class LoadWatch:
    """A thread that reads the others' CPU use until the watch is closed (a context manager)."""

    def __init__(self, pids: list[int]) -> None:
        self._pids = list(pids)
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

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._read()
        self._machine.close()

    def _run(self) -> None:
        while not self._stop.wait(PERIOD_S):
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
        # Two counts each of the machine, ours and every worker, each cut to a whole unit: a 30 ms
        # span of an idle machine read 0.67 of a core.
        used = self._others[last] - self._others[first]
        return used / span if used > cut_error(2 * (len(self._pids) + 2)) else 0.0

    def busy(self, start: float, end: float) -> bool:
        """Whether other processes used ``BUSY_CORES`` or more from ``start`` to ``end``, or over any
        ``LEAST_WINDOW_S`` of it: a burst over part of a long round is in its sample, a batch's mean."""
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
