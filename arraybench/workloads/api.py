"""The workload API: one definition of an operation, run on every library.

A workload is a function of an array namespace ``xp`` and its input arrays, written once against the
`Array API standard <https://data-apis.org/array-api/latest/>`_: arraybench hands it the namespace of
the library being measured (``array_api_compat`` for NumPy, PyTorch and CuPy; ``jax.numpy`` for JAX).
The same decorator defines the built-in workloads and a user's own. The smallest one::

    import arraybench

    @arraybench.workload
    def softplus(xp, x):
        return xp.log1p(xp.exp(x))

runs at the default sizes (``small`` = 1,000 and ``large`` = 1,000,000 elements), on one standard-normal
vector per argument, and is checked against itself run by NumPy in float64. Everything else is
optional::

    @arraybench.workload(
        sizes={"small": 1_000, "large": 1_000_000},     # or [1_000, 10**6], or one number
        inputs=lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n)),
        reference=lambda x, y: 2.0 * x + y,             # NumPy float64; default: the function itself
        check=arraybench.Check.elementwise(ulps=4),     # how far from the reference is still right
        work=lambda n, itemsize: arraybench.Work(flops=2 * n, bytes=3 * n * itemsize),
    )
    def axpy(xp, x, y):
        return 2.0 * x + y

    @axpy.override("torch", namespace="native")          # where one library needs its own spelling
    def _axpy_torch(torch, x, y):
        return torch.add(y, x, alpha=2.0)

Then ``arraybench run --workload-file my_bench.py`` measures it on every library and device.

Inputs
    ``inputs(n, rng)`` builds host NumPy arrays for a size ``n`` from a seeded generator, so every
    library and every process sees the same values; floating arrays are cast to the run's dtype
    (``--dtype``), integer and boolean arrays are kept. It may return one array, a tuple or list of
    arrays (passed in order), or a dict keyed by the function's parameter names. ``inputs(n)`` (no
    generator) is fine for deterministic inputs. Without ``inputs``, each parameter after ``xp``
    gets a standard-normal float64 vector of length ``n``.

Sizes
    Named sizes, selected with ``--sizes small`` (or any element count, ``--sizes 4096``). A run
    without ``--sizes`` measures each workload at all of its own sizes. What ``n`` means (elements,
    rows, a batch) is up to ``inputs``.

Reference and check
    The result is compared with ``reference(*inputs)`` computed by NumPy in float64 from the very
    values the library received; without ``reference``, the function itself is run through NumPy's
    namespace in float64. ``check`` says how close is right (``Check.elementwise``,
    ``Check.normwise(growth)``, ``Check.exact``); a result outside it is ``wrong``, never plotted as a
    valid time. A function may return one array or a tuple of arrays (each is checked).

Work model
    ``work(n, itemsize)`` returns ``Work(flops, bytes)`` (or a ``(flops, bytes)`` tuple): the
    floating-point operations one call does and the bytes it must move, to set the time against the
    machine's peak.

Gradients
    With ``grad=True`` the function returns a scalar loss, and arraybench times its gradient with
    respect to the first input: ``jax.grad`` on JAX, autograd on PyTorch (a fresh leaf per call, so
    nothing accumulates), and forward finite differences where the library has no autodiff (NumPy,
    CuPy: one extra forward pass per parameter, labelled ``finite differences`` in results). Without
    ``reference``, the reference gradient is computed by central differences in float64; the check's
    tolerance then grows by that reference's own estimated error (recorded), so a correct gradient
    is never called wrong. Give ``reference`` for a tight float64 check, and for more than a few
    thousand parameters (the default costs four evaluations per parameter).

Namespaces
    ``namespace="array_api"`` (the default) is portable; ``"native"`` passes the library's own module
    (``numpy``, ``torch``, ``jax.numpy``, ``cupy``), without array-api-compat's thin wrappers. An
    override can ask for its own: ``@wl.override("torch", namespace="native")``.

Write the file so that importing it is cheap and imports no array library other than NumPy:
arraybench imports it in the parent process to plan the run, and again in each worker. Import
``torch`` or ``jax`` inside an override if one needs it.
"""

from __future__ import annotations

import inspect
import linecache
import re
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from ..accuracy import Check

if TYPE_CHECKING:
    from ..backends.base import Backend

ArrayFn = Callable[..., Any]
#: ``(n, rng) -> arrays`` or ``(n) -> arrays``: one array, a tuple or list, or a dict by parameter name.
InputsFn = Callable[..., Any]

NAMESPACES = ("array_api", "native", "backend")
PLACEMENTS = ("device", "host")

#: The sizes of a workload that names none: the seed article's small and large vectors.
DEFAULT_SIZES: dict[str, int] = {"small": 1_000, "large": 1_000_000}

#: Names end up in cell keys ("a|small|numpy|..."), on the command line and in plot file names.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")

_CENTRAL_NOTE = ("reference gradient by central differences (no reference= given): "
                 "the tolerance includes its estimated error")


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


@dataclass(frozen=True)
class Reference:
    """The float64 reference result, and how far off the reference itself may be.

    ``error`` is in the measure of the workload's ``Check`` (what ``Check.error`` returns): zero for
    a reference computed directly, the estimated error of a finite-difference gradient otherwise.
    ``note`` says where a nonzero error comes from.
    """

    value: Any
    error: float = 0.0
    note: str = ""


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
    work: Callable[[int, int], Any] | None = None
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
    #: The namespace an override asked for, by backend (default: the workload's ``namespace``).
    override_namespaces: dict[str, str] = field(default_factory=dict)

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

    def override(self, *backends: str, namespace: str | None = None) -> Callable[[ArrayFn], ArrayFn]:
        """Register a backend-specific spelling: ``@wl.override("torch")`` on ``fn(xp, *arrays)``.

        ``namespace="native"`` hands the override the library's own module instead of the
        workload's namespace (``torch`` rather than array-api-compat's wrapper of it).
        """
        from ..backends import SPECS

        unknown = [b for b in backends if b not in SPECS]
        if unknown or not backends:
            raise ValueError(f"override() needs backend names out of {', '.join(SPECS)}; got {backends!r}")
        if namespace is not None and namespace not in NAMESPACES:
            raise ValueError(f"namespace must be one of {NAMESPACES}, not {namespace!r}")

        def register(fn: ArrayFn) -> ArrayFn:
            for b in backends:
                self.overrides[b] = fn
                if namespace is None:
                    self.override_namespaces.pop(b, None)
                else:
                    self.override_namespaces[b] = namespace
            return fn

        return register

    def function_for(self, backend: str) -> ArrayFn:
        """The function a backend runs: its override, or the one definition."""
        return self.overrides.get(backend, self.fn)

    def namespace_for(self, backend: str) -> str:
        """The kind of namespace (``array_api`` or ``native``) a backend's function receives."""
        return self.override_namespaces.get(backend, self.namespace)

    def origin(self, backend: str | None = None) -> str:
        """Where the function a backend runs is defined: ``path:line: def name(xp, ...):``."""
        return definition_line(self.function_for(backend) if backend else self.fn)

    # -- inputs and reference -------------------------------------------------------------------
    def build_inputs(self, size: int, dtype: str, seed: int = 0) -> tuple[np.ndarray, ...]:
        """The host inputs for a size, cast to ``dtype``; identical for every backend and process."""
        rng = np.random.default_rng([seed, zlib.crc32(self.name.encode()), size])
        arrays = self._arrange(_call_inputs(self.inputs, size, rng))
        return tuple(_cast_list(a, dtype) if isinstance(a, list) else _cast(np.asarray(a), dtype)
                     for a in arrays)

    def not_applicable(self, backend: str, mode: str) -> str | None:
        """Why this workload does not apply to a backend or mode, or None when it does."""
        if self.backends is not None and backend not in self.backends:
            return f"not applicable: {self.name} runs on {', '.join(self.backends)}"
        if self.modes is not None and mode not in self.modes:
            return f"not applicable: {self.name} has no {mode} mode"
        return None

    def _arrange(self, made: Any) -> tuple[Any, ...]:
        """Inputs as the positional arguments of the function, checked against its parameters."""
        params = array_parameters(self.fn)
        if isinstance(made, Mapping):
            if params is None:
                raise TypeError(f"{self.name}: inputs returned a dict, but the function takes *args")
            names = [p.name for p in params]
            extra = [k for k in made if k not in names]
            missing = [p.name for p in params if p.name not in made and p.default is p.empty]
            if extra or missing:
                raise TypeError(
                    f"{self.name}: inputs returned {sorted(made)}, the function takes {names}"
                    + (f" (unknown: {extra})" if extra else "") + (f" (missing: {missing})" if missing else ""))
            arrays = tuple(made[n] for n in names if n in made)
        elif isinstance(made, (tuple, list)):
            arrays = tuple(made)
        else:
            arrays = (made,)
        if params is not None:
            least = sum(1 for p in params if p.default is p.empty)
            if not least <= len(arrays) <= len(params):
                takes = f"{least}" if least == len(params) else f"{least} to {len(params)}"
                raise TypeError(f"{self.name}: inputs made {len(arrays)} array(s), but "
                                f"{self.fn.__name__} takes {takes} after xp ({definition_line(self.fn)})")
        return arrays

    def reference_output(self, inputs: tuple[np.ndarray, ...]) -> Any:
        """The NumPy float64 result for inputs already cast to the run's dtype.

        The reference sees exactly the values the libraries see, promoted to float64, so the error
        measured is the library's own and not the cast's.
        """
        return self.reference_result(inputs).value

    def reference_result(self, inputs: tuple[np.ndarray, ...]) -> Reference:
        """The float64 reference with its own error (see ``Reference``)."""
        wide = tuple(_widen(a) for a in inputs)
        if self.reference is not None:
            return Reference(_as_host(self.reference(*wide)))
        fn = self.function_for("numpy")
        xp = _numpy_namespace(self.namespace_for("numpy"))
        if self.grad:
            from ..finite_diff import central_difference_grad_with_error

            if not wide or not np.issubdtype(wide[0].dtype, np.floating):
                got = wide[0].dtype if wide else "no input"
                raise TypeError(f"{self.name}: grad=True differentiates with respect to the first "
                                f"input, which must be a floating array (got {got})")
            value, abs_error = central_difference_grad_with_error(lambda *a: fn(xp, *a))(*wide)
            error = self.check.error(value + abs_error, value) if np.any(abs_error) else 0.0
            return Reference(value, float(error), _CENTRAL_NOTE if error else "")
        return Reference(_as_host(fn(xp, *wide)))

    def work_for(self, size: int, itemsize: int) -> Work | None:
        """The work model at a size, if the workload declares one."""
        if not self.work:
            return None
        w = self.work(size, itemsize)
        if isinstance(w, Work):
            return w
        flops, moved = w  # a (flops, bytes) pair
        return Work(flops=float(flops), bytes=float(moved))

    # -- binding to a backend -------------------------------------------------------------------
    def bind(self, backend: "Backend", mode: str, arrays: tuple[Any, ...],
             dtype: str = "float64") -> Bound:
        """The callable to time on ``backend`` for ``mode`` ("latency", "throughput", "compiled")."""
        fn = self.function_for(backend.name)
        if self.namespace == "backend":
            xp: Any = Context(backend, dtype, backend.namespace("native"))
        else:
            xp = backend.namespace(self.namespace_for(backend.name))
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


def definition_line(fn: Any) -> str:
    """``path:line: def name(...):`` for a function (its ``def`` line, not its decorators)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return getattr(fn, "__qualname__", repr(fn))
    path, first = code.co_filename, code.co_firstlineno
    is_lambda = getattr(fn, "__name__", "") == "<lambda>"
    for lineno in range(first, first + 60):
        line = linecache.getline(path, lineno)
        if not line:
            break
        text = line.strip()
        if ("lambda" in text) if is_lambda else text.startswith(("def ", "async def ")):
            return f"{path}:{lineno}: {text}"
    return f"{path}:{first}: {linecache.getline(path, first).strip()}"


def array_parameters(fn: Any) -> list[inspect.Parameter] | None:
    """The positional parameters after ``xp``; None where the function takes ``*args``."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return None
    return [p for p in params if p.kind in positional][1:]


def _positional_arity(fn: Any) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return 2
    return sum(1 for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                               inspect.Parameter.POSITIONAL_OR_KEYWORD))


def _call_inputs(inputs: InputsFn, size: int, rng: np.random.Generator) -> Any:
    # ``inputs(n)`` suits deterministic inputs; anything random must use the seeded generator.
    return inputs(size, rng) if _positional_arity(inputs) >= 2 else inputs(size)


def default_inputs(fn: ArrayFn) -> InputsFn:
    """One standard-normal float64 vector of length ``n`` per required parameter after ``xp``."""
    params = array_parameters(fn)
    name = getattr(fn, "__name__", "the function")
    if params is None:
        raise TypeError(f"{name} takes *args, so arraybench cannot tell how many arrays it needs: "
                        "give inputs=lambda n, rng: (...)")
    count = sum(1 for p in params if p.default is p.empty)
    if count == 0:
        raise TypeError(f"{name} takes no array after xp (a workload is a function of "
                        "(xp, *arrays), xp first): add its parameters, or give inputs=...")

    def standard_normal_vectors(n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        return tuple(rng.standard_normal(n) for _ in range(count))

    return standard_normal_vectors


def _sizes(sizes: Mapping[str, int] | Sequence[int] | int | None) -> dict[str, int]:
    """Named sizes from a mapping, a list of numbers (named by themselves) or one number."""
    if sizes is None:
        return dict(DEFAULT_SIZES)
    if isinstance(sizes, Mapping):
        out = {k: int(v) if isinstance(v, np.integer) else v for k, v in sizes.items()}
    elif isinstance(sizes, (int, np.integer)) and not isinstance(sizes, bool):
        out = {str(int(sizes)): int(sizes)}
    elif isinstance(sizes, (list, tuple)):
        out = {}
        for n in sizes:
            if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
                raise TypeError(f"sizes must be whole numbers, not {n!r}")
            out[str(int(n))] = int(n)
    else:
        raise TypeError(f"sizes must be a dict such as {{'small': 1000}}, a list of numbers or a "
                        f"number, not {type(sizes).__name__}")
    if not out:
        raise ValueError("sizes is empty; leave it out for the default small and large sizes")
    for label, n in out.items():
        if not isinstance(label, str) or not (label.isidentifier() or label == str(n)):
            raise ValueError(f"size label {label!r}: use a name such as 'small' (letters, digits, _) "
                             "so that --sizes can select it")
    return out


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
    fn: ArrayFn | None = None,
    /,
    *,
    sizes: Mapping[str, int] | Sequence[int] | int | None = None,
    inputs: InputsFn | None = None,
    name: str | None = None,
    description: str | None = None,
    reference: ArrayFn | None = None,
    check: Check | None = None,
    work: Callable[[int, int], Any] | None = None,
    grad: bool = False,
    namespace: str = "array_api",
    iterations: Mapping[str, int] | None = None,
    placement: str = "device",
    backends: tuple[str, ...] | None = None,
    modes: tuple[str, ...] | None = None,
    outputs: tuple[str, ...] | None = None,
) -> Any:
    """Define a workload from a function of ``(xp, *arrays)``; ``@workload`` alone takes every default.

    - ``sizes``: named sizes, e.g. ``{"small": 1_000, "large": 1_000_000}`` (the default), a list of
      numbers ``[1_000, 10**6]`` (each named by itself) or one number.
    - ``inputs``: ``(n, rng) -> array, tuple/list of arrays, or dict by parameter name`` (host NumPy,
      float64); ``(n) -> ...`` for deterministic inputs. Default: one standard-normal vector of
      length ``n`` per parameter after ``xp``.
    - ``reference``: NumPy float64 function of the inputs; default: the function itself under NumPy
      (for ``grad=True``: its gradient by central differences, see the module docstring).
    - ``check``: how the result is judged (``Check.elementwise()``, ``Check.normwise(growth)``...).
    - ``work``: ``(n, itemsize) -> Work(flops, bytes)`` or ``(flops, bytes)``, for the roofline.
    - ``grad``: time the gradient of the (scalar) function with respect to its first input.
    - ``namespace``: ``"array_api"`` (array-api-compat; portable) or ``"native"`` (the library's own
      module: ``numpy``, ``torch``, ``jax.numpy``, ``cupy``; no wrapper overhead), or ``"backend"``
      (a ``Context`` with the backend itself, for construction and transfer workloads).
    - ``name``, ``description``: default to the function's name and the first line of its docstring.
    - ``placement``: ``"device"`` (inputs moved to the device before timing) or ``"host"``.
    - ``backends`` / ``modes``: restrict where the workload applies; elsewhere it is skipped.
    - ``outputs``: names of the outputs when the function returns a tuple.
    """

    def decorate(f: ArrayFn) -> Workload:
        if isinstance(f, Workload) or not callable(f):
            raise TypeError(f"@workload decorates a function of (xp, *arrays), not {f!r}")
        wl_name = name or f.__name__
        if wl_name == "<lambda>":
            raise ValueError("a workload made from a lambda needs a name: workload(name=...)(lambda xp, x: ...)")
        if not isinstance(wl_name, str) or not _NAME.fullmatch(wl_name):
            raise ValueError(f"workload name {wl_name!r}: use letters, digits, '_', '-' or '.'")
        for what, value in (("inputs", inputs), ("reference", reference), ("work", work)):
            if value is not None and not callable(value):
                raise TypeError(f"{wl_name}: {what} must be a function, not {type(value).__name__}")
        if check is not None and not isinstance(check, Check):
            raise TypeError(f"{wl_name}: check must be an arraybench.Check, e.g. Check.normwise(...)")
        wl = Workload(
            name=wl_name,
            fn=f,
            inputs=inputs if inputs is not None else default_inputs(f),
            sizes=_sizes(sizes),
            description=description or (f.__doc__ or "").strip().split("\n")[0],
            reference=reference,
            check=check or (Check.normwise(lambda n: n) if grad else Check.elementwise()),
            work=work,
            grad=grad,
            namespace=namespace,
            iterations=dict(iterations or {}),
            source=_source_of(f),
            placement=placement,
            backends=tuple(backends) if backends is not None else None,
            modes=tuple(modes) if modes is not None else None,
            outputs=tuple(outputs) if outputs is not None else None,
        )
        REGISTRY[wl.name] = wl
        return wl

    if fn is not None:
        return decorate(fn)
    return decorate
