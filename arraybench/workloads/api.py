"""The workload API: one definition of an operation, run on every library.

A workload is a function of an array namespace ``xp`` and its input arrays. The same decorator
defines the built-in workloads and a user's own::

    import arraybench

    @arraybench.workload(
        sizes={"small": 1_000, "large": 1_000_000},
        inputs=lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n)),
    )
    def axpy(xp, x, y):
        return 2.0 * x + y

``inputs`` builds host NumPy arrays (float64; arraybench casts floating arrays to the run's dtype)
from a size and a seeded generator, so every library sees the same values. The reference is the
function itself run by NumPy in float64, unless ``reference`` is given.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from ..accuracy import Check

if TYPE_CHECKING:
    from ..backends.base import Backend

ArrayFn = Callable[..., Any]
InputsFn = Callable[[int, np.random.Generator], "tuple[np.ndarray, ...] | np.ndarray"]

NAMESPACES = ("array_api", "native", "backend")
PLACEMENTS = ("device", "host")


@dataclass(frozen=True)
class Work:
    """The work one call does: floating-point operations and bytes moved to and from memory."""

    flops: float
    bytes: float


@dataclass(frozen=True)
class Context:
    """What a ``namespace="backend"`` workload receives instead of ``xp``: the backend itself.

    For operations that are about the library rather than the arithmetic: building arrays from
    Python lists, moving data between NumPy, host and device.
    """

    backend: "Backend"
    dtype: str
    xp: Any


@dataclass(frozen=True)
class Bound:
    """A workload bound to one backend and mode: call ``op(*args)``; ``method`` says how."""

    op: Callable[..., Any]
    args: tuple[Any, ...]
    method: str


@dataclass
class Workload:
    """An operation defined once for every library. Create with ``@workload(...)``."""

    name: str
    fn: ArrayFn
    inputs: InputsFn
    sizes: dict[str, int]
    description: str = ""
    reference: ArrayFn | None = None
    check: Check = field(default_factory=Check.elementwise)
    work: Callable[[int, int], Work] | None = None
    grad: bool = False
    namespace: str = "array_api"
    iterations: dict[str, int] = field(default_factory=dict)
    source: str = "builtin"
    overrides: dict[str, ArrayFn] = field(default_factory=dict)
    compile_overrides: dict[str, ArrayFn] = field(default_factory=dict)
    #: "device": inputs are placed on the device before timing; "host": they stay host NumPy arrays
    #: (or Python lists), for workloads that time the move itself.
    placement: str = "device"
    #: Backends this workload applies to (None: all); others are skipped as not applicable.
    backends: tuple[str, ...] | None = None
    #: Modes this workload applies to (None: all).
    modes: tuple[str, ...] | None = None
    #: Names of the outputs when the function returns several (for the numerics table).
    outputs: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.namespace not in NAMESPACES:
            raise ValueError(f"namespace must be one of {NAMESPACES}, not {self.namespace!r}")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {PLACEMENTS}, not {self.placement!r}")
        for label, size in self.sizes.items():
            if not isinstance(size, int) or size <= 0:
                raise ValueError(f"{self.name}: size {label!r} must be a positive integer, not {size!r}")

    def __call__(self, xp: Any, *arrays: Any) -> Any:
        return self.fn(xp, *arrays)

    def override(self, *backends: str) -> Callable[[ArrayFn], ArrayFn]:
        """Register a backend-specific spelling: ``@wl.override("torch")`` on ``fn(xp, *arrays)``."""

        def register(fn: ArrayFn) -> ArrayFn:
            for b in backends:
                self.overrides[b] = fn
            return fn

        return register

    # -- inputs and reference -------------------------------------------------------------------
    def build_inputs(self, size: int, dtype: str, seed: int = 0) -> tuple[np.ndarray, ...]:
        """The host inputs for a size, cast to ``dtype``; identical for every backend and process."""
        rng = np.random.default_rng([seed, zlib.crc32(self.name.encode()), size])
        made = self.inputs(size, rng)
        arrays = made if isinstance(made, tuple) else (made,)
        return tuple(_cast_list(a, dtype) if isinstance(a, list) else _cast(np.asarray(a), dtype)
                     for a in arrays)

    def not_applicable(self, backend: str, mode: str) -> str | None:
        """Why this workload does not apply to a backend or mode, or None when it does."""
        if self.backends is not None and backend not in self.backends:
            return f"not applicable: {self.name} runs on {', '.join(self.backends)}"
        if self.modes is not None and mode not in self.modes:
            return f"not applicable: {self.name} has no {mode} mode"
        return None

    def reference_output(self, inputs: tuple[np.ndarray, ...]) -> Any:
        """The NumPy float64 result for inputs already cast to the run's dtype.

        The reference sees exactly the values the libraries see, promoted to float64, so the error
        measured is the library's own and not the cast's.
        """
        wide = tuple(_widen(a) for a in inputs)
        if self.reference is not None:
            return _as_host(self.reference(*wide))
        xp = _numpy_namespace(self.namespace)
        if self.grad:
            from ..finite_diff import central_difference_grad

            return np.asarray(central_difference_grad(lambda *a: self.fn(xp, *a))(*wide))
        return _as_host(self.fn(xp, *wide))

    def work_for(self, size: int, itemsize: int) -> Work | None:
        """The work model at a size, if the workload declares one."""
        return self.work(size, itemsize) if self.work else None

    # -- binding to a backend -------------------------------------------------------------------
    def bind(self, backend: "Backend", mode: str, arrays: tuple[Any, ...],
             dtype: str = "float64") -> Bound:
        """The callable to time on ``backend`` for ``mode`` ("latency", "throughput", "compiled")."""
        fn = self.overrides.get(backend.name, self.fn)
        if self.namespace == "backend":
            xp: Any = Context(backend, dtype, backend.namespace("native"))
        else:
            xp = backend.namespace(self.namespace)
        if mode == "compiled":
            fn = self.compile_overrides.get(backend.name, fn)
            if self.grad:
                inner = backend.grad(lambda *a: fn(xp, *a))
                return Bound(backend.compile(inner), arrays,
                             f"{backend.compile_method} of {backend.grad_method}")
            return Bound(backend.compile(lambda *a: fn(xp, *a)), arrays, backend.compile_method)
        if self.grad:
            return Bound(backend.grad(lambda *a: fn(xp, *a)), arrays, backend.grad_method)
        # xp travels as the first argument so the timed call has no wrapper layer around fn.
        return Bound(fn, (xp, *arrays), "eager")


def _source_of(fn: ArrayFn) -> str:
    module = getattr(fn, "__module__", "") or ""
    if module.startswith("arraybench."):
        return "builtin"
    code = getattr(fn, "__code__", None)
    return code.co_filename if code is not None else module


def _cast(a: np.ndarray, dtype: str) -> np.ndarray:
    if np.issubdtype(a.dtype, np.complexfloating):
        return np.ascontiguousarray(a.astype(np.result_type(np.dtype(dtype), np.complex64)))
    if np.issubdtype(a.dtype, np.floating):
        return np.ascontiguousarray(a.astype(np.dtype(dtype)))
    return np.ascontiguousarray(a)


def _cast_list(values: list, dtype: str) -> list:
    """A Python list whose floats are exactly representable in ``dtype``."""
    return np.asarray(values, dtype=np.dtype(dtype)).tolist()


def _widen(a: Any) -> Any:
    if isinstance(a, list):
        return np.asarray(a, dtype=np.float64)
    if np.issubdtype(a.dtype, np.complexfloating):
        return a.astype(np.complex128)
    if np.issubdtype(a.dtype, np.floating):
        return a.astype(np.float64)
    return a.copy()


def _as_host(x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return tuple(np.asarray(v) for v in x)
    return np.asarray(x)


def _numpy_namespace(kind: str) -> Any:
    if kind == "array_api":
        import array_api_compat

        return array_api_compat.array_namespace(np.empty(0))
    return np


REGISTRY: dict[str, Workload] = {}


def workload(
    *,
    sizes: Mapping[str, int],
    inputs: InputsFn,
    name: str | None = None,
    description: str | None = None,
    reference: ArrayFn | None = None,
    check: Check | None = None,
    work: Callable[[int, int], Work] | None = None,
    grad: bool = False,
    namespace: str = "array_api",
    iterations: Mapping[str, int] | None = None,
    placement: str = "device",
    backends: tuple[str, ...] | None = None,
    modes: tuple[str, ...] | None = None,
    outputs: tuple[str, ...] | None = None,
) -> Callable[[ArrayFn], Workload]:
    """Define a workload from a function of ``(xp, *arrays)``.

    - ``sizes``: named sizes, e.g. ``{"small": 1_000, "large": 1_000_000}``.
    - ``inputs``: ``(size, rng) -> array or tuple of arrays`` (host NumPy, float64).
    - ``reference``: NumPy float64 function of the inputs; default: the function itself under NumPy.
    - ``check``: how the result is judged (``Check.elementwise()``, ``Check.normwise(growth)``...).
    - ``work``: ``(size, itemsize) -> Work(flops, bytes)``, for the roofline.
    - ``grad``: time the gradient of the (scalar) function with respect to its first input.
    - ``namespace``: ``"array_api"`` (array-api-compat; portable) or ``"native"`` (the library's own
      module: ``numpy``, ``torch``, ``jax.numpy``, ``cupy``; no wrapper overhead), or ``"backend"``
      (a ``Context`` with the backend itself, for construction and transfer workloads).
    - ``placement``: ``"device"`` (inputs moved to the device before timing) or ``"host"``.
    - ``backends`` / ``modes``: restrict where the workload applies; elsewhere it is skipped.
    - ``outputs``: names of the outputs when the function returns a tuple.
    """

    def decorate(fn: ArrayFn) -> Workload:
        wl = Workload(
            name=name or fn.__name__,
            fn=fn,
            inputs=inputs,
            sizes=dict(sizes),
            description=description or (fn.__doc__ or "").strip().split("\n")[0],
            reference=reference,
            check=check or (Check.normwise(lambda n: n) if grad else Check.elementwise()),
            work=work,
            grad=grad,
            namespace=namespace,
            iterations=dict(iterations or {}),
            source=_source_of(fn),
            placement=placement,
            backends=tuple(backends) if backends is not None else None,
            modes=tuple(modes) if modes is not None else None,
            outputs=tuple(outputs) if outputs is not None else None,
        )
        REGISTRY[wl.name] = wl
        return wl

    return decorate
