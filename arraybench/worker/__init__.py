"""Everything that runs in a worker process (``python -m arraybench.worker``): one library, one
device, a typed job in, messages out; the parent reads only ``protocol``'s messages and board."""

import contextlib
import os
import signal
import sys

#: How a worker learns what to do before anything else (``settle``): its CPUs, its parent's pid.
WORKER_CPUS, WORKER_PARENT = "ARRAYBENCH_WORKER_CPUS", "ARRAYBENCH_WORKER_PARENT"


def pin() -> None:
    """A worker's first act, before any library starts its threads: its CPU affinity, which threads
    created later inherit. Lives here, where importing it loads no library."""
    cpus = os.environ.pop(WORKER_CPUS, None)
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


def settle() -> None:
    """Dying with its parent; the variable that said who it is is removed."""
    parent = os.environ.pop(WORKER_PARENT, None)
    if parent and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != int(parent):  # the parent died before the line above took effect
            os._exit(1)
