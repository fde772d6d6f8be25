"""Time NPBench kernels as NPBench does, in this plain process: ``python plain.py LIBRARY PRESET NAME...``.

The kernels are read from the NPBench checkout named by ``ARRAYBENCH_NPBENCH`` (``loader``).

The way of NPBench's ``Test.run`` and ``utilities.benchmark``: the data built once by the
benchmark's ``initialize``; a first call (NPBench's validation run, which is JAX's compile);
then ``timeit.repeat(stmt, setup, repeat=10, number=1)`` (its loop written out here, to read the
CPU time and counters around each call too), whose setup copies every array
argument (``np.copy``, or ``jnp.array`` for JAX) outside the timer (one departure: JAX's copies
are waited for in the setup; NPBench's asynchronous ``jnp.array`` leaves the timed call waiting
for its own inputs, 134 ms against 11.6 ms on atax), and JAX's statement
``jax.block_until_ready(kernel(...))``; the median of the repeats. JAX runs with float64 on
(``jax_enable_x64``), as NPBench's JAX framework sets it. Nothing else is set: the allocator,
threads and environment are the caller's. One JSON line per kernel on stdout:
``{"name": ..., "library": ..., "median_s": ..., "times_s": [...], "cpu_median_s": ...,
"minor_faults_per_call": ..., "waits_per_call": ...}`` (the process's CPU time per call, all threads,
and its page faults and voluntary context switches per call) (``"error"`` instead where
the kernel fails).
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from typing import Any

import numpy as np

import loader


def time_kernel(name: str, library: str, preset: str, repeat: int) -> dict[str, Any]:
    """NPBench's median of ``repeat`` single calls of ``name`` on ``library``."""
    bench = loader.info(name)
    data = loader.data(name, preset)
    impl = loader.implementation(name, library)
    if library == "jax":
        import jax
        import jax.numpy as jnp

        # NPBench copies with jnp.array, which JAX runs asynchronously: the timed call would wait
        # for its inputs to be copied (atax: 160 MB). Waited for here, outside the timer, as
        # arraybench restores inputs.
        copy: Any = lambda a: jnp.array(a).block_until_ready()
        stmt = "__result = jax.block_until_ready(__impl({}))"
        context: dict[str, Any] = {"jax": jax}
    else:
        copy, stmt, context = np.copy, "__result = __impl({})", {}
    arrays = bench["array_args"]
    args = ", ".join(f"__a_{a}" if a in arrays else a for a in bench["input_args"])
    setup = (", ".join(f"__a_{a}" for a in arrays) + " = " + ", ".join(f"__copy({a})" for a in arrays)
             if arrays else "pass")
    context.update(data, __impl=impl, __copy=copy)
    exec(setup, context)  # the first call: NPBench's validation run, JAX's compile
    exec(stmt.format(args), context)
    code = compile(stmt.format(args), "<npbench>", "exec")
    setup_code = compile(setup, "<setup>", "exec")
    times, cpu = [], []
    faults = waits = 0
    gc_was = gc.isenabled()
    gc.disable()  # as timeit does
    try:
        for _ in range(repeat):
            exec(setup_code, context)
            before = resource.getrusage(resource.RUSAGE_SELF)
            c0, t0 = time.process_time(), time.perf_counter()
            exec(code, context)
            t1, c1 = time.perf_counter(), time.process_time()
            after = resource.getrusage(resource.RUSAGE_SELF)
            times.append(t1 - t0)
            cpu.append(c1 - c0)
            faults += after.ru_minflt - before.ru_minflt
            waits += after.ru_nvcsw - before.ru_nvcsw
    finally:
        if gc_was:
            gc.enable()
    # CPU time and counters beside the wall time: on a shared machine a wall time moves with the
    # load, while a single-threaded call's CPU time, its page faults and its waits mostly do not.
    return {"name": name, "library": library, "median_s": float(np.median(times)), "times_s": times,
            "cpu_median_s": float(np.median(cpu)), "minor_faults_per_call": faults / repeat,
            "waits_per_call": waits / repeat}


def main() -> None:
    library, preset, *kernels = sys.argv[1:]
    if library == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
    for name in kernels:
        try:
            line = time_kernel(name, library, preset, repeat=10)
        except Exception as exc:  # one kernel's failure is reported, the others still run
            line = {"name": name, "library": library, "error": f"{type(exc).__name__}: {exc}"[:200]}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
