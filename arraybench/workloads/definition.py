"""What a workload is: one function of ``(xp, *arrays)``, run on every library, with its sizes,
inputs, reference, check, work model and per-library overrides; and the decorator that makes one
(the guide is ``docs/workloads.md``); and the sizes' syntax: a label (``small``), an element count
(``4096``, ``1e6``) or a geometric range (``16:4096[:steps]``), read the same by the command line,
the API and ``arraybench timeit``."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np

from ..errors import UsageError
from .check import Check
from .params import (ArrayFn, InputsFn, Params, ParamsSpec, accepted, array_parameters, check_settings, check_takes,
                     default_inputs, default_settings, definition_line, mutated_inputs, source_of, typed)

Namespace = Literal["array_api", "native", "backend"]
Placement = Literal["device", "host"]
NAMESPACES: tuple[str, ...] = ("array_api", "native", "backend")
PLACEMENTS: tuple[str, ...] = ("device", "host")

#: The sizes of a workload that names none: the seed article's small and large vectors.
DEFAULT_SIZES: dict[str, int] = {"small": 1_000, "large": 1_000_000}

#: Names end up in cell keys ("a|small|numpy|..."), on the command line and in plot file names.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


@dataclass(frozen=True)
class Work:
    """The work one call does: floating-point operations and bytes moved to and from memory."""

    flops: float
    bytes: float


def _amount(value: Any, what: str) -> float:
    """A work model's count as a finite float; ``ValueError`` (the cell fails) beyond any float."""
    try:
        amount = float(value)
    except OverflowError:
        raise ValueError(f"the work model gives {what} beyond any float") from None
    if not math.isfinite(amount):
        raise ValueError(f"the work model gives {what} = {amount}")
    return amount


@dataclass
class Workload:
    """An operation defined once for every library. Create with ``@workload(...)``."""

    name: str
    fn: ArrayFn
    inputs: InputsFn
    sizes: dict[str, int]
    description: str = ""
    reference: ArrayFn | None = None
    check: Check = field(default_factory=Check.derived)
    work: Callable[[int, int], Any] | None = None
    grad: bool = False
    namespace: Namespace = "array_api"
    #: "builtin", or the file the workload was defined in.
    source: str = "builtin"
    overrides: dict[str, ArrayFn] = field(default_factory=dict)
    #: "device": inputs are placed on the device before timing; "host": they stay on the host.
    placement: Placement = "device"
    #: Backends this workload applies to (None: all); others are skipped as not applicable.
    backends: tuple[str, ...] | None = None
    #: Modes this workload applies to (None: all).
    modes: tuple[str, ...] | None = None
    #: Names of the outputs when the function returns several.
    outputs: tuple[str, ...] | None = None
    #: The namespace an override asked for, by backend (default: the workload's ``namespace``).
    override_namespaces: dict[str, Namespace] = field(default_factory=dict)
    #: Inputs the function changes in place (by parameter name; "*" for all): restored before
    #: every call, outside the timed span.
    mutates: tuple[str, ...] = ()
    #: Settings passed by keyword, over the function's own keyword defaults (``params``).
    params: ParamsSpec = None
    #: For ``grad=True``: the workload's own gradient by backend (``@wl.gradient("numpy")``).
    gradients: dict[str, ArrayFn] = field(default_factory=dict)
    #: The namespace a gradient asked for, by backend (default: the workload's ``namespace``).
    gradient_namespaces: dict[str, Namespace] = field(default_factory=dict)
    #: What the size n counts ("the side of each n x n matrix"); "" where unsaid.
    size_means: str = ""

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

    def override(self, *backends: str, namespace: Namespace | None = None) -> Callable[[ArrayFn], ArrayFn]:
        """Register a backend-specific spelling: ``@wl.override("torch")`` on ``fn(xp, *arrays)``;
        ``namespace="native"`` hands it the library's own module."""
        return self._register("override", self.overrides, self.override_namespaces, backends, namespace)

    def gradient(self, *backends: str, namespace: Namespace | None = None) -> Callable[[ArrayFn], ArrayFn]:
        """Give a ``grad=True`` workload its own gradient on some libraries: ``@wl.gradient("numpy")``
        on ``fn(xp, *arrays)`` returning the loss's gradient in the first input, timed as written
        ("analytic gradient") instead of finite differences, and checked as any."""
        if not self.grad:
            raise TypeError(f"{self.name}: gradient() gives the gradient of a grad=True workload; "
                            "this one is not (use override() for another spelling of the function)")
        return self._register("gradient", self.gradients, self.gradient_namespaces, backends, namespace)

    def _register(self, what: str, functions: dict[str, ArrayFn], namespaces: dict[str, Namespace],
                  backends: tuple[str, ...], namespace: Namespace | None) -> Callable[[ArrayFn], ArrayFn]:
        from ..backends import SPECS

        unknown = [b for b in backends if b not in SPECS]
        if unknown or not backends:
            raise ValueError(f"{what}() needs backend names out of {', '.join(SPECS)}; got {backends!r}")
        if namespace is not None and namespace not in NAMESPACES:
            raise ValueError(f"namespace must be one of {NAMESPACES}, not {namespace!r}")

        def register(fn: ArrayFn) -> ArrayFn:
            # A dict of params holds the same settings at every size; an n -> dict is checked per size.
            settings = default_settings(self.fn) if callable(self.params) else self.params_for(0)
            check_takes(self.name, fn, settings, what)
            for b in backends:
                functions[b] = fn
                if namespace is None:
                    namespaces.pop(b, None)
                else:
                    namespaces[b] = namespace
            return fn

        return register

    def analytic_gradient(self, backend: str) -> "Workload | None":
        """This workload with its own gradient as ``backend``'s function (nothing to differentiate),
        or None where it gives ``backend`` none."""
        own = self.gradients.get(backend) if self.grad else None
        if own is None:
            return None
        namespaces = {backend: self.gradient_namespaces[backend]} if backend in self.gradient_namespaces else {}
        return replace(self, grad=False, overrides={backend: own}, override_namespaces=namespaces)

    def function_for(self, backend: str) -> ArrayFn:
        """The function a backend runs: its override, or the one definition."""
        return self.overrides.get(backend, self.fn)

    def namespace_for(self, backend: str) -> Namespace:
        """The kind of namespace (``array_api`` or ``native``) a backend's function receives."""
        return self.override_namespaces.get(backend, self.namespace)

    def origin(self, backend: str | None = None) -> str:
        """Where the function a backend runs is defined: ``path:line: def name(xp, ...):``."""
        own = self.gradients.get(backend) if (backend and self.grad) else None
        return definition_line(own or (self.function_for(backend) if backend else self.fn))

    def not_applicable(self, backend: str, mode: str) -> str | None:
        """Why this workload does not apply to a backend or mode, or None when it does."""
        if self.backends is not None and backend not in self.backends:
            return f"not applicable: {self.name} runs on {', '.join(self.backends)}"
        if self.modes is not None and mode not in self.modes:
            return f"not applicable: {self.name} has no {mode} mode"
        return None

    def work_for(self, size: int, itemsize: int, params: Mapping[str, Any] | None = None) -> Work | None:
        """The work model at a size (and settings, which ``work`` gets by name), if declared."""
        if not self.work:
            return None
        settings = self.params_for(size) if params is None else params
        w = self.work(size, itemsize, **accepted(self.work, settings, filled=2))
        flops, moved = (w.flops, w.bytes) if isinstance(w, Work) else w  # or a (flops, bytes) pair
        # As floats, as declared: an exact n**4 beyond 2**63 is no whole number a file holds.
        return Work(flops=_amount(flops, "flops"), bytes=_amount(moved, "bytes"))

    def functions(self) -> list[Callable[..., Any]]:
        """Every user function this workload holds (for shipping it to workers by value)."""
        found = [self.fn, self.inputs, self.reference, self.work, *self.overrides.values(),
                 *self.gradients.values(), self.params if callable(self.params) else None]
        return [f for f in found if f is not None]

    def params_for(self, size: int) -> Params:
        """The settings at a size: the function's keyword defaults, updated by ``params=``."""
        given = self.params(size) if callable(self.params) else self.params or {}
        return {**default_settings(self.fn), **check_settings(self.name, given)}

    def call_settings(self, size: int, given: Mapping[str, Any]) -> dict[str, Any]:
        """The settings a call gets: its own at a size, ``given`` (the cell's) over them, typed."""
        return typed(self.fn, {**self.params_for(size), **given})

    def result_of(self, result: Any, arrays: Sequence[Any]) -> Any:
        """What a call produced: its return value, or the inputs an in-place function changed."""
        if result is not None or not self.mutates:
            return result
        changed = [arrays[i] for i in self.result_positions(len(arrays))]
        return changed[0] if len(changed) == 1 else tuple(changed)

    def result_positions(self, count: int) -> tuple[int, ...]:
        """The positions of the inputs an in-place function returns, in ``mutates=`` order (as a
        functional override for JAX would return them)."""
        if "*" in self.mutates:
            return tuple(range(count))
        names = [p.name for p in array_parameters(self.fn) or []][:count]
        return tuple(names.index(name) for name in self.mutates if name in names)

    def mutated_positions(self, count: int) -> tuple[int, ...]:
        """Which of ``count`` positional arrays the function changes in place (``mutates=``)."""
        return tuple(sorted(set(self.result_positions(count))))


def _sizes(sizes: Mapping[str, int] | Sequence[int] | int | None) -> dict[str, int]:
    """Named sizes from a mapping, a list of numbers (named by themselves) or one number."""
    if sizes is None:
        return dict(DEFAULT_SIZES)
    if isinstance(sizes, Mapping):
        out = {k: int(v) if isinstance(v, np.integer) else v for k, v in sizes.items()}
    else:
        numbers = sizes if isinstance(sizes, (list, tuple)) else [sizes]
        bad = [n for n in numbers if not isinstance(n, (int, np.integer)) or isinstance(n, bool)]
        if bad:
            raise TypeError(f"sizes must be a dict such as {{'small': 1000}}, a list of whole numbers or "
                            f"a whole number, not {bad[0]!r}")
        out = {str(int(n)): int(n) for n in numbers}
    if not out:
        raise ValueError("sizes is empty; leave it out for the default small and large sizes")
    for label, n in out.items():
        if not isinstance(label, str) or not (label.isidentifier() or label == str(n)):
            raise ValueError(f"size label {label!r}: use a name such as 'small' (letters, digits, _) "
                             "so that --sizes can select it")
    return out


MAX_SIZE = 10**10  # elements; beyond this no machine holds the inputs
MAX_STEPS = 1000  # sizes in one LO:HI:STEPS range; more would take days, not a benchmark


def parse_sizes(text: str | int | Sequence[Any]) -> list[str]:
    """``small,large``, explicit sizes ``100,1000``, or a geometric range ``16:4096[:steps]``; a
    number, or a list of these, as the API takes them."""
    if not isinstance(text, str):
        text = ",".join(str(s) for s in ([text] if isinstance(text, (int, np.integer)) else text))
    parts = [p.strip() for p in text.split(",") if p.strip()]
    out = [s for part in parts for s in (map(str, geometric_range(part)) if ":" in part else [part])]
    if not out:
        raise UsageError(f"--sizes {text!r} names no size; use e.g. small,large or 100,1000 or 16:4096")
    return out


def geometric_range(spec: str) -> list[int]:
    """``lo:hi`` doubles from lo to hi; ``lo:hi:k`` takes k geometrically spaced sizes."""
    pieces = spec.split(":")
    if len(pieces) not in (2, 3):
        raise UsageError(f"size range {spec!r} must be LO:HI or LO:HI:STEPS")
    lo, hi = (parse_size(p) for p in pieces[:2])
    if hi < lo:
        raise UsageError(f"size range {spec!r} goes down; write it as {hi}:{lo}")
    if len(pieces) == 3:
        try:
            steps = int(pieces[2].replace("_", ""))
        except ValueError:
            raise UsageError(f"STEPS {pieces[2]!r} is not a whole number") from None
        if steps < 2:
            raise UsageError(f"size range {spec!r}: STEPS must be at least 2")
        if steps > MAX_STEPS:
            raise UsageError(f"size range {spec!r}: STEPS must be at most {MAX_STEPS}")
        ratio = (hi / lo) ** (1 / (steps - 1))
        return sorted({round(lo * ratio**i) for i in range(steps)})
    doublings = int(math.log2(hi / lo)) + 1
    return sorted({*(lo << k for k in range(doublings) if lo << k < hi), hi})


def parse_size(text: str) -> int:
    """An element count such as ``4096``, ``1e6`` or ``1_000``; ``UsageError`` when it is not one."""
    text = text.strip().replace("_", "")
    try:
        value = float(text) if ("e" in text.lower() or "." in text) else int(text)
    except ValueError:
        raise UsageError(f"size {text!r} is not a number (use a label such as small or a count)") from None
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise UsageError(f"size {text!r} is not a whole number")
    n = int(value)
    if n <= 0:
        raise UsageError(f"size {n} must be positive")
    if n > MAX_SIZE:
        raise UsageError(f"size {n} is absurdly large (the limit is {MAX_SIZE:.0e} elements)")
    return n


def define(
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
    namespace: Namespace = "array_api",
    placement: Placement = "device",
    backends: tuple[str, ...] | None = None,
    modes: tuple[str, ...] | None = None,
    outputs: tuple[str, ...] | None = None,
    mutates: Sequence[str] | str | bool = (),
    params: ParamsSpec = None,
    size_means: str | None = None,
) -> Any:
    """Define a workload from a function of ``(xp, *arrays)``; ``@workload`` alone takes every default.

    - ``sizes``: named sizes (default ``{"small": 1_000, "large": 1_000_000}``), a list of numbers
      (each named by itself) or one number.
    - ``inputs``: ``(n, rng)`` or ``(n)`` -> an array, a tuple/list of them, or a dict by parameter
      name (host NumPy). Default: one standard-normal vector of length ``n`` per parameter.
    - ``reference``: NumPy float64 function of the inputs; default: the function itself under NumPy
      (for ``grad=True``: its gradient by central differences).
    - ``check``: how the result is judged (``Check.elementwise()``, ``Check.normwise(growth)``...).
    - ``work``: ``(n, itemsize) -> Work(flops, bytes)`` or ``(flops, bytes)``, for the roofline.
    - ``grad``: time the gradient of the scalar function in its first input (autodiff, else finite
      differences, unless ``@wl.gradient`` gives a library its own).
    - ``namespace``: ``"array_api"`` (portable), ``"native"`` (the library's own module) or
      ``"backend"`` (a ``Context`` with the backend, for construction and transfer workloads).
    - ``name``, ``description``: default to the function's name and its docstring's first line.
    - ``placement``: ``"device"`` (inputs moved to the device before timing) or ``"host"``.
    - ``backends`` / ``modes``: restrict where the workload applies; elsewhere it is skipped.
    - ``outputs``: names of the outputs when the function returns a tuple.
    - ``mutates``: the inputs the function changes in place, by name, or True for all: restored
      outside the timed span; a function that returns None returns them.
    - ``params``: settings passed by keyword (``{"tsteps": 20}`` or ``n -> dict``), over the
      function's own scalar keyword defaults; part of the cell, static under compilers.
    - ``size_means``: what n counts, as a plot's axis says it (``"rows of the matrix"``).
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
        changed = mutated_inputs(wl_name, f, mutates)
        if params is not None and not callable(params):  # an n -> dict is checked at each size
            given = check_settings(wl_name, params)
            check_takes(wl_name, f, given, f"params={given!r}:")
        return Workload(
            name=wl_name,
            fn=f,
            inputs=inputs if inputs is not None else default_inputs(f),
            sizes=_sizes(sizes),
            description=description or (f.__doc__ or "").strip().split("\n")[0],
            reference=reference,
            check=check or (Check.normwise(lambda n: n) if grad else Check.derived()),
            work=work,
            grad=grad,
            namespace=namespace,
            source=source_of(f),
            placement=placement,
            backends=tuple(backends) if backends is not None else None,
            modes=tuple(modes) if modes is not None else None,
            outputs=tuple(outputs) if outputs is not None else None,
            mutates=changed,
            params=params,
            size_means=size_means if size_means is not None else (
                "elements of each input" if inputs is None else ""),
        )

    return decorate(fn) if fn is not None else decorate
