"""Every known workload by name: the built-ins, defined here, a user's, and groups of names.

Each built-in's inputs function is named ``_inputs``, defined afresh before the workload that takes
it: a workload's fingerprint (``trust.fingerprint``) hashes its functions' names, and another name
would read, in a run's history and to ``--resume``, as a change of the workload's code.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from .check import Check
from .definition import Work, Workload, define

REGISTRY: dict[str, "Workload"] = {}

#: The seed article's suite, in its order: what runs when no workload is named.
BUILTIN: tuple[str, ...] = ("elementwise", "matmul", "gradient", "fft", "sort")

#: Names that stand for several workloads in ``--workloads``.
GROUPS: dict[str, tuple[str, ...]] = {
    "seed": BUILTIN,
    "interop": ("from_list", "from_numpy", "copy_from_numpy", "to_numpy"),
    "transfer": ("from_numpy", "to_numpy"),
    "numerics": ("elementwise", "matmul", "gradient", "fft", "sort", "stats"),
}


def register(wl: "Workload") -> None:
    """Make a workload known by its name (a later definition of a name replaces the earlier)."""
    REGISTRY[wl.name] = wl


def expand(names: list[str]) -> list[str]:
    """Workload names with groups (``seed``, ``interop``, ``transfer``) expanded, in order, once each."""
    return list(dict.fromkeys(w for n in names for w in GROUPS.get(n, (n,))))


@functools.wraps(define)
def workload(fn: Any = None, /, **options: Any) -> Any:
    def decorate(f: Any) -> Workload:
        wl = define(**options)(f)
        register(wl)
        return wl

    return decorate(fn) if fn is not None else decorate


workload.__name__ = workload.__qualname__ = "workload"
workload.__doc__ = (define.__doc__ or "").replace("Define a workload", "Define a workload and make it known by name", 1)


# -- the machine's own ceilings (``--roofline``): the best of them is each record's ceiling ----------

CEILING_WORKLOADS = ("ceiling_bandwidth", "ceiling_matmul")


@workload(
    size_means="elements of the vector",
    sizes={"cpu": 1 << 25, "gpu": 1 << 27},
    inputs=lambda n, rng: rng.standard_normal(n),
    description="memory bandwidth: b = 2 * a over a vector far larger than the caches (STREAM scale)",
    check=Check.elementwise(ulps=1),
    work=lambda n, itemsize: Work(flops=n, bytes=2 * n * itemsize),
    namespace="native",
    modes=("latency",),
)
def ceiling_bandwidth(xp, a):
    return 2.0 * a


@workload(
    size_means="the side of each n x n matrix",
    sizes={"cpu": 2048, "gpu": 8192},
    inputs=lambda n, rng: (rng.standard_normal((n, n)), rng.standard_normal((n, n))),
    description="peak floating-point rate: a large square matmul",
    check=Check.normwise(growth=lambda n: n ** 0.5, ulps=16, matmul=True),
    work=lambda n, itemsize: Work(flops=2 * n**3, bytes=3 * n * n * itemsize),
    namespace="native",
    modes=("latency",),
)
def ceiling_matmul(xp, a, b):
    return a @ b


# -- element-wise a + b, a * b and sin(a): the seed's memory-bandwidth-bound kernels ---------------

def _inputs(n, rng):
    return rng.standard_normal(n), rng.standard_normal(n)


@workload(
    size_means="elements of each vector",
    inputs=_inputs,
    description="a + b, a * b and sin(a) on vectors (memory-bound; three new outputs per call)",
    check=Check.elementwise(ulps=8),
    work=lambda n, itemsize: Work(flops=3 * n, bytes=8 * n * itemsize),
    namespace="native",
    outputs=("a + b", "a * b", "sin(a)"),
)
def elementwise(xp, a, b):
    return a + b, a * b, xp.sin(a)


# -- one-dimensional complex FFT of a real signal --------------------------------------------------

def _inputs(n, rng):  # noqa: F811
    return rng.standard_normal(n)


@workload(
    size_means="elements of the vector",
    inputs=_inputs,
    description="fft(a) of a real vector, complex output (O(n log n))",
    check=Check.normwise(growth=lambda n: math.log2(max(n, 2)), ulps=8),
    work=lambda n, itemsize: Work(flops=5 * n * math.log2(max(n, 2)), bytes=3 * n * itemsize),
    namespace="native",
)
def fft(xp, a):
    return xp.fft.fft(a)


@fft.override("mlx")
def _mlx_fft(xp, a):
    # MLX has no complex128: said as a skip, before timing.
    if a.dtype == xp.float64:
        from ..backends.base import Unavailable

        raise Unavailable("not applicable: MLX has no complex128, so its FFT of float64 data "
                          "computes in complex64; --dtype float32 runs it")
    return xp.fft.fft(a)


# -- the gradient of L(w) = sum((w * x)^2) with respect to w: autodiff against finite differences --

def _inputs(n, rng):  # noqa: F811
    return rng.standard_normal(n), rng.standard_normal(n)


def _analytic(w, x):
    return 2.0 * w * x * x


@workload(
    size_means="parameters (elements of w and x)",
    sizes={"small": 100, "large": 10_000},
    inputs=_inputs,
    description=(
        "dL/dw of L = sum((w*x)^2): jax.grad and torch autograd; NumPy by forward finite "
        "differences, one forward pass per parameter (O(n^2), as in the seed)"
    ),
    reference=_analytic,
    check=Check.normwise(growth=lambda n: 1, ulps=8),
    work=lambda n, itemsize: Work(flops=6 * n, bytes=3 * n * itemsize),
    grad=True,
    namespace="native",
)
def gradient(xp, w, x):
    return xp.sum((w * x) ** 2)


# -- construction, conversion and transfer: getting data into a library and out again -------------
# Each one's work is the array's bytes (what crosses a GPU's bus), so results read as GB/s.

def _vector(n, rng):
    return rng.standard_normal(n)


def _moved(n, itemsize):
    return Work(flops=0, bytes=n * itemsize)


#: What the family shares: an exact check against its own input (a conversion changes no value).
_FAMILY = dict(reference=lambda a: a, check=Check.exact(), work=_moved, namespace="backend",
               modes=("latency", "throughput"))
#: ...and what its members that take a NumPy array share.
_FROM_ARRAY = dict(size_means="elements of the array", inputs=_vector, **_FAMILY)


@workload(
    size_means="elements of the list",
    inputs=lambda n, rng: (rng.standard_normal(n).tolist(),),  # one argument: the list
    description="array from a Python list of floats: np.array, torch.tensor, jnp.array, cp.array",
    placement="host",
    **_FAMILY,
)
def from_list(ctx, data):
    return ctx.backend.from_list(data, ctx.dtype)


@workload(
    description="NumPy array into the library as users do (torch.from_numpy: zero-copy on the CPU; "
                "on a GPU: the host-to-device copy)",
    placement="host",
    **_FROM_ARRAY,
)
def from_numpy(ctx, host):
    return ctx.backend.from_numpy(host)


@workload(
    description="NumPy array copied by the library's constructor (np.array, torch.tensor, jnp.array, cp.array)",
    placement="host",
    **_FROM_ARRAY,
)
def copy_from_numpy(ctx, host):
    return ctx.backend.copy_from_numpy(host)


@workload(
    description="an array back to NumPy (.numpy(), np.asarray, .get(); on a GPU: the device-to-host copy)",
    **_FROM_ARRAY,
)
def to_numpy(ctx, x):
    return ctx.backend.to_numpy(x)


# -- dense matrix multiplication: compute-bound, and where BLAS and GPUs differ most ---------------

def _inputs(n, rng):  # noqa: F811
    return rng.standard_normal((n, n)), rng.standard_normal((n, n))


@workload(
    size_means="the side of each n x n matrix",
    sizes={"small": 100, "large": 2_000},
    inputs=_inputs,
    description="C = A @ B for n x n matrices (compute-bound; 2n^3 flops)",
    # A dot product's typical error grows as sqrt(n): 16 ulp x sqrt(n) leaves correct BLAS a wide
    # margin yet flags TF32 or bf16 arithmetic in a float32 run (unless --allow-tf32).
    check=Check.normwise(growth=lambda n: n ** 0.5, ulps=16, matmul=True),
    work=lambda n, itemsize: Work(flops=2 * n**3, bytes=3 * n * n * itemsize),
    namespace="native",
)
def matmul(xp, a, b):
    return a @ b


# -- reductions: mean and standard deviation, where libraries' summation orders make numbers differ

def _inputs(n, rng):  # noqa: F811
    return rng.normal(1.0, 1.0, n)


@workload(
    size_means="elements of the vector",
    inputs=_inputs,
    description="(mean(a), std(a)) with NumPy's semantics (ddof=0); torch.std defaults to ddof=1",
    reference=lambda a: (a.mean(), a.std()),
    # Pairwise sums err as log2(n), naive ones as sqrt(n): sqrt(n) admits every correct one.
    check=Check.normwise(growth=lambda n: math.sqrt(n), ulps=8),
    work=lambda n, itemsize: Work(flops=4 * n, bytes=2 * n * itemsize),
    namespace="native",
    outputs=("mean", "std"),
)
def stats(xp, a):
    return xp.mean(a), xp.std(a)


@stats.override("torch")
def _torch_stats(xp, a):
    return xp.mean(a), xp.std(a, correction=0)


# -- sorting: comparisons and data-dependent memory access rather than arithmetic ------------------

def _inputs(n, rng):  # noqa: F811
    return rng.standard_normal(n)


@workload(
    size_means="elements of the vector",
    inputs=_inputs,
    description="sort(a) ascending; exact (torch.sort also computes indices, which are discarded)",
    check=Check.exact(),
    work=lambda n, itemsize: Work(flops=n * math.log2(max(n, 2)), bytes=2 * n * itemsize),
    namespace="native",
)
def sort(xp, a):
    return xp.sort(a)


@sort.override("torch")
def _torch_sort(xp, a):
    return xp.sort(a).values
