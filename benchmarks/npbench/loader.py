"""NPBench's kernels as vendored under ``kernels/``: their settings, inputs and implementations.

Vendored from spcl/npbench (BSD-3-Clause, ``LICENSE`` here) at commit f2d7f27: for each of the 53
benchmarks with a JAX implementation, its ``bench_info`` JSON, its ``initialize`` module and its
``_numpy``/``_jax`` kernels, unchanged. This module imports only NumPy and the standard library, so
the plain-process runner (``plain.py``) and arraybench's workers load the kernels the same way.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

KERNELS = Path(__file__).resolve().parent / "kernels"
_MODULES: dict[str, ModuleType] = {}


def names() -> list[str]:
    """Every vendored benchmark's short name, sorted."""
    return sorted(p.parent.name for p in KERNELS.glob("*/bench_info.json"))


@functools.cache
def info(name: str) -> dict[str, Any]:
    """The benchmark's ``bench_info`` (its ``"benchmark"`` object)."""
    return json.loads((KERNELS / name / "bench_info.json").read_text())["benchmark"]


def _module(name: str, suffix: str) -> ModuleType:
    # Loaded by path under a name of their own: several benchmarks share module names upstream.
    key = f"npbench_{name}{suffix}"
    if key not in _MODULES:
        path = KERNELS / name / f"{info(name)['module_name']}{suffix}.py"
        spec = importlib.util.spec_from_file_location(key, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _MODULES[key] = module
    return _MODULES[key]


@functools.cache
def implementation(name: str, library: str) -> Callable[..., Any]:
    """The kernel of ``name`` for ``library`` ("numpy" or "jax"); cached, since arraybench's
    workloads look it up inside every timed call."""
    return getattr(_module(name, f"_{library}"), info(name)["func_name"])


def data(name: str, preset: str = "S") -> dict[str, Any]:
    """NPBench's data for ``preset``: its parameters and what ``initialize`` returns, by name."""
    bench = info(name)
    values: dict[str, Any] = dict(bench["parameters"][preset])
    init = bench.get("init")
    if init:
        fn = getattr(_module(name, ""), init["func_name"])
        out = fn(*[values[a] for a in init["input_args"]])
        names_out = init["output_args"]
        values.update(zip(names_out, out if len(names_out) > 1 else (out,)))
    return values


def scalar_args(name: str) -> list[str]:
    """The kernel's arguments that are not arrays (settings), in call order."""
    bench = info(name)
    return [a for a in bench["input_args"] if a not in bench["array_args"]]


def plain_value(value: Any) -> Any:
    """A scalar as a Python or NumPy scalar (0-d arrays from ``initialize`` unwrapped)."""
    return value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value
