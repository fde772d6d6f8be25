"""How often is correct code called ``wrong``, and is every planted bug still caught? Figures for issue 23.

Correct workloads written the way users write them (reductions, scans, softmax, attention, chained
products, linear solves, variance, norms...) and the ``examples/``, each run through arraybench's own
worker code (``worker/prepare.prepare``: inputs, first call, reference, check) on NumPy, PyTorch
and JAX on the CPU, in float64 and float32, judged two ways:

- **before**: the old default check, passed explicitly: ``Check.elementwise()`` (8 ulp element-wise;
  ``Check.normwise(lambda n: n)`` for ``grad=True``, which kept that default);
- **after**: the default a workload now gets, ``Check.derived()``: the tolerance comes from how far
  the float64 reference itself moves (inputs perturbed by 4 ulp, and long double).

Then the planted bugs (a float32 step inside a float64 workload, an off-by-one, a wrong axis, a wrong
``ddof``...), each given the correct NumPy code as ``reference=``, must be ``wrong`` under the new
default. The float32 step is a bug in float64 runs only.

Run from the repository root: ``python benchmarks/false_wrong.py`` (``--dtypes float64``,
``--backends numpy,torch``). It takes about a minute.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from arraybench import Check, workload  # noqa: E402
from arraybench import backends  # noqa: E402
from arraybench.model.cell import Cell  # noqa: E402
from arraybench.worker.prepare import ReferenceCache, prepare  # noqa: E402
from arraybench.model.replicate import TimerSettings  # noqa: E402
from arraybench.workloads.definition import Workload  # noqa: E402
from arraybench.workloads.registry import REGISTRY  # noqa: E402
from arraybench.workloads.userfile import import_workload_file  # noqa: E402

QUICK = TimerSettings(min_samples=1, max_samples=1, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)


# -- correct workloads, defaults only ---------------------------------------------------------------

def _vector(n, rng):
    return rng.standard_normal(n)


def _rows(n, rng):
    return rng.standard_normal((n, 128))


def _square(n, rng):
    return rng.standard_normal((n, n))


def _qkv(n, rng):
    return tuple(rng.standard_normal((n, 64)) for _ in range(3))


def _chain(n, rng):
    return rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal(n)


def _system(n, rng):
    return rng.standard_normal((n, n)) + n ** 0.5 * np.eye(n), rng.standard_normal(n)


def _softmax(xp, x, axis=1):
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _attention(xp, q, k, v):
    return _softmax(xp, q @ xp.matrix_transpose(k) / 8.0) @ v


def _matvecs(xp, a, x, times=6):
    for _ in range(times):
        x = a @ x
    return x


CORRECT: list[Workload] = []


def correct(sizes: dict[str, int], inputs: Any):
    def register(fn):
        CORRECT.append(workload(sizes=sizes, inputs=inputs, name=f"fw_{fn.__name__}")(fn))
        return fn
    return register


@correct({"s": 1_000, "l": 200_000}, _vector)
def total(xp, x):
    return xp.sum(x)


@correct({"s": 64, "l": 2_000}, _rows)
def row_means(xp, x):
    return xp.mean(x, axis=1)


@correct({"s": 1_000, "l": 200_000}, _vector)
def cumsum(xp, x):
    return xp.cumulative_sum(x)


@correct({"s": 64, "l": 2_000}, _rows)
def softmax(xp, x):
    return _softmax(xp, x)


@correct({"s": 64, "l": 1_024}, _qkv)
def attention(xp, q, k, v):
    return _attention(xp, q, k, v)


@correct({"s": 64, "l": 400}, _chain)
def matvec_chain(xp, a, x):
    return _matvecs(xp, a, x)


@correct({"s": 32, "l": 300}, _system)
def solve(xp, a, b):
    return xp.linalg.solve(a, b)


@correct({"s": 1_000, "l": 200_000}, _vector)
def variance(xp, x):
    return xp.var(x, correction=1)


@correct({"s": 64, "l": 2_000}, _rows)
def column_std(xp, x):
    return xp.std(x, axis=0, correction=1)


@correct({"s": 1_000, "l": 200_000}, _vector)
def norm(xp, x):
    return xp.linalg.vector_norm(x)


@correct({"s": 64, "l": 2_000}, _rows)
def logsumexp(xp, x):
    top = xp.max(x, axis=1, keepdims=True)
    return xp.log(xp.sum(xp.exp(x - top), axis=1)) + top[:, 0]


@correct({"s": 64, "l": 2_000}, _rows)
def layernorm(xp, x):
    mean = xp.mean(x, axis=1, keepdims=True)
    return (x - mean) / xp.sqrt(xp.var(x, axis=1, keepdims=True) + 1e-5)


@correct({"s": 64, "l": 4_000}, lambda n, rng: rng.standard_normal((n, 32)))
def gram(xp, x):
    return xp.matrix_transpose(x) @ x / x.shape[0]


@correct({"s": 1_000, "l": 200_000}, _vector)
def polynomial(xp, x):
    return ((0.3 * x - 1.2) * x + 0.7) * x - 2.0


# -- planted bugs: the code is wrong, the NumPy reference= is right ----------------------------------

PLANTED: list[tuple[Workload, str]] = []


def planted(kind: str, sizes: dict[str, int], inputs: Any, reference: Any):
    def register(fn):
        wl = workload(sizes=sizes, inputs=inputs, reference=reference, name=f"bug_{fn.__name__}")(fn)
        PLANTED.append((wl, kind))
        return fn
    return register


def _f32(xp, x):
    return xp.astype(xp.astype(x, xp.float32), x.dtype)


@planted("float32 step", {"s": 64}, _rows, lambda x: _softmax(np, x))
def softmax_f32(xp, x):
    e = xp.exp(_f32(xp, x - xp.max(x, axis=1, keepdims=True)))
    return e / xp.sum(e, axis=1, keepdims=True)


@planted("float32 step", {"s": 64}, _qkv, lambda q, k, v: _attention(np, q, k, v))
def attention_f32(xp, q, k, v):
    return _softmax(xp, _f32(xp, q @ xp.matrix_transpose(k)) / 8.0) @ v


@planted("float32 step", {"s": 1_000}, _vector, lambda x: np.var(x, ddof=1))
def variance_f32(xp, x):
    return xp.var(_f32(xp, x), correction=1)


@planted("float32 step", {"s": 32}, _system, lambda a, b: np.linalg.solve(a, b))
def solve_f32(xp, a, b):
    return xp.linalg.solve(_f32(xp, a), b)


@planted("float32 step", {"s": 1_000}, _vector, lambda x: np.cumsum(x))
def cumsum_f32(xp, x):
    return _f32(xp, xp.cumulative_sum(x))


@planted("off-by-one", {"s": 1_000}, _vector, lambda x: np.cumsum(x))
def cumsum_exclusive(xp, x):
    return xp.concat([xp.zeros(1, dtype=x.dtype), xp.cumulative_sum(x)[:-1]])


@planted("off-by-one", {"s": 1_000}, _vector, lambda x: np.sum(x))
def total_skips_first(xp, x):
    return xp.sum(x[1:])


@planted("off-by-one", {"s": 64}, _chain, lambda a, x: _matvecs(np, a, x))
def matvec_chain_short(xp, a, x):
    return _matvecs(xp, a, x, times=5)


@planted("wrong axis", {"s": 64}, _square, lambda x: _softmax(np, x))
def softmax_axis0(xp, x):
    return _softmax(xp, x, axis=0)


@planted("wrong axis", {"s": 64}, _square, lambda x: np.mean(x, axis=1))
def row_means_axis0(xp, x):
    return xp.mean(x, axis=0)


@planted("wrong ddof", {"s": 1_000}, _vector, lambda x: np.var(x, ddof=1))
def variance_ddof0(xp, x):
    return xp.var(x)


@planted("wrong ddof", {"s": 64}, _rows, lambda x: np.std(x, axis=0, ddof=1))
def column_std_ddof0(xp, x):
    return xp.std(x, axis=0)


@planted("wrong ddof", {"s": 1_000}, lambda n, rng: rng.standard_normal((n, 1000)),
         lambda x: np.std(x, axis=1, ddof=1))
def row_std_ddof0_wide(xp, x):
    return xp.std(x, axis=1)


# -- running -------------------------------------------------------------------------------------

def old_default(wl: Workload) -> Check:
    return Check.normwise(lambda n: n) if wl.grad else Check.elementwise()


def new_default(wl: Workload) -> Check:
    return Check.normwise(lambda n: n) if wl.grad else Check.derived()


def verdict(backend: Any, wl: Workload, n: int, dtype: str) -> tuple[str, str, float]:
    """(status, reason, error / tolerance) of ``wl`` at ``n`` on ``backend`` in ``dtype``, as a worker
    judges it."""
    cell = Cell(wl.name, str(n), n, backend.name, "cpu", dtype, "latency", params=wl.params_for(n))
    rep = prepare(backend, wl, cell, QUICK, ReferenceCache()).replicate
    ratio = rep.max_rel_error / rep.tolerance if rep.max_rel_error is not None and rep.tolerance else 0.0
    return rep.status, rep.reason or f"error {rep.max_rel_error:.2g} <= {rep.tolerance:.2g}", ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="numpy,torch,jax")
    parser.add_argument("--dtypes", default="float64,float32")
    parser.add_argument("--verbose", action="store_true", help="every cell, not only the wrong ones")
    args = parser.parse_args()
    examples = []
    for path in sorted((ROOT / "examples").glob("*.py")):
        examples += [REGISTRY[name] for name in import_workload_file(path)]
    opened = []
    for name in args.backends.split(","):
        opened.append(backends.load(name)("cpu"))
    dtypes = args.dtypes.split(",")
    started = time.perf_counter()
    tally: dict[tuple[str, str], list[int]] = {}
    closest = (0.0, "")
    print(f"{'workload':28} {'size':>7} {'library':6} {'dtype':8} {'before':7} {'after':7}  why")
    for group, wls in (("own", CORRECT), ("examples", examples)):
        for wl in wls:
            for n in sorted(set(wl.sizes.values())):
                for backend in opened:
                    for dtype in dtypes:
                        before = verdict(backend, dataclasses.replace(wl, check=old_default(wl)), n, dtype)
                        after = verdict(backend, dataclasses.replace(wl, check=new_default(wl)), n, dtype)
                        if after[0] == "ok" and not wl.grad and after[2] > closest[0]:
                            closest = (after[2], f"{wl.name} {n} {backend.name} {dtype}: {after[1]}")
                        for when, (status, _, _) in (("before", before), ("after", after)):
                            counts = tally.setdefault((group, when), [0, 0, 0])
                            counts[0] += status == "wrong"
                            counts[1] += status in ("ok", "wrong")
                            counts[2] += status not in ("ok", "wrong")
                        if args.verbose or "wrong" in (before[0], after[0]) \
                                or before[0] not in ("ok", "wrong"):
                            why = after[1] if after[0] != "ok" else before[1]
                            print(f"{wl.name:28} {n:>7} {backend.name:6} {dtype:8} {before[0]:7} "
                                  f"{after[0]:7}  {why[:150]}")
    caught = missed = 0
    kinds: dict[str, list[float]] = {}
    print("\nplanted bugs (new default check):")
    for wl, kind in PLANTED:
        for backend in opened:
            for dtype in dtypes:
                if kind == "float32 step" and dtype != "float64":
                    continue
                status, why, ratio = verdict(backend, wl, next(iter(wl.sizes.values())), dtype)
                caught += status == "wrong"
                missed += status == "ok"
                kinds.setdefault(kind, []).append(ratio if status == "wrong" else 0.0)
                if status != "wrong" or args.verbose:
                    print(f"  {'MISSED' if status == 'ok' else status:7} {wl.name} [{kind}] "
                          f"{backend.name} {dtype}: {why[:150]}")
    print(f"\ncorrect cells called wrong (false-wrong rate), {', '.join(dtypes)}, "
          f"{', '.join(b.name for b in opened)} on the CPU:")
    for (group, when), (wrong, judged, other) in tally.items():
        extra = f" ({other} cells neither ok nor wrong)" if other else ""
        print(f"  {group:9} {when:7} {wrong:3} of {judged:3} = {wrong / max(judged, 1):6.1%}{extra}")
    for kind, ratios in kinds.items():
        print(f"  {kind:13} caught in {sum(r > 1 for r in ratios)} of {len(ratios)} cells; "
              f"the smallest error is {min(ratios):.3g} x its tolerance")
    print(f"closest correct cell to its derived tolerance: {closest[0]:.2f} of it ({closest[1]})")
    print(f"planted bugs caught: {caught} of {caught + missed}"
          f" ({len(PLANTED)} bugs; float32 steps in float64 runs only)")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
