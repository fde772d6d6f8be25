"""The checks behind ``arraybench doctor``, run in a worker whose job's task is ``selfcheck``.

Each check measures with arraybench's own ``Timer`` and judges with its own ``accuracy``, then
states what it found in numbers, so a failure says which assumption of a run does not hold here.
"""

from __future__ import annotations

import math
import os
from typing import Any, Iterator

import numpy as np

from ..workloads.check import REDUCED_PRECISION_EPS, Check
from .accuracy import judge
from .counters import SampleCounters
from ..backends.base import Backend
from .protocol import CHECKS, CheckDone, check_applies
from ..model.replicate import TimerSettings
from .timer import Timer
from ..units import format_seconds

#: A synced time below this share of the time to a value on the host did not wait for the work:
#: dispatch is 30x to 1000x faster than the work; noise moves a synchronous library's far less than 2x.
COVERS = 0.5
#: Faster than this is no transfer between host and device that exists today (NVLink-C2C: ~0.9 TB/s).
MAX_LINK_BYTES_S = 2e12

_QUICK = TimerSettings(min_samples=5, max_samples=50, budget_s=0.3, warmup_s=0.02)
#: The matmul workload's check: what a float32 result is judged by.
MATMUL_CHECK = Check.normwise(growth=lambda n: n ** 0.5, ulps=16, matmul=True)


class Matmul:
    """A square matmul on the backend's device: the work every timing check leans on."""

    def __init__(self, backend: Backend, n: int, dtype: str, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.backend = backend
        self.n = n
        self.host = tuple(rng.standard_normal((n, n)).astype(dtype) for _ in range(2))
        self.a, self.b = (backend.asarray(h) for h in self.host)

    def __call__(self) -> Any:
        return self.a @ self.b

    def launch_and_complete_s(self, repeats: int = 9) -> tuple[float, float]:
        """Median seconds of (the dispatch alone, the device idle before it; a call and one of its
        values read on the host), taken in turns so that a noisy neighbour slows both alike."""
        launches, completes = [], []
        for _ in range(repeats):
            t, result = Timer(self).first_call()
            if self.backend.sync is not None:
                self.backend.sync(result)
            launches.append(t)
            completes.append(Timer(lambda: self.backend.to_numpy(self()[0:1, 0:1])).first_call()[0])
        return float(np.median(launches)), float(np.median(completes))


def _size(backend: Backend) -> int:
    return 4096 if backend.device != "cpu" else 384


def check_sync(backend: Backend) -> CheckDone:
    """Waiting for the device covers its work (or the library is synchronous, as recorded)."""
    mm = Matmul(backend, _size(backend), "float32" if backend.device != "cpu" else "float64")
    if backend.sync is None:
        # Each call paired with the read of its value right after it: two separate timings failed
        # synchronous PyTorch and NumPy while the BLAS's threads fought for cores.
        pairs = []
        for _ in range(15):
            t, result = Timer(mm).first_call()
            pairs.append((t, Timer(lambda: backend.to_numpy(result[0:1, 0:1])).first_call()[0]))
        launch, after = (float(m) for m in np.median(pairs, axis=0))
        ok = after <= COVERS * launch
        detail = (f"synchronous: a {mm.n}² matmul call returns in {format_seconds(launch)}, its value "
                  f"is on the host {format_seconds(after)} later")
        if not ok:
            detail += "; the call returns before its work is done, and arraybench does not wait for it"
        return CheckDone("sync", "passed" if ok else "failed", detail)
    launch, _ = mm.launch_and_complete_s()
    # Both warm medians: a cold read can take twice a warm call once the library's threads slept.
    timed = Timer(mm, sync=backend.sync).measure(_QUICK).median_s
    complete = Timer(lambda: backend.to_numpy(mm()[0:1, 0:1])).measure(_QUICK).median_s
    ok = timed >= COVERS * complete
    return CheckDone("sync", "passed" if ok else "failed",
                   f"{mm.n}² matmul timed with the wait: {format_seconds(timed)} per call; its value on the "
                   f"host: {format_seconds(complete)}; the call alone returns in {format_seconds(launch)}")


def check_unsynced(backend: Backend) -> CheckDone:
    """A timing without the wait would have been caught: the launch alone is far below the work."""
    if backend.sync is None:
        return CheckDone("unsynced", "skipped", "synchronous library: no wait to leave out")
    dtype = "float32" if backend.device != "cpu" else "float64"
    # The launch costs the same at any size, the work grows as n³: twice the size tells them apart.
    for n in (_size(backend), 2 * _size(backend)):
        mm = Matmul(backend, n, dtype)
        launch, complete = mm.launch_and_complete_s()
        caught = launch < COVERS * complete
        if caught:
            break
    return CheckDone("unsynced", "passed" if caught else "failed",
                   f"without the wait a {mm.n}² matmul would time {format_seconds(launch)}, "
                   f"{complete / launch:.0f}x below its {format_seconds(complete)}: "
                   + ("the sync check flags it" if caught else "too close to tell a missing wait"))


def check_events(backend: Backend) -> CheckDone:
    """Device events and the wall clock agree on a call long enough to dwarf the launch."""
    events = backend.device_timer()
    if events is None:
        return CheckDone("events", "skipped", f"no device events: {backend.device_timer_note}")
    mm = Matmul(backend, _size(backend), "float32")
    m = Timer(mm, sync=backend.sync, device_timer=events).measure(_QUICK)
    if not m.device_samples_s:
        return CheckDone("events", "failed", "the device timer gave no samples")
    device = float(np.median(m.device_samples_s))
    ratio = device / m.median_s
    ok = 0.7 <= ratio <= 1.05
    return CheckDone("events", "passed" if ok else "failed",
                   f"{mm.n}² matmul: events {format_seconds(device)}, wall clock "
                   f"{format_seconds(m.median_s)} per call ({ratio:.0%})")


def check_float64(backend: Backend) -> CheckDone:
    """Results are judged against float64: a right one passes, a slightly wrong one does not."""
    n = 128
    missing = backend.unsupported_dtype("float64")
    if missing:  # Apple GPUs: the run skips float64 cells with this reason, so nothing to check
        return CheckDone("float64", "skipped", missing)
    lines, ok = [], True
    for dtype in ("float64", "float32"):
        mm = Matmul(backend, n, dtype)
        result = mm()
        out, ref = backend.to_numpy(result), np.matmul(*(h.astype(np.float64) for h in mm.host))
        v = judge(out, ref, MATMUL_CHECK, dtype, n, out_dtype=backend.dtype_name(result),
                  tolerance=MATMUL_CHECK.tolerance(dtype, n, backend.reduced_precision(dtype)))
        ok &= v.ok
        lines.append(f"{dtype} error {v.max_rel_error:.1e} (tolerance {v.tolerance:.1e})")
        if dtype == "float64":
            nudged = np.array(out, copy=True)
            nudged[0, 0] += 1e-6 * float(np.abs(out).max())
            ok &= not any(judge(wrong, ref, MATMUL_CHECK, dtype, n).ok for wrong in (nudged, out.astype(np.float32)))
    caught = "an error of 1e-6 and a float32 result in a float64 run are caught" if ok else \
        "a wrong result was not caught"
    return CheckDone("float64", "passed" if ok else "failed", f"{n}² matmul, {'; '.join(lines)}; {caught}")


def round_mantissa(a: np.ndarray, bits: int, nearest: bool = True) -> np.ndarray:
    """float32 values with only ``bits`` explicit mantissa bits (TF32: 10, bfloat16: 7), rounded to
    nearest even or truncated: what a GPU's matrix units read from float32 inputs."""
    drop = 23 - bits
    raw = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    if nearest:
        raw = raw + ((1 << (drop - 1)) - 1) + ((raw >> drop) & 1)
    return (raw & (0xFFFFFFFF ^ ((1 << drop) - 1))).astype(np.uint32).view(np.float32)


#: Explicit mantissa bits of the reduced precisions (their eps is 2^-bits).
_MANTISSA_BITS = {p: round(-math.log2(eps)) for p, eps in REDUCED_PRECISION_EPS.items()}
#: A random float32 matmul's normwise error in precision p, in p's unit roundoff, below which it is
#: put down to p by size alone: about 0.8 rounding to nearest, 2.5 truncating, the next 8x above.
_BY_SIZE_UNITS = 4.0


def which_precision(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[str, str]:
    """(the precision a float32 matmul ``out = a @ b`` ran in, how that was told): first against
    the inputs rounded as each precision would, multiplied in float64; else by the error's size."""
    n = a.shape[1]
    full = MATMUL_CHECK.tolerance("float32", n)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    error = MATMUL_CHECK.error(out, exact)
    if error <= full:
        return "float32", f"error {error:.1e} within float32's {full:.1e}"
    for p, bits in sorted(_MANTISSA_BITS.items(), key=lambda kv: -kv[1]):
        for nearest in (True, False):
            ref = (round_mantissa(a, bits, nearest).astype(np.float64)
                   @ round_mantissa(b, bits, nearest).astype(np.float64))
            if MATMUL_CHECK.error(out, ref) <= full:
                how = "rounded to nearest" if nearest else "truncated"
                return p, f"error {error:.1e}; matches float32 inputs {how} to {p}"
    for p, eps in sorted(REDUCED_PRECISION_EPS.items(), key=lambda kv: kv[1]):
        if error <= _BY_SIZE_UNITS * eps / 2:
            return p, f"error {error:.1e}, {p}'s size (no emulated reference matches)"
    return "worse", f"error {error:.1e}, worse than any precision arraybench knows"


def check_precision(backend: Backend) -> CheckDone:
    """The precision float32 matmuls really run in is the one the run records."""
    n = 1024 if backend.device != "cpu" else 256
    mm = Matmul(backend, n, "float32", seed=1)
    found, how = which_precision(backend.to_numpy(mm()), *mm.host)
    recorded = backend.reduced_precision("float32") or "float32"
    info = backend.info()
    setting = ", ".join(f"{k} {info[k]}" for k in ("matmul_precision", "allow_tf32") if k in info)
    ok = found == recorded
    return CheckDone("precision", "passed" if ok else "failed",
                   f"{n}² float32 matmul {how}: {found}, the run records {recorded}"
                   + (f" ({setting})" if setting else "")
                   + f"; float32 would stay within {MATMUL_CHECK.tolerance('float32', n):.1e}")


#: arraybench's time over the library's own tool's, for one operation: within this, the timer agrees.
HARNESS_RANGE = (0.8, 1.25)
#: One round of the harness check: ~1 ms samples and batches; rounds alternate, to share neighbours.
_HARNESS = TimerSettings(min_samples=10, max_samples=2000, budget_s=0.05, warmup_s=0.01,
                         target_sample_s=1e-3, rel_ci=1e-9)
HARNESS_ROUNDS = 7
#: The quantile compared: on a busy machine a third of 1 ms batches straddle a neighbour's time
#: slice; the lower quartile leaves those out (a minimum depends on how many batches there are).
HARNESS_QUANTILE = 0.25


def check_harness(backend: Backend) -> CheckDone:
    """arraybench's timer agrees with the library's own benchmarking tool (``library_timing``) on
    one operation, in alternating rounds, with a second try before calling it a failure. On the
    CPU a one-thread sum: a multi-threaded BLAS on a shared machine would time the neighbours."""
    if backend.device != "cpu":
        op, what = Matmul(backend, 4096, "float32", seed=3), "4096² float32 matmul"
    else:  # a.sum(): one thread in every library up to 32,768 elements, and no result array whose
        # placement could differ between two timers (an elementwise result's did, by 20%).
        op, what = backend.asarray(np.random.default_rng(0).standard_normal(1 << 15)).sum, "sum of 32,768 float64"
    timer, tries, tool = Timer(op, sync=backend.sync), [], ""
    for _ in range(2):
        rounds = []  # per round: a burst that spoils one round leaves the median of rounds alone
        for _ in range(HARNESS_ROUNDS):
            samples = timer.measure(_HARNESS).samples_s
            batches, tool = backend.library_timing(op, 0.05)
            rounds.append((float(np.quantile(samples, HARNESS_QUANTILE)),
                           float(np.quantile(batches, HARNESS_QUANTILE))))
        tries.append(rounds)
        if HARNESS_RANGE[0] <= median_round(rounds)[2] <= HARNESS_RANGE[1]:
            break
    return harness_outcome(what, tool, tries)


def median_round(rounds: list[tuple[float, float]]) -> tuple[float, float, float]:
    """The round whose ratio (arraybench's over the tool's) is the median (the lower middle of an
    even count): its two times and ratio, so the figures printed are the ones divided."""
    ranked = sorted(rounds, key=lambda r: r[0] / r[1])
    ours, theirs = ranked[(len(ranked) - 1) // 2]
    return ours, theirs, ours / theirs


def harness_outcome(what: str, tool: str, tries: list[list[tuple[float, float]]]) -> CheckDone:
    """The harness line from each try's rounds of (arraybench, tool) lower quartiles, in seconds,
    quoting the median round's own two times."""
    low, high = HARNESS_RANGE
    ours, theirs, ratio = median_round(tries[-1])
    ratios = [r[0] / r[1] for r in tries[-1]]
    ok = low <= ratio <= high
    again = f"; first try {median_round(tries[0])[2]:.2f}" if len(tries) > 1 else ""
    return CheckDone("harness", "passed" if ok else "failed",
                   f"{what}: arraybench {format_seconds(ours)}, {tool} {format_seconds(theirs)} per call "
                   f"in the median of {len(ratios)} alternating rounds (lower quartiles of ~1 ms batches; "
                   f"rounds {min(ratios):.2f}-{max(ratios):.2f}); ratio {ratio:.2f}{again}: "
                   f"{'within' if ok else 'outside'} [{low}, {high}]")


def check_memory(backend: Backend) -> CheckDone:
    """How the library holds device memory, and that arraybench's release between cells works."""
    from ..backends import gpu

    before = backend.memory_available()
    if before is None:
        return CheckDone("memory", "skipped", f"{backend.label} does not report its memory here")
    size = 256 * 1024**2
    x = backend.asarray(np.zeros(size // 8))
    held = backend.memory_available() or before
    del x
    backend.free()
    after = backend.memory_available() or before
    gib = 1024**3
    ok = held[0] <= before[0] - 0.8 * size and after[0] >= before[0] - 0.25 * size
    detail = (f"free {before[0] / gib:.2f} GiB, {held[0] / gib:.2f} with 256 MiB held, "
              f"{after[0] / gib:.2f} after release (of {before[1] / gib:.1f} GiB)")
    settings = backend.info().get("memory") or {}
    physical = gpu.total_memory(backend.cuda_ordinal) if backend.cuda_ordinal is not None else None
    if settings.get("preallocate") and settings.get("fraction") and physical:
        share = before[1] / physical
        ok &= abs(share - settings["fraction"]) <= 0.05
        detail = (f"preallocated pool {before[1] / gib:.1f} GiB = {share:.0%} of {physical / gib:.1f} GiB, "
                  f"recorded {settings['fraction']:.0%}; " + detail)
    return CheckDone("memory", "passed" if ok else "failed", detail)


def check_clocks(backend: Backend, n: int | None = None) -> CheckDone:
    """The GPU holds its clocks through a second of large matmuls (no power or thermal throttling)."""
    if backend.health is None:
        return CheckDone("clocks", "skipped", backend.health_note or "no GPU monitor")
    mm = Matmul(backend, n or _size(backend), "float32")
    settings = TimerSettings(min_samples=20, max_samples=10_000, budget_s=1.0, rel_ci=1e-9, warmup_s=0.1)
    m = Timer(mm, sync=backend.sync, monitor=backend.health.throttling).measure(settings)
    snap = {k: "?" if v is None else v for k, v in backend.health.snapshot().items()}
    detail = (f"SM {snap['sm_clock_mhz']} of {snap['max_sm_clock_mhz']} MHz, {snap['temperature_c']} °C, "
              f"{snap['power_w']} of {snap['power_limit_w']} W after {len(m.samples_s)} samples of matmuls")
    if m.throttled:
        return CheckDone("clocks", "failed", f"throttled ({', '.join(m.throttle_reasons)}) in "
                       f"{len(m.throttled)} of {len(m.samples_s)} samples; {detail}")
    return CheckDone("clocks", "passed", f"no throttling; {detail}")


def check_transfers(backend: Backend) -> CheckDone:
    """Both directions move the data, every call: fresh buffers, right values, possible rates."""
    host = np.random.default_rng(2).standard_normal(16 * 1024**2).astype(np.float32)  # 64 MiB
    up = Timer(backend.from_numpy, (host,), sync=backend.sync).measure(_QUICK).median_s
    x = backend.asarray(host)
    down = Timer(backend.to_numpy, (x,)).measure(_QUICK).median_s
    first, second = backend.to_numpy(x), backend.to_numpy(x)
    fresh = not np.shares_memory(first, second)
    right = np.array_equal(first, host) and np.array_equal(second, host)
    rates = host.nbytes / up, host.nbytes / down
    possible = max(rates) <= MAX_LINK_BYTES_S
    detail = (f"64 MiB host→device {rates[0] / 1e9:.1f} GB/s, device→host {rates[1] / 1e9:.1f} GB/s; "
              f"read-backs {'each a new buffer' if fresh else 'share one buffer (a cached copy)'}"
              f"{'' if right else '; values differ from what was sent'}")
    return CheckDone("transfers", "passed" if fresh and right and possible else "failed", detail)


def _numba_sample(xp: Any, a: Any, b: Any) -> Any:  # NumPy code as a workload writes it
    return xp.sin(a) * b + a.sum()


def check_numba(backend: Backend) -> CheckDone:
    """NumPy's compiled mode works here: ``numba.njit`` compiles a small NumPy function as a
    compiled cell does, and its result agrees with NumPy's."""
    try:
        from ..backends import numba_jit
    except ModuleNotFoundError as exc:
        if exc.name not in ("numba", "llvmlite"):
            raise
        return CheckDone("numba", "skipped", "Numba is not installed, so NumPy's compiled cells are "
                       "skipped (pip install 'arraybench[numba]')")
    n = 1000
    a, b = np.random.default_rng(4).standard_normal((2, n))
    compiled = numba_jit.compile_workload(_numba_sample, {}, grad=False)
    compile_s, out = Timer(compiled, (a, b)).first_call()
    per_call = Timer(compiled, (a, b)).measure(_QUICK).median_s
    check = Check.normwise(growth=lambda size: size ** 0.5, ulps=8)
    v = judge(out, _numba_sample(np, a, b), check, "float64", n)
    layer, threads = numba_jit.threading()
    facts = numba_jit.info()
    return CheckDone("numba", "passed" if v.ok else "failed",
                   f"numba {facts['numba']} (llvmlite {facts['llvmlite']}): numba.njit of sin(a) * b "
                   f"+ a.sum() on {n:,} float64 compiled in {format_seconds(compile_s)}, "
                   f"{format_seconds(per_call)} per call; error {v.max_rel_error:.1e} against NumPy "
                   f"(tolerance {v.tolerance:.1e}){'' if v.ok else ': ' + v.reason}; threading layer "
                   f"{layer}, {threads} threads")


#: Checks that judge one timing against another: a neighbour's burst over one of them pushes them apart.
TIMED_CHECKS = ("sync", "unsynced", "events", "harness")
#: Others busy on this share of the cores: a timed check's disagreement is theirs as likely as ours
#: (at load 9 on two cores the harness check failed an agreeing timer, the sync check JAX's wait).
BUSY_SHARE = 0.25


def judged_at(outcome: CheckDone, others_cores: float | None) -> CheckDone:
    """A timed check's failure "busy, not judged" (skipped, its figures kept) where other
    processes kept ``others_cores`` of the cores busy meanwhile, ``BUSY_SHARE`` of them or more."""
    cpus = os.cpu_count() or 1
    if outcome.status != "failed" or outcome.check not in TIMED_CHECKS or (others_cores or 0) < BUSY_SHARE * cpus:
        return outcome  # quiet, or its load unknown (no /proc): judged
    return CheckDone(outcome.check, "skipped", f"{outcome.detail}; busy, not judged: other processes "
                                               f"used {others_cores:.1f} of {cpus} cores meanwhile")


def run_checks(backend: Backend, only: tuple[str, ...] = CHECKS) -> Iterator[CheckDone]:
    """Every check in ``only`` that applies to the backend's device, each as soon as it is done."""
    from ..workloads.userfile import describe_exception

    for name in only:
        if not check_applies(name, backend.name, backend.device):
            continue
        window = SampleCounters(1, hardware=False)  # to see how busy others kept the machine
        window.begin(0)
        try:
            outcome = globals()[f"check_{name}"](backend)
            window.end(0, 1)
            outcome = judged_at(outcome, window.usage(0).others_cores)  # type: ignore[union-attr]
        except Exception as exc:  # a check that cannot run is a finding, not a crash
            outcome = CheckDone(name, "failed", describe_exception(exc))
        window.close()
        yield outcome
