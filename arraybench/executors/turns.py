"""Configurations side by side in time: one replicate index's workers alive together, taking turns.

A verdict compares configurations (libraries, devices, environments, modes) that each run in
worker processes of their own. Measured one after another, a burst of load that lands on NumPy's
worker and not on PyTorch's becomes a difference between the libraries. Here every configuration's
worker for a replicate index is started (one at a time, each preparing its cells alone: imports,
first calls, checks, calibration), then they take turns: for each case, in a shuffled order, every
cell of the case still sampling takes one sample, the cells' order shuffled every round. The cells
a verdict compares so sample the same seconds of the machine, and the samples of one round of one
case are what ``analysis/pairs`` pairs.

One library measures at a time, and nothing else of another runs meanwhile: a worker that does not
have the turn is stopped (SIGSTOP, with its process group), so a BLAS or OpenMP pool still spinning
after its last call (``benchmarks/spin_tail.py`` measures how long one spins here) cannot take a
core from the library being timed; it goes on spinning where it left off when its turn comes back,
as it would between two calls of a plain process. How a library runs is not changed.

A worker that crashes or hangs during the turns costs the cell whose turn it was (``failed``); its
other cells are handed back, to take turns again in a fresh worker (``local.py``). One that dies
outside any cell hands them all back, once: on a retry it fails them all, so that a worker that
cannot go on is not started again and again.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Protocol

from ..analysis.policy import pairs_on, short_of_quiet, takes_turn
from ..model.cell import Cell, Config, case_key
from ..worker.protocol import FINISH, Message, Prepare, Prepared, Ready, ReplicateDone, Sampled, Turn
from .session import RunHandle
from .load import LoadWatch
from .worker_process import StopRequested, WorkerExited, WorkerProcess, WorkerTimeout

__all__ = ["end_together", "take_turns"]

#: How long a worker asked to stop may take to send the cells it has finished, on a machine with
#: a core for each runnable process; ``stop_grace_s`` stretches it where processes queue for cores.
STOP_GRACE_S = 5.0
#: The longest a stopping worker is waited for, however loaded the machine (a second Ctrl-C ends
#: the wait at once).
STOP_GRACE_MOST_S = 60.0


def stop_grace_s() -> float:
    """The grace a stopping worker gets now: ``STOP_GRACE_S`` times the run queue over the cores.

    Finishing a batch (the checks, the footprint) takes a fraction of a second alone; with sixteen
    processes queued on two cores the worker gets an eighth of a core, and a fixed five seconds
    killed it with finished cells unsent, so they were measured again on resume."""
    try:
        queued = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        queued = 1.0
    return min(STOP_GRACE_MOST_S, STOP_GRACE_S * max(1.0, queued))


@dataclass
class _Side:
    """One configuration's worker during the turns."""

    config: Config
    cells: list[Cell]
    worker: WorkerProcess
    listener: "Listener"
    messages: Iterator[Message]
    remaining: dict[str, Cell]
    alive: bool = True
    #: Cells the worker still samples, by their index in its job.
    sampling: set[int] = field(default_factory=set)
    #: A side that accompanies its configuration's own (its large outputs in the other allocator
    #: state): its failures are its listener's to say, never the configuration's.
    extra: bool = False
    #: The worker said ``Done`` after its turns, every cell answered: it may do another job.
    finished: bool = False
    #: Its end measures energy (counters of the whole package or board): it ends alone.
    ends_alone: bool = True
    #: Seconds without progress before it is taken for hung (``--timeout``).
    timeout: float = 0.0
    #: Its cells were handed back before: where it dies outside any cell, they fail.
    retry: bool = False


class Listener(Protocol):
    """What acts on one worker's messages (``local.Listener``)."""

    ready: bool

    def handle(self, msg: Message) -> bool:
        """Act on one message; True when the worker's configuration turned out unavailable."""
        ...

    def fail(self, cell: Cell, reason: str) -> None:
        """Answer ``cell`` with a failed replicate saying ``reason``."""
        ...


StartWorker = Callable[[Config, list[Cell]], tuple[WorkerProcess, Listener, dict[str, Cell]]]


def take_turns(session: RunHandle, plan: dict[Config, list[Cell]], start: StartWorker, *,
               timeout: float, startup_timeout: float, seed: int,
               extra: dict[Config, list[Cell]] | None = None,
               start_extra: StartWorker | None = None,
               before_prepare: Callable[[], None] | None = None,
               keep: Callable[[WorkerProcess], bool] | None = None,
               judged: Callable[[Cell], bool] | None = None, retry: bool = False) -> dict[Config, list[Cell]]:
    """Measure ``plan`` (each configuration's cells) with its workers taking turns; the cells
    handed back (a worker that crashed or hung), by configuration, to take turns again.

    ``start(config, cells)`` starts a worker whose job takes turns and returns it with the
    listener that acts on its messages and the cells it answers for (by key); each cell is
    answered through the listener (journalled) as it comes home. ``extra`` sides, started by
    ``start_extra``, take turns beside them (the same cells in the other allocator state) and
    answer only their own listener. ``before_prepare`` is called once every worker is ready,
    before the first one prepares: from then on the cells are timed. ``keep(worker)`` may keep a
    worker that finished cleanly for another run (``pool``): True where it did. ``judged(cell)``:
    whether an earlier process judged the cell's result already (its worker does not again).
    ``retry``: the cells were handed back before (a worker dying outside any cell fails them).
    """
    rng = random.Random(seed)
    every: list[_Side] = []  # each worker started, closed at the end whatever happened
    left: dict[Config, list[Cell]] = {}
    order = list(plan)
    rng.shuffle(order)
    try:
        for config in order:
            every.append(_start(session, config, plan[config], start, timeout, startup_timeout, retry=retry))
        for config, cells in (extra or {}).items():
            if cells and start_extra is not None:
                every.append(_start(session, config, cells, start_extra, timeout, startup_timeout, extra=True))
        sides = list(every)
        # Every worker imports its library at once (nothing is timed yet), then each prepares
        # its cells alone, first calls and all, while the others wait.
        sides = [side for side in sides if _until(session, side, Ready, left)]
        if before_prepare is not None:
            before_prepare()
        for side in sides:
            mine = [i for i, c in enumerate(side.cells) if c.key in side.remaining]
            done = [i for i in mine if judged is not None and judged(side.cells[i])]
            only = mine if len(mine) < len(side.cells) else None
            side.worker.send(Prepare(only=only, judged=done).to_json())
            if _until(session, side, Prepared, left):
                side.sampling = {i for i, c in enumerate(side.cells) if c.key in side.remaining}
                side.worker.pause()
        sides = [side for side in sides if side.alive]
        with LoadWatch([side.worker.proc.pid for side in sides]) as watch:
            spans = _turns(session, sides, rng, left, watch)
        busy = {turn: watch.busy(*span) for turn, span in spans.items()}
        # Ends that measure nothing of the machine's (a peak of the worker's own memory, or
        # nothing) overlap; one that reads an energy counter runs alone.
        together = [side for side in sides if side.alive and not side.ends_alone]
        for side in together:
            side.worker.resume()
            side.worker.send(FINISH.to_json())
        for side in together:
            _finish(session, side, left, busy, sent=True)
        for side in sides:
            if side.ends_alone:
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
        ending = [side for side in every
                  if not (side.finished and not side.extra and keep is not None and keep(side.worker))]
        end_together([side.worker for side in ending])
    return left


def _start(session: RunHandle, config: Config, cells: list[Cell], start: StartWorker, timeout: float,
           startup_timeout: float, extra: bool = False, retry: bool = False) -> _Side:
    """Start ``config``'s worker; it imports its library, says it is ready and waits."""
    worker, listener, remaining = start(config, cells)
    messages = worker.messages(timeout, startup_timeout=startup_timeout, stop=session.stop_requested)
    # Its job's cells (a worker started early may have more than it measures: ``remaining``).
    return _Side(config, list(worker.cells), worker, listener, messages, remaining, extra=extra, timeout=timeout,
                 retry=retry)


def _until(session: RunHandle, side: _Side, kind: type, left: dict[Config, list[Cell]]) -> bool:
    """Act on a worker's messages until one of ``kind``; False (the worker ended, its cells
    answered or handed back) where it never came."""
    try:
        for msg in side.messages:
            if isinstance(msg, Ready):
                side.ends_alone = msg.ends_alone
                side.listener.handle(msg)
            if isinstance(msg, kind):
                return True
            if not isinstance(msg, Ready) and side.listener.handle(msg):
                side.alive = False
                side.remaining.clear()  # unavailable: the listener said so to the run
                return False
        _hand_back(side, left)  # done without preparing: whatever is left is measured alone
    except (WorkerTimeout, WorkerExited) as exc:
        _failed(session, side, exc, cell=None, left=left)
    side.alive = False
    return False


#: The span of ``time.monotonic`` of each turn, by (id of its side, the cell's index, round).
Spans = dict[tuple[int, int, int], tuple[float, float]]


def _turns(session: RunHandle, sides: list[_Side], rng: random.Random, left: dict[Config, list[Cell]],
           watch: LoadWatch) -> Spans:
    """Hand turns until every cell has finished sampling: case by case, every cell of a case one
    sample a round, in a shuffled order. A cell whose own sampling is complete goes on taking
    turns while another cell of its case samples: every round of a case pairs all of its cells;
    and, where other processes loaded the machine in all but one or two of the case's rounds
    while it rested in some, for longer (``analysis/policy``). Returns each turn's span."""
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
                    # Done, then not: a turn after its own rule had ended found its calls far
                    # faster than calibrated, and its batch grew (``Sampling._regrow``), the
                    # samples before taken back as warm-up. It samples by its own rule again:
                    # left to end with the rounds it pairs on for, it kept none.
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


def _finish(session: RunHandle, side: _Side, left: dict[Config, list[Cell]], busy: dict[tuple[int, int, int], bool],
            sent: bool = False) -> None:
    """End the turns of one worker: it finishes every cell and sends its replicates (``sent``:
    it was told to already), each with the rounds whose turn ``busy`` says other processes
    loaded the machine in (a pair leaves out a round where either side's turn was busy)."""
    if not side.alive:
        return
    if not sent:
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
        position = exc.cell if isinstance(exc, WorkerTimeout) else side.worker.current_cell()
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
        try:
            for msg in side.worker.messages(grace, deadline=deadline, stop=session.stop_now):
                side.listener.handle(msg)
        except (StopRequested, WorkerTimeout, WorkerExited):
            pass
    side.worker.kill()


def end_together(workers: list[WorkerProcess]) -> None:
    """End ``workers`` (their stdin closed), all at once so that their exits, seconds of a
    library's teardown each, overlap; return once every one is closed."""
    for worker in workers:
        worker.let_go()
    for worker in workers:
        worker.close()
