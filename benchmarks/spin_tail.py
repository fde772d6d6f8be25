"""How long a library's idle thread pool keeps a core busy after its last call, on this machine.

A BLAS or OpenMP pool does not sleep the moment a parallel call returns: its threads spin for a
while, waiting for the next call. Timed right after, another library would share its cores with
that spinning. This script measures the tail: in a fresh process per library, it makes a few
parallel calls, then sleeps in 5 ms steps and reads the process's CPU time (every thread's): what
the process uses while its main thread sleeps is the pool spinning. Taking turns
(``executors/turns``) stops a worker (SIGSTOP) when its turn ends, so this tail never overlaps
another library's samples; the script also prints what a library's sample loses when it runs
during another's tail, not paused.

    python benchmarks/spin_tail.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

CHILD = r"""
import os, sys, time
lib = sys.argv[1]
if lib == "numpy":
    import numpy as np
    a = np.random.rand(300, 300)
    call = lambda: a @ a
else:
    import torch
    a = torch.rand(300, 300, dtype=torch.float64)
    call = lambda: a @ a
for _ in range(50):
    call()
print("ready", flush=True)
sys.stdin.readline()
for _ in range(20):
    call()
t0 = time.process_time()
w0 = time.perf_counter()
rows = []
for _ in range(60):
    time.sleep(0.005)
    rows.append((time.perf_counter() - w0, time.process_time() - t0))
print(" ".join(f"{w:.4f}:{c:.4f}" for w, c in rows), flush=True)
sys.stdin.readline()
"""

NOISY = r"""
import sys
lib = sys.argv[1]
if lib == "numpy":
    import numpy as np
    a = np.random.rand(300, 300)
else:
    import torch
    a = torch.rand(300, 300, dtype=torch.float64)
for _ in range(50):
    a @ a
print("ready", flush=True)
for line in sys.stdin:
    for _ in range(20):
        a @ a
    print("done", flush=True)
"""

VICTIM = r"""
import sys, time
import numpy as np
a = np.random.rand(200_000)
def one():
    t = time.perf_counter()
    for _ in range(20):
        np.sin(a)
    return (time.perf_counter() - t) / 20
for _ in range(5):
    one()
print("ready", flush=True)
for line in sys.stdin:
    print(f"{one():.6e}", flush=True)
"""


def tail(lib: str) -> tuple[float, float]:
    """(seconds until the idle pool used < 10% of a core over 5 ms, CPU seconds it used meanwhile)."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, lib], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout and proc.stdin
    proc.stdout.readline()
    proc.stdin.write("go\n")
    proc.stdin.flush()
    rows = [tuple(map(float, x.split(":"))) for x in proc.stdout.readline().split()]
    proc.stdin.write("end\n")
    proc.stdin.flush()
    proc.wait()
    quiet_at, prev_w, prev_c = rows[-1][0], 0.0, 0.0
    for w, c in rows:
        if (c - prev_c) < 0.1 * (w - prev_w):
            quiet_at = prev_w
            break
        prev_w, prev_c = w, c
    return quiet_at, rows[-1][1]


def victim_slowdown(lib: str, pause: bool, trials: int = 15) -> float:
    """The median time of a single-threaded NumPy sample taken right after ``lib``'s calls, over
    the same sample taken with nothing before it; ``pause``: ``lib``'s process SIGSTOPped first."""
    victim = subprocess.Popen([sys.executable, "-c", VICTIM], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    noisy = subprocess.Popen([sys.executable, "-c", NOISY, lib],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert victim.stdout and victim.stdin and noisy.stdout and noisy.stdin
    victim.stdout.readline()
    noisy.stdout.readline()
    alone, after = [], []
    for _ in range(trials):
        victim.stdin.write("x\n")
        victim.stdin.flush()
        alone.append(float(victim.stdout.readline()))
        noisy.stdin.write("go\n")
        noisy.stdin.flush()
        noisy.stdout.readline()  # its calls are over; its pool may still spin
        if pause:
            os.kill(noisy.pid, signal.SIGSTOP)
        victim.stdin.write("x\n")
        victim.stdin.flush()
        after.append(float(victim.stdout.readline()))
        if pause:
            os.kill(noisy.pid, signal.SIGCONT)
        time.sleep(0.3)
    for p in (victim, noisy):
        p.kill()
        p.wait()
    alone.sort()
    after.sort()
    return after[len(after) // 2] / alone[len(alone) // 2]


def main() -> None:
    print(f"{os.cpu_count()} cores; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    for lib in ("numpy", "torch"):
        quiet, cpu = tail(lib)
        print(f"{lib:6s} after its last 300x300 matmul: its pool spins {quiet * 1e3:.0f} ms "
              f"({cpu * 1e3:.0f} ms of CPU in the 300 ms after)")
        print(f"{'':6s} a NumPy sample right after it: {victim_slowdown(lib, pause=False):.2f}x its time alone; "
              f"with {lib}'s worker paused (SIGSTOP): {victim_slowdown(lib, pause=True):.2f}x")


if __name__ == "__main__":
    main()
