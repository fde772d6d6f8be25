"""Workloads that fail for real, for the fault tests: a user workload file (``--workload-file``).

Each misbehaves only under NumPy (``xp is np``; ``namespace="native"`` hands the library's own
module), so that other libraries in the same run measure it normally. The ``*_sampling`` variants
misbehave only once the timer is sampling (the worker's ``_take_turns`` is on the stack), that is
after the first call, the warm-up, the calibration and the correctness check have all passed.

The reference of every workload is ``x * 2.0``; the well-behaved ones compute just that.
The test copies this file into a temporary folder; files it writes go next to the copy.

A worker (not the parent, which imports this file to plan) kills itself with SIGKILL while it
starts, as it imports this file, when ``kill_worker_at_start`` exists next to the copy.
"""

import ctypes
import os
import signal
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import arraybench

HERE = Path(__file__).resolve().parent
SIZES = {"small": 64}

if (HERE / "kill_worker_at_start").exists() and sys.modules["__main__"].__spec__ is not None \
        and sys.modules["__main__"].__spec__.name == "arraybench.worker.__main__":
    os.kill(os.getpid(), signal.SIGKILL)  # dies before it has said it is ready


def _inputs(n, rng):
    return rng.standard_normal(n)


def _sampling() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_take_turns":
            return True
        frame = frame.f_back
    return False


def _define(fn):
    # An explicit reference: the default would run the workload itself under NumPy, in every
    # library's worker, and so misbehave there too.
    return arraybench.workload(sizes=SIZES, inputs=_inputs, namespace="native",
                               reference=lambda x: x * 2.0)(fn)


# -- crashes ---------------------------------------------------------------------------------------
@_define
def segv_first(xp, x):
    if xp is np:
        ctypes.string_at(0)  # reads address 0: SIGSEGV in the first call
    return x * 2.0


@_define
def segv_sampling(xp, x):
    if xp is np and _sampling():
        os.kill(os.getpid(), signal.SIGSEGV)
    return x * 2.0


@_define
def exit3(xp, x):
    if xp is np:
        os._exit(3)
    return x * 2.0


@_define
def sigkill(xp, x):
    if xp is np:
        os.kill(os.getpid(), signal.SIGKILL)
    return x * 2.0


# -- hangs -----------------------------------------------------------------------------------------
def _hang(tag: str) -> None:
    (HERE / f"hang_{tag}.txt").write_text("".join(traceback.format_stack()))
    while True:
        time.sleep(3600)


@_define
def hang_first(xp, x):
    if xp is np:
        _hang("first")
    return x * 2.0


@_define
def hang_sampling(xp, x):
    if xp is np and _sampling():
        _hang("sampling")
    return x * 2.0


# -- out of memory ---------------------------------------------------------------------------------
@_define
def oom(xp, x):
    """Asks every library for 10**15 elements (8 PB in float64)."""
    return xp.empty(10**15)


@_define
def oom_sampling(xp, x):
    if xp is np and _sampling():
        return np.empty(10**15)
    return x * 2.0


# -- stray processes, full disks, errors ---------------------------------------------------------
@_define
def forks(xp, x):
    """Under NumPy, once per worker: forks a child that keeps the worker's pipe open, and starts
    a helper with subprocess; both sleep for ten minutes. Their pids go to ``stray_pids.txt``."""
    mark = HERE / f"forked_{os.getpid()}"
    if xp is np and not mark.exists():
        mark.write_text("")
        child = os.fork()
        if child == 0:
            time.sleep(600)
            os._exit(0)
        import subprocess

        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(HERE / "stray_pids.txt", "a") as f:
            f.write(f"{child}\n{helper.pid}\n")
    return x * 2.0


def _fill(folder: str) -> None:
    if os.environ.get("FAULT_FILL_KIND") == "inodes":  # every inode: no new file, but appends go on
        i = 0
        try:
            while True:
                open(os.path.join(folder, f"filler-{i}"), "x").close()
                i += 1
        except OSError:
            return
    fd = os.open(os.path.join(folder, "filler"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass  # full
    finally:
        os.close(fd)


@_define
def fill_disk(xp, x):
    """Under NumPy, in the second worker process to call it, fills the file system of the folder
    named by ``$FAULT_FILL`` (a small tmpfs) with ``filler``, once: what that worker measured can
    then not be journalled. With ``$FAULT_FILL_KIND=inodes`` it takes every inode instead: the
    journal still grows, but no new file (results.json, the report) can be made."""
    target = os.environ.get("FAULT_FILL")
    if xp is np and target and not (HERE / "filled").exists():
        mine = HERE / f"fill_seen_{os.getpid()}"
        if not mine.exists():
            mine.write_text("")
        if any(p != mine for p in HERE.glob("fill_seen_*")):
            _fill(target)
            (HERE / "filled").write_text("")
    return x * 2.0


@_define
def always_raises(xp, x):
    """Fails in every library: no result at this size is valid."""
    raise RuntimeError("this workload always fails")


# -- well-behaved ----------------------------------------------------------------------------------
@_define
def ok_a(xp, x):
    return x * 2.0


@_define
def ok_b(xp, x):
    return x + x  # == x * 2.0, exactly


_calls = {"bimodal": 0, "sampled": 0}


@_define
def bimodal(xp, x):
    """Calls take 11 ms and 40 ms in turn: one call a sample (the warm-up ends on a fast call,
    longer than a sample's 5 ms and than the 10 ms under which a call is re-warmed, which would
    make every sample the same kind), so the CI of the median always spans both, sampling never
    converges and lasts the whole budget. Writes ``bimodal_calls.txt`` after 60 calls while
    sampling. Touch ``calm`` next to this file to make it a steady 1 ms."""
    _calls["bimodal"] += 1
    if _sampling():
        _calls["sampled"] += 1
        if _calls["sampled"] == 60:
            (HERE / "bimodal_calls.txt").write_text("60")
    calm = (HERE / "calm").exists()
    time.sleep(0.001 if calm else 0.011 if _calls["bimodal"] % 2 else 0.04)
    return x * 2.0
