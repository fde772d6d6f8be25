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
    # n bytes: on a GPU they cross the bus once. (A CPU copy, as copy_from_numpy's, also writes
    # them, but the family counts the data brought in, so that GB/s compare across it.)
    return Work(flops=0, bytes=n * itemsize)


#: What every workload of the family shares: its sizes, an exact check against its own input
#: (a conversion changes no value), the bytes moved as its work, the library's own calls.
_FAMILY = dict(sizes={"small": 1_000, "large": 1_000_000}, reference=lambda a: a, check=Check.exact(),
               work=_moved, namespace="backend", modes=("latency", "throughput"))


@workload(
    name="from_list",
    size_means="elements of the list",
    inputs=lambda n, rng: (rng.standard_normal(n).tolist(),),  # one argument: the list
    description="array from a Python list of floats: np.array, torch.tensor, jnp.array, cp.array",
    placement="host",
    **_FAMILY,
)
def from_list(ctx, data):
    return ctx.backend.from_list(data, ctx.dtype)


@workload(
    name="from_numpy",
    size_means="elements of the array",
    inputs=_vector,
    description="NumPy array into the library as users do (torch.from_numpy: zero-copy on the CPU; "
                "on a GPU: the host-to-device copy)",
    placement="host",
    **_FAMILY,
)
def from_numpy(ctx, host):
    return ctx.backend.from_numpy(host)


@workload(
    name="copy_from_numpy",
    size_means="elements of the array",
    inputs=_vector,
    description="NumPy array copied by the library's constructor (np.array, torch.tensor, jnp.array, cp.array)",
    placement="host",
    **_FAMILY,
)
def copy_from_numpy(ctx, host):
    return ctx.backend.copy_from_numpy(host)


@workload(
    name="to_numpy",
    size_means="elements of the array",
    inputs=_vector,
    description="an array back to NumPy (.numpy(), np.asarray, .get(); on a GPU: the device-to-host copy)",
    **_FAMILY,
)
def to_numpy(ctx, x):
    return ctx.backend.to_numpy(x)
