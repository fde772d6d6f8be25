"""Is correct code ever called ``wrong``, and is every planted bug caught? A corpus through ``arraybench.run``.

At least 40 correct workloads written the way users write them (reductions, scans, std/var over long
axes, norms, softmax, log-sum-exp, layer norm, sort, argsort with ties, top-k, einsum, matmul chains,
Cholesky and QR solves, FFT convolution, Horner, Welford...), at sizes up to 10^6, in float64 and with
inputs fixed float32 (``arraybench.fixed``), and planted bugs in 16 of them (a float32 step inside
float64 code, a wrong axis, an off-by-one, ``log(1 + e)`` for ``log1p(e)``, ``np.`` for ``xp.``...),
each given the correct NumPy code as ``reference=``. Shapes once misjudged are among them: ranks
from a sort that breaks ties otherwise, a per-element loss whose small elements sit beside ones near
100 (and ``log(1 + e)`` written there), a column std above the long-double limit, NumPy reached
through ``.numpy()``, a bug in a gradient override; and workloads with no single answer (each
library draws its own random numbers), which must be ``wrong`` saying so, with no tolerance offered.

All of them go through one ``arraybench.run(...)`` call (processes=1, a small max_time): the same
planner, workers, references and checks a user gets. It prints the false-wrong rate over the correct
cells, the catch rate over the planted ones, and every miss. ``np.`` for ``xp.`` is a bug on the other
libraries only (NumPy's own run of it is right).

Then each explanation a note gives is checked against a measurement of its own and printed as
held or not (``explanation_checks.py``: ``--threads N`` rerun where oversubscription is said, each
allocator state alone against the stated cost, a torch.compile served from a fresh disk cache).

Run from the repository root: ``python benchmarks/verdict_corpus.py`` (``--backends numpy,torch``;
``--no-explanations`` for the verdicts alone). It takes a few minutes on two cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import arraybench  # noqa: E402
from arraybench import fixed  # noqa: E402

M = 1_000_000
CORRECT: list[Any] = []
PLANTED: dict[str, tuple[str, frozenset[str]]] = {}  # name -> (kind, backends where it is no bug)


def vec(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(n)


def vec32(n: int, rng: np.random.Generator) -> Any:
    return fixed(rng.standard_normal(n), "float32")


def pos32(n: int, rng: np.random.Generator) -> Any:
    return fixed(rng.uniform(0.0, 1.0, n), "float32")


def tall(cols: int) -> Callable[[int, np.random.Generator], np.ndarray]:
    return lambda n, rng: rng.standard_normal((n // cols, cols))


def spd(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    a = rng.standard_normal((n, n))
    return a @ a.T / n + np.eye(n), rng.standard_normal(n)


def mixed_scale(n: int, rng: np.random.Generator) -> np.ndarray:
    """A per-element loss's inputs: softplus up to 80 (MLX's float64 exp overflows past 88.7, as
    float32's does), a fifth of it 1e-21...1e-29."""
    return np.concatenate([rng.uniform(-5.0, 80.0, n - n // 5), rng.uniform(-66.0, -48.0, n // 5)])


def correct(size: int, inputs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a correct workload at one size with the default (derived) check."""
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        CORRECT.append(arraybench.workload(sizes={"c": size}, inputs=inputs, name=f"vc_{fn.__name__}")(fn))
        return fn
    return register


def planted(kind: str, size: int, inputs: Any, reference: Any,
            no_bug_on: tuple[str, ...] = (), grad: bool = False) -> Callable[[Callable[..., Any]], Any]:
    """Register a buggy workload whose ``reference=`` is the correct NumPy code (the workload is
    returned, for overrides that carry the bug)."""
    def register(fn: Callable[..., Any]) -> Any:
        name = f"vb_{fn.__name__}"
        CORRECT.append(arraybench.workload(sizes={"c": size}, inputs=inputs, reference=reference,
                                           name=name, grad=grad)(fn))
        PLANTED[name] = (kind, frozenset(no_bug_on))
        return CORRECT[-1]
    return register


#: Workloads with no single answer (each library draws its own random numbers): ``wrong`` on the
#: libraries whose stream is not the reference's, with a reason that says why and offers no tolerance.
NO_ANSWER: list[Any] = []


def softmax(xp: Any, x: Any, axis: int = -1) -> Any:
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def layernorm(xp: Any, x: Any, eps: float = 1e-5) -> Any:
    mean = xp.mean(x, axis=-1, keepdims=True)
    return (x - mean) / xp.sqrt(xp.var(x, axis=-1, keepdims=True) + eps)


def horner(xp: Any, x: Any, coeffs: tuple[float, ...] = (0.5, -1.25, 0.75, 2.0, -0.3, 0.1, 1.5)) -> Any:
    acc = xp.zeros_like(x) + coeffs[0]
    for c in coeffs[1:]:
        acc = acc * x + c
    return acc


def welford(xp: Any, x: Any, chunks: int = 16) -> Any:
    """Column variance (ddof 1) by merging chunk statistics (Chan et al.)."""
    rows = x.shape[0] // chunks
    count, mean, m2 = 0, xp.zeros(x.shape[1], dtype=x.dtype), xp.zeros(x.shape[1], dtype=x.dtype)
    for i in range(chunks):
        part = x[i * rows:(i + 1) * rows, :]
        pm = xp.mean(part, axis=0)
        pm2 = xp.sum((part - pm) ** 2, axis=0)
        total = count + rows
        delta = pm - mean
        mean = mean + delta * (rows / total)
        m2 = m2 + pm2 + delta ** 2 * (count * rows / total)
        count = total
    return m2 / (count - 1)


def fftconv(xp: Any, a: Any, b: Any) -> Any:
    n = a.shape[0] + b.shape[0] - 1
    return xp.fft.irfft(xp.fft.rfft(a, n=n) * xp.fft.rfft(b, n=n), n=n)


def chol_solve(xp: Any, a: Any, b: Any, transpose: bool = True) -> Any:
    low = xp.linalg.cholesky(a)
    y = xp.linalg.solve(low, b)
    return xp.linalg.solve(xp.matrix_transpose(low) if transpose else low, y)


# -- correct: reductions and scans, float64 ---------------------------------------------------------
@correct(M, vec)
def total(xp, x): return xp.sum(x)
@correct(M, vec)
def mean(xp, x): return xp.mean(x)
@correct(M, vec)
def var(xp, x): return xp.var(x)
@correct(M, vec)
def std1(xp, x): return xp.std(x, correction=1)
@correct(M, tall(5))
def column_std(xp, x): return xp.std(x, axis=0, correction=1)
@correct(M, tall(4))
def batchnorm_stats(xp, x): return xp.mean(x, axis=0), xp.var(x, axis=0)
@correct(M, tall(1000))
def row_var(xp, x): return xp.var(x, axis=1)
@correct(M, vec)
def norm(xp, x): return xp.linalg.vector_norm(x)
@correct(M, tall(1000))
def fro(xp, x): return xp.linalg.matrix_norm(x)
@correct(M, lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n)))
def dot(xp, a, b): return xp.vecdot(a, b)
@correct(M, vec)
def cumsum(xp, x): return xp.cumulative_sum(x)
@correct(M, lambda n, rng: 1.0 + 1e-6 * rng.standard_normal(n))
def cumprod_near_one(xp, x): return xp.exp(xp.cumulative_sum(xp.log(x)))
@correct(M, tall(8))
def welford_var(xp, x): return welford(xp, x)
@correct(M, vec)
def mse(xp, x): return xp.mean((x - 0.5) ** 2)
@correct(M, vec)
def max_abs(xp, x): return xp.max(xp.abs(x))
@correct(200_000 * 32, tall(32))  # above the long-double limit: the reference is NumPy's float64
def column_std_large(xp, x): return xp.std(x, axis=0, correction=1)


# -- correct: row-wise and element-wise, float64 ----------------------------------------------------
@correct(M, tall(128))
def softmax_rows(xp, x): return softmax(xp, x)
@correct(M, tall(128))
def logsumexp(xp, x):
    top = xp.max(x, axis=1, keepdims=True)
    return xp.log(xp.sum(xp.exp(x - top), axis=1)) + top[:, 0]
@correct(M, tall(128))
def log_softmax(xp, x):
    s = x - xp.max(x, axis=1, keepdims=True)
    return s - xp.log(xp.sum(xp.exp(s), axis=1, keepdims=True))
@correct(M, tall(256))
def layer_norm(xp, x): return layernorm(xp, x)
@correct(M, vec)
def horner7(xp, x): return horner(xp, x)
@correct(M, vec)
def softplus(xp, x): return xp.log1p(xp.exp(x))
@correct(M, vec)
def gelu_tanh(xp, x): return 0.5 * x * (1.0 + xp.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))
@correct(M, vec)
def sigmoid(xp, x): return 1.0 / (1.0 + xp.exp(-x))
@correct(M, lambda n, rng: mixed_scale(n, rng))
def softplus_loss(xp, x): return xp.log1p(xp.exp(x))
@correct(M, tall(100))
def cosine_rows(xp, x):
    y = xp.flip(x, axis=1)
    return xp.sum(x * y, axis=1) / (xp.linalg.vector_norm(x, axis=1) * xp.linalg.vector_norm(y, axis=1))
@correct(100_000, lambda n, rng: (rng.standard_normal((n // 10, 10)), rng.integers(0, 10, n // 10)))
def cross_entropy(xp, x, y):
    s = x - xp.max(x, axis=1, keepdims=True)
    logp = s - xp.log(xp.sum(xp.exp(s), axis=1, keepdims=True))
    return -xp.mean(xp.take_along_axis(logp, xp.reshape(y, (-1, 1)), axis=1))


# -- correct: sorting and ranking ------------------------------------------------------------------
@correct(M, vec)
def sort(xp, x): return xp.sort(x)
@correct(100_000, lambda n, rng: rng.integers(0, 50, n))
def argsort_ties(xp, s): return xp.argsort(s, stable=False)
@correct(100_000, lambda n, rng: rng.integers(0, 50, n).astype(float))
def argsort_float_ties(xp, s): return xp.argsort(s)
@correct(M, vec)
def top_k(xp, x): return xp.sort(x)[-10:]
@correct(100_000, lambda n, rng: rng.integers(0, 1000, n))
def ranks(xp, s): return xp.argsort(xp.argsort(s, stable=True), stable=True)
@correct(100_000, lambda n, rng: rng.integers(0, 50, n).astype(float))
def ranks_unstable_ties(xp, s): return xp.argsort(xp.argsort(s, stable=False), stable=False)


# -- correct: linear algebra, FFT ------------------------------------------------------------------
@correct(300, lambda n, rng: tuple(rng.standard_normal((n, n)) / np.sqrt(n) for _ in range(3)))
def matmul_chain(xp, a, b, c): return a @ b @ c @ a
@correct(64, lambda n, rng: (rng.standard_normal((n, 32, 32)) / 6, rng.standard_normal((n, 32, 32)) / 6))
def batched_matmul(xp, a, b): return xp.matmul(xp.matmul(a, b), a)
@correct(200, lambda n, rng: (rng.standard_normal((n, n)), rng.standard_normal((n, n))))
def einsum_trace(xp, a, b): return xp.einsum("ij,jk->ik", a, b), xp.einsum("ij,ji->", a, b)
@correct(300, spd)
def cholesky_solve(xp, a, b): return chol_solve(xp, a, b)
@correct(300, lambda n, rng: (rng.standard_normal((n, n)) + 5 * np.eye(n), rng.standard_normal(n)))
def qr_solve(xp, a, b):
    q, r = xp.linalg.qr(a)
    return xp.linalg.solve(r, xp.matrix_transpose(q) @ b)
@correct(200, spd)
def eigvalsh(xp, a, b): return xp.linalg.eigvalsh(a)
@correct(100_000, lambda n, rng: (rng.standard_normal(n), rng.standard_normal(257)))
def fft_convolution(xp, a, b): return fftconv(xp, a, b)
@correct(2_000, lambda n, rng: (rng.standard_normal((n, 16)), rng.standard_normal((n // 2, 16))))
def pairwise_dist(xp, a, b):
    d = xp.sum(a * a, axis=1)[:, None] + xp.sum(b * b, axis=1)[None, :] - 2.0 * a @ xp.matrix_transpose(b)
    return xp.sqrt(xp.clip(d, 0.0, None))
@correct(512, lambda n, rng: tuple(rng.standard_normal((n, 64)) for _ in range(3)))
def attention(xp, q, k, v): return softmax(xp, q @ xp.matrix_transpose(k) / 8.0) @ v
@correct(4096, lambda n, rng: (rng.standard_normal((n, 64)), rng.standard_normal((64, 64)) / 8,
                               rng.standard_normal((64, 64)) / 8))
def mlp(xp, x, w1, w2): return xp.tanh(x @ w1) @ w2


# -- correct: inputs fixed float32 -----------------------------------------------------------------
@correct(M, vec32)
def total_f32(xp, x): return xp.sum(x)
@correct(M, vec32)
def cumsum_f32(xp, x): return xp.cumulative_sum(x)
@correct(300_000, pos32)
def cumsum_pos_f32(xp, x): return xp.cumulative_sum(x)
@correct(M, vec32)
def var_f32(xp, x): return xp.var(x)
@correct(M, vec32)
def norm_f32(xp, x): return xp.linalg.vector_norm(x)
@correct(M, lambda n, rng: fixed(rng.standard_normal((n // 128, 128)), "float32"))
def softmax_f32(xp, x): return softmax(xp, x)
@correct(M, lambda n, rng: fixed(rng.standard_normal((n // 256, 256)), "float32"))
def layer_norm_f32(xp, x): return layernorm(xp, x)
@correct(256, lambda n, rng: (fixed(rng.standard_normal((n, n)), "float32"),
                              fixed(rng.standard_normal((n, n)), "float32")))
def matmul_f32(xp, a, b): return a @ b
@correct(M, vec32)
def sort_f32(xp, x): return xp.sort(x)


# -- planted bugs ----------------------------------------------------------------------------------
def _f32(xp: Any, x: Any) -> Any:
    return xp.astype(xp.astype(x, xp.float32), x.dtype)


@planted("float32 step", M, tall(128), lambda x: softmax(np, x))
def softmax_f32_step(xp, x): return softmax(xp, _f32(xp, x))
@planted("float32 step", M, vec, lambda x: np.cumsum(x))
def cumsum_f32_step(xp, x): return xp.cumulative_sum(_f32(xp, x))
@planted("float32 step", 300, lambda n, rng: tuple(rng.standard_normal((n, n)) / np.sqrt(n) for _ in range(3)),
         lambda a, b, c: a @ b @ c @ a)
def matmul_chain_f32(xp, a, b, c): return _f32(xp, a @ b) @ c @ a
@planted("mixed float32 cast", 100_000,
         lambda n, rng: (fixed(rng.uniform(0.5, 1.5, n), "float32"), rng.standard_normal(n)),
         lambda w, x: np.cumsum(w.astype(np.float64) * x))
def mixed_cast(xp, w, x): return xp.cumulative_sum(w * xp.astype(x, xp.float32))
@planted("wrong axis", M, tall(1000), lambda x: np.mean(x, axis=1))
def mean_axis0(xp, x): return xp.mean(x, axis=0)
@planted("wrong axis", 512, lambda n, rng: rng.standard_normal((n, n)), lambda x: softmax(np, x, axis=1))
def softmax_axis0(xp, x): return softmax(xp, x, axis=0)
@planted("off-by-one", M, vec, lambda x: np.cumsum(x))
def cumsum_exclusive(xp, x): return xp.concat([xp.zeros(1, dtype=x.dtype), xp.cumulative_sum(x)[:-1]])
@planted("off-by-one", M, vec, lambda x: np.sort(x)[-10:])
def top_k_short(xp, x): return xp.sort(x)[-11:-1]
@planted("off-by-one", M, tall(8), lambda x: np.var(x, axis=0, ddof=1))
def welford_ddof(xp, x): return welford(xp, x) * (x.shape[0] - 1) / x.shape[0]
@planted("log(1+e) for log1p(e)", M, lambda n, rng: rng.uniform(-40.0, -20.0, n),
         lambda x: np.log1p(np.exp(x)))
def softplus_log(xp, x): return xp.log(1.0 + xp.exp(x))
@planted("np. for xp.", M, vec, lambda x: np.exp(x - np.max(x)) / np.sum(np.exp(x - np.max(x))),
         no_bug_on=("numpy",))
def softmax_np(xp, x): return np.exp(x - np.max(x)) / np.sum(np.exp(x - np.max(x)))
@planted("unstable formula", M, lambda n, rng: 1e4 + rng.standard_normal(n), lambda x: np.var(x))
def var_naive(xp, x): return xp.mean(x * x) - xp.mean(x) ** 2
@planted("missing transpose", 300, spd, lambda a, b: np.linalg.solve(a, b))
def cholesky_no_t(xp, a, b): return chol_solve(xp, a, b, transpose=False)
@planted("circular, not linear", 100_000, lambda n, rng: (rng.standard_normal(n), rng.standard_normal(257)),
         lambda a, b: np.convolve(a, b))
def fftconv_circular(xp, a, b):
    n = a.shape[0] + b.shape[0] - 1
    return xp.fft.irfft(xp.fft.rfft(a, n=n) * xp.fft.rfft(b, n=n), n=n - 1)
@planted("coefficients reversed", M, vec, lambda x: horner(np, x))
def horner_reversed(xp, x): return horner(xp, x, (1.5, 0.1, -0.3, 2.0, 0.75, -1.25, 0.5))
@planted("eps dropped", M, tall(256), lambda x: layernorm(np, x))
def layer_norm_no_eps(xp, x): return layernorm(xp, x, eps=0.0)
@planted("descending", 100_000, lambda n, rng: rng.standard_normal(n), lambda s: np.argsort(s))
def argsort_desc(xp, s): return xp.argsort(s, descending=True)
@planted("log(1+e) beside large elements", M, mixed_scale, lambda x: np.log1p(np.exp(x)))
def softplus_loss_log(xp, x): return xp.log(1.0 + xp.exp(x))


@planted("NumPy through .numpy()", 300, lambda n, rng: rng.standard_normal((n, n)),
         lambda a: a / np.linalg.norm(a), no_bug_on=("numpy", "mlx"))
def normalized(xp, a): return a / xp.linalg.matrix_norm(a)
@normalized.override("torch", namespace="native")
def _normalized_torch(torch, a): return a / float(np.linalg.norm(a.numpy()))
@normalized.override("jax", namespace="native")
def _normalized_jax(jnp, a): return a / float(np.linalg.norm(np.asarray(a)))


@planted("gradient override", 1000, lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n)),
         None, no_bug_on=("torch", "jax", "mlx"), grad=True)
def tanh_loss(xp, w, x): return xp.sum(xp.tanh(w * x) ** 2)
@tanh_loss.gradient("numpy", namespace="native")
def _tanh_loss_grad(np_, w, x):
    t = np_.tanh(w * x)
    return 2.0 * t * (1 - t ** 2)  # the factor x is missing


def no_answer(fn: Callable[..., Any]) -> Any:
    """Register a workload whose result depends on each library's own random numbers."""
    NO_ANSWER.append(arraybench.workload(sizes={"c": 100_000}, inputs=vec, name=f"vn_{fn.__name__}")(fn))
    return NO_ANSWER[-1]


@no_answer
def dropout(xp, x): return x * xp.asarray(np.random.default_rng(0).uniform(size=x.shape[0]) > 0.5) / 0.5
@dropout.override("torch", namespace="native")
def _dropout_torch(torch, x):
    torch.manual_seed(0)
    return x * (torch.rand(x.shape[0], dtype=x.dtype) > 0.5) / 0.5
@dropout.override("jax", namespace="native")
def _dropout_jax(jnp, x):
    import jax
    return x * jax.random.bernoulli(jax.random.PRNGKey(0), 0.5, x.shape) / 0.5


@no_answer
def monte_carlo_mean(xp, x):
    return xp.mean(xp.cos(xp.asarray(np.random.default_rng(1).uniform(size=x.shape[0]))))
@monte_carlo_mean.override("torch", namespace="native")
def _monte_carlo_mean_torch(torch, x):
    torch.manual_seed(1)
    return torch.mean(torch.cos(torch.rand(x.shape[0], dtype=x.dtype)))
@monte_carlo_mean.override("jax", namespace="native")
def _monte_carlo_mean_jax(jnp, x):
    import jax
    return jnp.mean(jnp.cos(jax.random.uniform(jax.random.PRNGKey(1), x.shape, dtype=x.dtype)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="numpy,torch,jax,mlx")
    parser.add_argument("--max-time", type=float, default=0.02, help="seconds of timing per cell")
    parser.add_argument("--no-explanations", action="store_true",
                        help="skip checking each explanation against a measurement of its own")
    args = parser.parse_args()
    started = time.perf_counter()
    # The checks are what is measured here, not times: one process, few samples, one allocator
    # state (no second worker with fresh pages), the CPU only.
    results = arraybench.run(CORRECT + NO_ANSWER, backends=args.backends, devices="cpu", dtype="float64",
                             processes=1, max_time=args.max_time, min_samples=3, allocator="reused",
                             store=False, plots=False, progress=False)
    good = bad = caught = missed = 0
    other: dict[str, int] = {}
    misses: list[str] = []
    closest = (0.0, "")
    no_answer = {wl.name for wl in NO_ANSWER}
    said = unsaid = 0
    for r in results.records:
        if r.workload in no_answer:
            if r.backend not in ("torch", "jax") or r.status not in ("ok", "wrong"):
                continue  # only these draw their own; NumPy's draws are the reference's
            told = r.status == "wrong" and "no single answer" in r.reason and "check=Check" not in r.reason
            said += told
            unsaid += not told
            if not told:
                misses.append(f"[no single answer, not said] {r.workload:22} {r.backend:6} {r.status:7} "
                              f"{(r.reason or '')[:110]}")
            continue
        bug = PLANTED.get(r.workload)
        if bug is not None and r.backend in bug[1]:
            bug = None if r.status == "ok" else bug  # np. code on NumPy is right; judge it as correct
        ratio = (r.max_rel_error or 0.0) / r.tolerance if r.tolerance else 0.0
        line = (f"{r.workload:22} {r.backend:6} {r.status:7} {ratio:8.3g}  "
                f"{(r.reason or f'error {r.max_rel_error} <= {r.tolerance}')[:110]}")
        if r.status not in ("ok", "wrong") and not (bug and r.status == "failed"):
            why = (r.reason or r.status).split(":")[0][:60]
            other[f"{r.status} ({r.backend}: {why})"] = other.get(f"{r.status} ({r.backend}: {why})", 0) + 1
        elif bug is None:
            good += r.status == "ok"
            bad += r.status == "wrong"
            if r.status == "wrong":
                misses.append(f"[false wrong]  {line}")
            elif ratio > closest[0]:
                closest = (ratio, line)
        else:
            caught += r.status != "ok"
            missed += r.status == "ok"
            if r.status == "ok":
                misses.append(f"[missed: {bug[0]}] {line}")
    print(f"{len(CORRECT) - len(PLANTED)} correct workloads, {len(PLANTED)} planted bugs; "
          f"backends {args.backends}, float64 and fixed float32, one process, max_time {args.max_time}")
    print(f"false-wrong rate: {bad} of {good + bad} correct cells = {bad / max(good + bad, 1):.1%}")
    print(f"catch rate: {caught} of {caught + missed} planted cells = {caught / max(caught + missed, 1):.1%}")
    print(f"no single answer (a library's own random numbers) said, with no tolerance offered: "
          f"{said} of {said + unsaid} cells")
    if other:
        print("not judged (the library cannot run the code, or a known library limitation):")
        for why, n in sorted(other.items()):
            print(f"  {n:3} {why}")
    print(f"closest correct cell to its tolerance (error / tolerance): {closest[1]}")
    print("\nevery miss (workload, library, status, error / tolerance, why):" if misses else "no misses")
    for m in misses:
        print("  " + m)
    if not args.no_explanations:
        check_explanations(results, args)
    print(f"({time.perf_counter() - started:.0f} s)")


def check_explanations(results: Any, args: argparse.Namespace) -> None:
    """Each explanation the notes give, held or not against a measurement (explanation_checks)."""
    import explanation_checks as ec

    by_name = {wl.name: wl for wl in CORRECT}
    print("\nexplanations checked against measurements of their own:")
    print(" oversubscription (--threads N would help):")
    for line in ec.oversubscription(results, by_name, max(args.max_time, 0.2)):
        print(line)
    large = [by_name[n] for n in ("vc_cumsum", "vc_sort", "vc_softplus")]
    backends = ",".join(b for b in ("numpy", "torch") if b in args.backends.split(","))
    print(" allocator cost (reused memory against fresh pages):")
    for line in ec.allocator_cost(large, backends, max(args.max_time, 0.2)):
        print(line)
    if "torch" in args.backends.split(","):
        print(" compile time served from a disk cache:")
        for line in ec.compile_cache(max(args.max_time, 0.2)):
            print(line)


if __name__ == "__main__":
    main()
