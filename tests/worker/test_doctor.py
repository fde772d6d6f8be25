"""``arraybench doctor``: its CPU checks for real, and each check's verdict on a library that breaks
the assumption it guards (fakes standing for GPU libraries, each saying which behaviour it stands for).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pytest

from arraybench.worker import selfcheck
from arraybench.backends.numpy import NumpyBackend

from ..conftest import ROOT, run_here
from .test_gpu import FakeNvml, Tf32Numpy, WatchedNumpy

# -- the command, for real --------------------------------------------------------------------------


def _logical(stdout: str) -> list[str]:
    """The doctor's lines as it means them: a check's wrapped detail joined back to its line,
    once every printed line is seen to fit 80 columns (a pipe's width) without a split word."""
    printed = stdout.strip().splitlines()
    assert all(len(x) <= 80 or " " not in x.strip() for x in printed), max(printed, key=len)
    out: list[str] = []
    for x in printed:
        if x.startswith(" ") and out:
            out[-1] += " " + x.strip()
        else:
            out.append(x)
    return out


def _passed_or_busy(line: str) -> bool:
    return line.startswith("passed") or line.startswith("skipped") and "; busy, not judged: other " in line


@pytest.mark.slow
def test_doctor_runs_the_cpu_checks_and_says_why_the_gpu_ones_are_skipped():
    result = run_here("doctor", "--backends", "numpy,jax", cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = _logical(result.stdout)
    assert lines[0].startswith("arraybench doctor") and "GPUs:" in lines[0]
    assert lines[-1].endswith(" s") and " 0 failed" in lines[-1]
    by_check = {tuple(line.split()[1:4]): line for line in lines[1:-1]}
    # JAX dispatches asynchronously even on the CPU: the wait must cover the work, and a timing
    # without it must be far below the work. Timings others' load pushed apart are not judged.
    for check in ("sync", "unsynced"):
        assert _passed_or_busy(by_check[("jax", "cpu", check)])
    unsynced = by_check[("jax", "cpu", "unsynced")]
    assert unsynced.startswith("skipped") or "the sync check flags it" in unsynced
    assert _passed_or_busy(by_check[("numpy", "cpu", "sync")])
    for backend in ("numpy", "jax"):
        assert by_check[(backend, "cpu", "float64")].startswith("passed")
        assert "are caught" in by_check[(backend, "cpu", "float64")]
        assert by_check[(backend, "cpu", "precision")].startswith("passed")
        assert "float32, the run records float32" in by_check[(backend, "cpu", "precision")]
        # arraybench's timer against the library's own (pass/fail: test_doctor_harness.py)
        assert "alternating rounds" in by_check[(backend, "cpu", "harness")]
    # NumPy's compiler, checked in NumPy's worker alone (tests/worker/test_doctor_numba.py: without it)
    assert ("jax", "cpu", "numba") not in by_check
    if importlib.util.find_spec("numba") is not None:
        numba = by_check[("numpy", "cpu", "numba")]
        assert numba.startswith("passed") and "numba.njit of sin(a) * b + a.sum()" in numba
        assert "against NumPy" in numba and "threading layer" in numba
    gpu = by_check.get(("jax", "gpu", "all"))
    if gpu is not None:  # no GPU here: one line, with the reason and the checks not run
        assert gpu.startswith("skipped") and "not run: sync, unsynced, events" in gpu


def test_a_library_that_does_not_finish_is_a_failed_line_and_status_1():
    result = run_here("doctor", "--backends", "jax", "--devices", "cpu", "--timeout", "0.01", cwd=ROOT)
    assert result.returncode == 1
    (line,) = [x for x in _logical(result.stdout) if x.startswith("failed")]
    assert "jax cpu" in line and "did not finish within 0.01 s; not run: sync, unsynced" in line


@pytest.mark.parametrize("args, message", [
    (["--backends", "numpy,tpu"], "unknown backend 'tpu'"),
    (["--devices", "tpu"], "unknown device 'tpu'"),
    (["--backends", "numpy", "--devices", "gpu"], "nothing to check"),
    (["--backends", ","], "no backend selected"),
    (["--timeout", "0"], "must be a positive number"),
])
def test_doctor_bad_input_is_one_line_and_status_2(args, message):
    result = run_here("doctor", *args, cwd=ROOT)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


# -- each check against a library that breaks what it checks ----------------------------------------

class _Pending:
    """Stands for a GPU array whose kernel is still running: a CUDA launch returns at once and the
    work proceeds on the device; reading a value on the host (``to_numpy``) waits for it."""

    def __init__(self, future: Future) -> None:
        self.future = future

    def __getitem__(self, key):
        return _Pending(_done(self.future.result()[key]))


def _done(value) -> Future:
    f: Future = Future()
    f.set_result(value)
    return f


#: Kernels a fake device holds launched but not finished. A CUDA stream's launch queue is bounded
#: too (a launch blocks while it is full); unbounded, a wait that does not wait lets the timer
#: queue thousands of 20 ms kernels, and reading a value on the host waits minutes behind them.
QUEUE_DEPTH = 4


class _Device:
    """Stands for a device array: ``@`` launches a kernel of at least 20 ms and returns at once
    (unless ``QUEUE_DEPTH`` kernels are already pending: then it waits for a place, as CUDA does)."""

    def __init__(self, pool: ThreadPoolExecutor, queue: threading.Semaphore, value: np.ndarray) -> None:
        self.pool, self.queue, self.value = pool, queue, value
        self.products: dict[_Device, np.ndarray] = {}

    def __matmul__(self, other: "_Device") -> _Pending:
        def kernel():
            try:
                time.sleep(0.02)
                return self.product(other)
            finally:
                self.queue.release()

        self.queue.acquire()
        return _Pending(self.pool.submit(kernel))

    def product(self, other: "_Device") -> np.ndarray:
        # Once: a device's kernel does not take the host's cores, and on a shared machine a real
        # product per call would make its time the host's, not the 20 ms the fake stands for.
        if other not in self.products:
            self.products[other] = self.value @ other.value
        return self.products[other]


class AsyncNumpy(NumpyBackend):
    """Stands for an asynchronous GPU library (torch or CuPy on CUDA, JAX anywhere); ``waits``
    says whether its sync really waits (``torch.cuda.synchronize``) or returns at once (the bug
    the sync check exists for)."""

    def __init__(self, pool: ThreadPoolExecutor, waits: bool) -> None:
        super().__init__("cpu")
        self.pool = pool
        self.queue = threading.BoundedSemaphore(QUEUE_DEPTH)
        self.sync = (lambda r: r.future.result()) if waits else (lambda r: None)

    def asarray(self, host):
        return _Device(self.pool, self.queue, np.asarray(host))

    def to_numpy(self, x):
        return x.future.result()


@pytest.fixture
def pool():
    with ThreadPoolExecutor(4) as p:
        yield p
        p.shutdown(wait=False, cancel_futures=True)


@pytest.mark.slow
def test_the_sync_check_fails_a_library_whose_wait_does_not_wait(pool, monkeypatch):
    assert selfcheck.check_sync(AsyncNumpy(pool, waits=True)).status == "passed"
    # A call per sample: launches that return at once while the fake's queue has room calibrate a
    # batch of hundreds of calls, each of which then waits for a place in the queue (5-30 s of
    # sleeping per run); one call per sample times the same unwaited launch (microseconds, at most
    # the queue's 5 ms a place) against the same 20 ms to a value on the host.
    monkeypatch.setattr(selfcheck, "_QUICK", dataclasses.replace(selfcheck._QUICK, target_sample_s=0.0))
    broken = selfcheck.check_sync(AsyncNumpy(pool, waits=False))
    assert broken.status == "failed", broken.detail


def test_a_missing_wait_on_an_asynchronous_library_would_be_caught(pool):
    outcome = selfcheck.check_unsynced(AsyncNumpy(pool, waits=True))
    assert outcome.status == "passed" and "flags it" in outcome.detail


def test_the_sync_check_fails_a_synchronous_claim_that_is_false(pool):
    backend = AsyncNumpy(pool, waits=True)
    backend.sync = None  # claims to compute synchronously, as NumPy does; it does not
    outcome = selfcheck.check_sync(backend)
    assert outcome.status == "failed" and "arraybench does not wait" in outcome.detail


class Float64InFloat32(NumpyBackend):
    """Stands for a library that silently computes float64 in float32 (JAX with x64 off does:
    ``jnp.asarray`` of float64 data gives float32) while saying the result is float64."""

    def asarray(self, host):
        return host.astype(np.float32).astype(host.dtype)


def test_the_float64_check_fails_a_library_that_computes_float64_in_float32():
    assert selfcheck.check_float64(NumpyBackend("cpu")).status == "passed"
    outcome = selfcheck.check_float64(Float64InFloat32("cpu"))
    assert outcome.status == "failed", outcome.detail


@pytest.mark.parametrize("reports, status", [(None, "failed"), ("tf32", "passed")])
def test_the_precision_check_compares_the_arithmetic_with_what_is_recorded(reports, status):
    outcome = selfcheck.check_precision(Tf32Numpy(reports))
    assert outcome.status == status, outcome.detail
    assert "tf32, the run records" in outcome.detail


class CachedReadBack(NumpyBackend):
    """Stands for a library whose device-to-host copy is made once and then looked up (a
    ``jax.Array``'s ``_npy_value`` before the fix): every read-back returns the same buffer."""

    def __init__(self) -> None:
        super().__init__("cpu")
        self.device = "gpu"
        self._cache: dict[int, np.ndarray] = {}

    def to_numpy(self, x):
        return self._cache.setdefault(id(x), np.array(x))


class CopyingNumpy(NumpyBackend):
    """A library whose transfers copy every time (torch's ``.cpu()``, CuPy's ``.get()``)."""

    def from_numpy(self, host):
        return np.array(host)

    def to_numpy(self, x):
        return np.array(x)


@pytest.mark.slow
def test_the_transfer_check_fails_a_cached_read_back():
    assert selfcheck.check_transfers(CopyingNumpy("cpu")).status == "passed"
    outcome = selfcheck.check_transfers(CachedReadBack())
    assert outcome.status == "failed" and "a cached copy" in outcome.detail


def test_the_clock_check_reports_throttling_with_its_reason():
    nvml = FakeNvml()
    assert selfcheck.check_clocks(WatchedNumpy(nvml), n=64).status == "passed"
    nvml.reasons = 0x40  # HW thermal slowdown
    outcome = selfcheck.check_clocks(WatchedNumpy(nvml), n=64)
    assert outcome.status == "failed" and "HW thermal slowdown" in outcome.detail
    backend = NumpyBackend("cpu")
    backend.health_note = "nvidia-ml-py is not installed"
    assert selfcheck.check_clocks(backend) == selfcheck.CheckDone("clocks", "skipped",
                                                                "nvidia-ml-py is not installed")


def test_a_check_that_raises_is_a_failure_with_its_reason():
    class Broken(NumpyBackend):
        def asarray(self, host):
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    outcomes = list(selfcheck.run_checks(Broken("cpu"), ("sync", "events")))
    assert [o.check for o in outcomes] == ["sync"]  # events is a GPU check: not run on the CPU
    assert outcomes[0].status == "failed" and "illegal memory access" in outcomes[0].detail


def test_a_checkout_run_without_installing_names_its_own_version(monkeypatch):
    """The GPU acceptance runs the checkout from PYTHONPATH on a machine without network, where no
    distribution metadata exists; the doctor's first line said "arraybench doctor unknown"."""
    import importlib.metadata
    import tomllib
    from pathlib import Path

    from arraybench.host import machine

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    assert machine.arraybench_version() == f"{project['version']}+checkout"
