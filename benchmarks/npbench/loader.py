"""NPBench's kernels, read from a checkout of spcl/npbench the user names: settings, inputs, code.

NPBench's code is not in this repository; the user keeps a checkout (``git clone
https://github.com/spcl/npbench``) and names its folder with ``--npbench DIR`` or the environment
variable ``ARRAYBENCH_NPBENCH``. Its layout: ``bench_info/<benchmark>.json`` (the settings, the
``relative_path`` and ``module_name``), and under ``npbench/benchmarks/<relative_path>/`` the
``initialize`` module and the ``_numpy``/``_jax`` kernels. This module imports only NumPy and the
standard library, so the plain-process runner (``plain.py``) and arraybench's workers load the
kernels the same way.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

ENV = "ARRAYBENCH_NPBENCH"
HOW_TO_GET = ("git clone https://github.com/spcl/npbench and pass its folder as --npbench DIR "
              f"(or set {ENV})")
_root: Path | None = None
_MODULES: dict[str, ModuleType] = {}


class NoCheckout(Exception):
    """No usable NPBench checkout was named; the message says which and how to get one."""


def locate(given: str | None = None) -> Path:
    """The NPBench checkout named by ``given`` or by ``ARRAYBENCH_NPBENCH``, checked to hold
    ``bench_info/``; raises :class:`NoCheckout` with a one-line message otherwise."""
    named = given or os.environ.get(ENV)
    if not named:
        raise NoCheckout(f"no NPBench checkout named: {HOW_TO_GET}")
    root = Path(named).expanduser().resolve()
    if not (root / "bench_info").is_dir():
        raise NoCheckout(f"{root} is not an NPBench checkout (no bench_info/): {HOW_TO_GET}")
    return root


def use(root: Path | str) -> None:
    """Read kernels from the checkout at ``root`` from now on, in this process."""
    global _root
    _root = Path(root)
    _MODULES.clear()
    _infos.cache_clear()
    info.cache_clear()
    implementation.cache_clear()


def _checkout() -> Path:
    # A process that was not told (a worker, plain.py) finds the checkout its parent named.
    if _root is None:
        use(locate())
    assert _root is not None
    return _root


@functools.cache
def _infos() -> dict[str, dict[str, Any]]:
    """Every benchmark's ``bench_info`` (its ``"benchmark"`` object), by its short name."""
    out = {}
    for path in sorted((_checkout() / "bench_info").glob("*.json")):
        bench = json.loads(path.read_text())["benchmark"]
        out[bench["short_name"]] = bench
    return out


def _path(name: str, suffix: str) -> Path:
    bench = info(name)
    return (_checkout() / "npbench" / "benchmarks" / bench["relative_path"]
            / f"{bench['module_name']}{suffix}.py")


def names() -> list[str]:
    """The short name of every benchmark with a JAX kernel, sorted."""
    return sorted(n for n in _infos() if _path(n, "_jax").is_file())


@functools.cache
def info(name: str) -> dict[str, Any]:
    """The benchmark's ``bench_info`` (its ``"benchmark"`` object)."""
    try:
        return _infos()[name]
    except KeyError:
        raise KeyError(f"NPBench has no benchmark with short name {name!r}") from None


def _module(name: str, suffix: str) -> ModuleType:
    # Loaded by path under a name of their own: several benchmarks share module names upstream.
    key = f"npbench_{name}{suffix}"
    if key not in _MODULES:
        spec = importlib.util.spec_from_file_location(key, _path(name, suffix))
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
