"""Workloads whose usage is known in advance, for the counter and replication tests (a user
workload file, ``--workload-file``). Each computes ``x * 2.0``, its reference.

- ``fault_pages``: maps 8 MiB of fresh anonymous memory per call and touches every page, so the
  kernel must supply (and zero) 2,048 pages per call, whatever the allocator does.
- ``two_threads``: two threads hash 4 MiB twice each, at once; hashlib releases the GIL on large
  inputs, so the two really run in parallel; ``one_thread`` does one thread's half of that.
- ``sleeps``: sleeps 4 ms per call: one voluntary context switch per call at least.
- ``process_effect``: sleeps 4 ms, or 20 ms in every other process that imports this file (a
  count kept next to it): the processes disagree for their whole life, so the interval between
  them stays wide however many there are.
"""

import fcntl
import hashlib
import mmap
import os
import threading
import time
from pathlib import Path

import arraybench

MIB = 1 << 20
PAGE = mmap.PAGESIZE
SIZES = {"small": 64}
_DATA = os.urandom(4 * MIB)


def _process_number() -> int:
    """How many processes imported this file before this one (a locked count next to it)."""
    path = Path(__file__).with_name("imports.count")
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        count = int(f.read() or 0)
        f.seek(0)
        f.truncate()
        f.write(str(count + 1))
    return count


_SLOW = _process_number() % 2 == 1


def _define(fn):
    return arraybench.workload(sizes=SIZES, namespace="native", reference=lambda x: x * 2.0,
                               backends=("numpy",))(fn)


@_define
def fault_pages(xp, x):
    m = mmap.mmap(-1, 8 * MIB)
    for offset in range(0, 8 * MIB, PAGE):
        m[offset] = 1
    m.close()
    return x * 2.0


def _hash_loop(rounds: int) -> None:
    for _ in range(rounds):
        hashlib.sha256(_DATA).digest()


@_define
def two_threads(xp, x):
    threads = [threading.Thread(target=_hash_loop, args=(2,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return x * 2.0


@_define
def one_thread(xp, x):
    """As ``two_threads`` with one of the two threads: half its CPU time per call."""
    thread = threading.Thread(target=_hash_loop, args=(2,))
    thread.start()
    thread.join()
    return x * 2.0


@_define
def sleeps(xp, x):
    time.sleep(0.004)
    return x * 2.0


@_define
def process_effect(xp, x):
    time.sleep(0.020 if _SLOW else 0.004)
    return x * 2.0
