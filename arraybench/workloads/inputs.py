"""Building a workload's inputs: host NumPy arrays, the same for every library and every process.

``inputs(n, rng)`` draws from a generator seeded by (run seed, workload name, size), so every
library and every replicate sees identical values. Floating arrays are cast to the run's dtype;
integer and boolean arrays are kept.
"""

from __future__ import annotations

import inspect
import zlib
from typing import Any, Mapping

import numpy as np

from .definition import InputsFn, Workload, array_parameters, definition_line


def build_inputs(wl: Workload, size: int, dtype: str, seed: int = 0) -> tuple[Any, ...]:
    """The host inputs of ``wl`` at a size, cast to ``dtype``; identical for every backend and process."""
    rng = np.random.default_rng([seed, zlib.crc32(wl.name.encode()), size])
    arrays = arrange(wl, _call_inputs(wl.inputs, size, rng))
    return tuple(_cast_list(a, dtype) if isinstance(a, list) else _cast(np.asarray(a), dtype)
                 for a in arrays)


def arrange(wl: Workload, made: Any) -> tuple[Any, ...]:
    """What ``inputs`` made, as the positional arguments of the function, checked against them."""
    params = array_parameters(wl.fn)
    if isinstance(made, Mapping):
        if params is None:
            raise TypeError(f"{wl.name}: inputs returned a dict, but the function takes *args")
        names = [p.name for p in params]
        extra = [k for k in made if k not in names]
        missing = [p.name for p in params if p.name not in made and p.default is p.empty]
        if extra or missing:
            raise TypeError(
                f"{wl.name}: inputs returned {sorted(made)}, the function takes {names}"
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
            raise TypeError(f"{wl.name}: inputs made {len(arrays)} array(s), but "
                            f"{wl.fn.__name__} takes {takes} after xp ({definition_line(wl.fn)})")
    return arrays


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


def _cast(a: np.ndarray, dtype: str) -> np.ndarray:
    if np.issubdtype(a.dtype, np.complexfloating):
        return np.ascontiguousarray(a.astype(np.result_type(np.dtype(dtype), np.complex64)))
    if np.issubdtype(a.dtype, np.floating):
        return np.ascontiguousarray(a.astype(np.dtype(dtype)))
    return np.ascontiguousarray(a)


def _cast_list(values: list, dtype: str) -> list:
    """A Python list whose floats are exactly representable in ``dtype``."""
    return np.asarray(values, dtype=np.dtype(dtype)).tolist()


def input_bytes(host: tuple[Any, ...]) -> int:
    """How much memory a set of inputs takes (a list counts 8 bytes an element)."""
    return sum(getattr(h, "nbytes", 8 * len(h) if isinstance(h, list) else 8) for h in host)
