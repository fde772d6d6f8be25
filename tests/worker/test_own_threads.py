"""A worker's own threads: a pool left spinning by another operation is let settle before a threaded
cell's turn, and a cell's pool is the threads that ran beside its calls."""

from __future__ import annotations

import hashlib
import os
import threading
import time

import numpy as np
import pytest

from arraybench.host.cpu_time import OwnThreads
from arraybench.worker.sampling import TimerSettings
from arraybench.worker.timer import Timer

pytestmark = pytest.mark.skipif(not os.path.exists(f"/proc/self/task/{threading.get_native_id()}/schedstat"),
                                reason="no /proc/self/task/*/schedstat on this system")

_DATA = b"x" * (64 << 20)  # hashed without the GIL: a thread that runs in C, as a BLAS pool does


def _spin(seconds: float, tids: list[str], stop: threading.Event | None = None) -> None:
    tids.append(str(threading.get_native_id()))
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (stop and stop.is_set()):
        hashlib.sha256(_DATA).digest()


def _spinning(seconds: float, stop: threading.Event | None = None) -> tuple[threading.Thread, str]:
    tids: list[str] = []
    thread = threading.Thread(target=_spin, args=(seconds, tids, stop), daemon=True)
    thread.start()
    while not tids:
        time.sleep(0.001)
    return thread, tids[0]


def test_settle_waits_for_another_thread_still_running_and_not_for_the_calls_own_pool():
    threads, stop = OwnThreads(), threading.Event()
    spinner, tid = _spinning(60, stop)
    assert tid in threads.running()
    threads.settle(own={tid}, most_s=5.0)  # the pool of the calls to come: not waited for
    assert spinner.is_alive() and tid not in threads.always_busy
    stop.set()  # it ends after its current hash, which the wait must outlast
    threads.settle(most_s=5.0)
    assert not spinner.is_alive() and tid not in threads.running() | threads.always_busy


def test_a_thread_that_never_stops_is_waited_for_once_then_taken_for_always_busy():
    threads, stop = OwnThreads(), threading.Event()
    spinner, tid = _spinning(60, stop)
    try:
        assert threads.settle(most_s=0.1) >= 0.1
        assert tid in threads.always_busy
        assert tid not in threads.running()  # the next wait passes it over
    finally:
        stop.set()
        spinner.join()


def _timer_pool(call) -> frozenset[str]:
    timer = Timer(call, ())
    return timer.start(TimerSettings(min_samples=3, budget_s=0.05, warmup_s=0.05)).pool


def test_a_cells_pool_is_the_threads_that_ran_beside_its_calls():
    a = np.arange(100_000.0)
    assert _timer_pool(lambda: a * 2.0 + 1.0) == frozenset()  # one thread: its turns wait for nobody

    helper: list[str] = []
    work = threading.Event()
    done = threading.Event()

    def pool_thread() -> None:
        helper.append(str(threading.get_native_id()))
        while True:
            work.wait()
            work.clear()
            hashlib.sha256(_DATA).digest()
            done.set()

    threading.Thread(target=pool_thread, daemon=True).start()

    def threaded_call():
        done.clear()
        work.set()
        hashlib.sha256(_DATA).digest()  # the caller's share, beside the helper's
        done.wait()

    pool = _timer_pool(threaded_call)
    assert helper[0] in pool
