"""Construction, conversion and transfer: what it costs to get data into a library and out again.

On a GPU, ``from_numpy`` is the host-to-device copy and ``to_numpy`` the device-to-host copy; the
work model of every workload here is the array's bytes (what crosses the bus), so results read as
GB/s and compare with each other. On the CPU they show which conversions are
free (``torch.from_numpy`` shares NumPy's memory) and which copy.
"""

from __future__ import annotations

from .check import Check
from .definition import Work
from .registry import workload


def _vector(n, rng):
    return rng.standard_normal(n)


def _moved(n, itemsize):
    return Work(flops=0, bytes=n * itemsize)


INTEROP_SIZES = {"small": 1_000, "large": 1_000_000}


@workload(
    name="from_list",
    size_means="elements of the list",
    sizes=INTEROP_SIZES,
    inputs=lambda n, rng: (rng.standard_normal(n).tolist(),),  # one argument: the list
    description="array from a Python list of floats: np.array, torch.tensor, jnp.array, cp.array",
    reference=lambda a: a,
    check=Check.exact(),
    work=_moved,
    namespace="backend",
    placement="host",
    modes=("latency", "throughput"),
)
def from_list(ctx, data):
    return ctx.backend.from_list(data, ctx.dtype)


@workload(
    name="from_numpy",
    size_means="elements of the array",
    sizes=INTEROP_SIZES,
    inputs=_vector,
    description="NumPy array into the library as users do (torch.from_numpy: zero-copy on the CPU; "
                "on a GPU: the host-to-device copy)",
    reference=lambda a: a,
    check=Check.exact(),
    work=_moved,
    namespace="backend",
    placement="host",
    modes=("latency", "throughput"),
)
def from_numpy(ctx, host):
    return ctx.backend.from_numpy(host)


@workload(
    name="copy_from_numpy",
    size_means="elements of the array",
    sizes=INTEROP_SIZES,
    inputs=_vector,
    description="NumPy array copied by the library's constructor (np.array, torch.tensor, jnp.array, cp.array)",
    reference=lambda a: a,
    check=Check.exact(),
    # n bytes, as from_numpy: on a GPU they cross the bus once. (The CPU copy also writes them,
    # but the family counts the data brought in, so that GB/s compare across it.)
    work=_moved,
    namespace="backend",
    placement="host",
    modes=("latency", "throughput"),
)
def copy_from_numpy(ctx, host):
    return ctx.backend.copy_from_numpy(host)


@workload(
    name="to_numpy",
    size_means="elements of the array",
    sizes=INTEROP_SIZES,
    inputs=_vector,
    description="an array back to NumPy (.numpy(), np.asarray, .get(); on a GPU: the device-to-host copy)",
    reference=lambda a: a,
    check=Check.exact(),
    work=_moved,
    namespace="backend",
    modes=("latency", "throughput"),
)
def to_numpy(ctx, x):
    return ctx.backend.to_numpy(x)
