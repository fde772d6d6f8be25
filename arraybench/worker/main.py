"""The worker process: one library, one device, a list of cells; records stream back as JSON lines.

Started by the runner as ``python -m arraybench.worker`` with the job on stdin. The protocol runs on
a private copy of the original stdout; the process's own stdout is pointed at stderr, so a library
that prints cannot corrupt it. Messages, one JSON object per line:

- ``{"event": "ready", "info": {...}}`` once the library is imported and the device open;
- ``{"event": "unavailable", "reason": "..."}`` instead, when it cannot be (then the worker exits);
- ``{"event": "start", "key": ...}`` before each cell, so a crash or hang can be pinned on it;
- ``{"event": "replicate", "key": ..., "replicate": {...}}`` after each cell (a ``Replicate``);
- ``{"event": "done"}`` at the end (``"stopped": true`` when asked to stop early).

SIGTERM (or SIGINT) asks the worker to stop: it finishes the sample under way, sends the replicates
of the cells whose sampling is complete, drops the ones still sampling (a resumed run measures them
again, in full) and says ``done``. A crash writes the Python stack to stderr (``faulthandler``), so
the parent can say on which line of a workload a segfault happened.
"""

from __future__ import annotations

import faulthandler
import json
import os
import random
import signal
import sys
import time
from typing import Any, TextIO


#: Cells are sampled round-robin in batches whose inputs fit in this many bytes.
INTERLEAVE_BYTES = 1 << 30


def _open_channel() -> TextIO:
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "w", buffering=1, encoding="utf-8")


class Channel:
    """The worker's side of the protocol."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def send(self, event: str, **payload: Any) -> None:
        self.stream.write(json.dumps({"event": event, **payload}) + "\n")
        self.stream.flush()


class _Stop(BaseException):
    """Raised between samples once the parent asked to stop; a BaseException so that no
    ``except Exception`` on the way (the timer's own) can swallow it."""


class StopFlag:
    """Set by SIGTERM or SIGINT; checked between samples and between cells, never mid-sample."""

    def __init__(self) -> None:
        self.set = False

    def install(self) -> None:
        for s in (signal.SIGTERM, signal.SIGINT):
            signal.signal(s, self._on_signal)

    def _on_signal(self, _signum: int, _frame: Any) -> None:
        self.set = True

    def check(self) -> None:
        if self.set:
            raise _Stop()


def run_job(job: dict[str, Any], channel: Channel, stop: StopFlag | None = None) -> int:
    """Open the backend, then measure each cell in a shuffled order."""
    stop = stop or StopFlag()
    from .. import backends
    from ..backends.base import Unavailable

    started = time.perf_counter()
    try:
        cls = backends.load(job["backend"])
        backend = cls(job["device"], allow_tf32=bool(job.get("allow_tf32")))
    except Unavailable as exc:
        channel.send("unavailable", reason=str(exc))
        return 0
    except ImportError as exc:
        channel.send("unavailable", reason=f"cannot import {job['backend']}: {exc}")
        return 0
    except Exception as exc:  # a broken install must not look like a crash of the benchmark
        from .tracebacks import describe_exception

        channel.send("unavailable", reason=f"{job['backend']} failed to start: {describe_exception(exc)}")
        return 0
    if job.get("threads") is not None:
        backend.limit_threads(int(job["threads"]))

    from .counters import SampleCounters
    from .heartbeat import Board
    from .prepare import ReferenceCache, finish, prepare
    from ..model.replicate import Replicate
    from ..plan import Cell
    from .sampling import TimerSettings, interleave
    from .tracebacks import describe_exception
    from ..workloads import REGISTRY
    from ..workloads.shipping import ShippingError, receive
    from ..workloads.userfile import load_workload_files, missing_workload_reason

    load_errors = load_workload_files(job.get("workload_files", []))
    if job.get("shipped"):
        try:
            receive(job["shipped"])
        except ShippingError as exc:
            load_errors[job["shipped"]] = str(exc)
    info = backend.info()
    info["startup_s"] = time.perf_counter() - started
    from ..host.knobs import recorded

    info["kernel_env"] = recorded(os.environ)  # as this worker ran (--threads adds limits)
    channel.send("ready", info=info, pid=os.getpid())

    board = Board(job.get("board"))
    settings = TimerSettings(**job["timer"])
    flush = backend.flush_cache() if settings.cold else None
    references = ReferenceCache()
    cells = [Cell.from_dict(c) for c in job["cells"]]
    order = list(range(len(cells)))
    shuffler = random.Random(job.get("shuffle_seed", 0))
    shuffler.shuffle(order)
    batch: list = []
    batch_bytes = 0
    # Counted around each sample, attributed to the cell sampled (issue 11: the reason behind a time).
    counters = SampleCounters(len(cells))
    runs: list = []

    def before_sample(k: int) -> None:
        stop.check()
        board.mark(indices[k])
        counters.begin(indices[k])

    def after_sample(k: int) -> None:
        counters.end(indices[k], runs[k].calls_last)

    indices: list[int] = []

    def flush_batch() -> None:
        nonlocal batch, batch_bytes, indices, runs
        runs = [p.run for _, p in batch if p.run is not None]
        indices = [i for i, p in batch if p.run is not None]
        try:
            interleave(runs, order_seed=shuffler.randrange(2**32), before_sample=before_sample,
                       after_sample=after_sample)
        except _Stop:
            pass
        for i, p in batch:
            if stop.set and p.run is not None and not p.run.done:
                continue  # partly sampled: not a measurement with the run's settings
            board.mark(i)
            replicate = finish(backend, p)
            replicate.usage = counters.usage(i)
            channel.send("replicate", key=cells[i].key, replicate=replicate.to_dict())
        batch, batch_bytes = [], 0
        backend.free()

    for i in order:
        if stop.set:
            break
        cell = cells[i]
        board.mark(i)
        channel.send("start", key=cell.key)
        wl = REGISTRY.get(cell.workload)
        if wl is None:
            reason = missing_workload_reason(cell.workload, load_errors)
            channel.send("replicate", key=cell.key, replicate=Replicate.ended("failed", reason).to_dict())
            continue
        try:
            p = prepare(backend, wl, cell, settings, references,
                        seed=int(job.get("seed", 0)), flush=flush)
        except Exception as exc:  # prepare reports its own errors; this is a last resort
            channel.send("replicate", key=cell.key,
                         replicate=Replicate.ended("failed", describe_exception(exc)).to_dict())
            continue
        if p.run is None:
            channel.send("replicate", key=cell.key, replicate=p.replicate.to_dict())
            continue
        batch.append((i, p))
        batch_bytes += p.input_bytes
        if batch_bytes >= INTERLEAVE_BYTES or not job.get("interleave", True):
            flush_batch()
    if batch:
        flush_batch()
    counters.close()
    channel.send("done", stopped=stop.set)
    return 0


def main() -> int:
    stop = StopFlag()
    stop.install()
    faulthandler.enable(file=sys.stderr, all_threads=False)
    channel = Channel(_open_channel())
    line = sys.stdin.readline()
    if not line:
        return 2
    job = json.loads(line)
    return run_job(job, channel, stop)


if __name__ == "__main__":
    sys.exit(main())
