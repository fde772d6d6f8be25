"""NumPy on the CPU: the reference library, and the baseline every speed-up is measured against."""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from .base import Backend, Unavailable
from .cpu import cpu_threads_info


class NumpyBackend(Backend):
    name = "numpy"
    label = "NumPy"
    native = np
    #: NumPy's compiled mode is Numba (``backends/numba_jit.py``), where installed.
    compile_method = "numba.njit"
    compiles_functions = True

    def __init__(self, device: str, *, allow_tf32: bool = False) -> None:
        if device != "cpu":
            raise Unavailable("NumPy runs only on the CPU")
        super().__init__(device, allow_tf32=allow_tf32)

    def namespace(self, kind: str = "native") -> Any:
        if kind == "array_api" and "array_api_compat.numpy" not in sys.modules:
            _import_compat_namespace()
        return super().namespace(kind)

    def asarray(self, host: np.ndarray) -> Any:
        # A fresh, owned copy: the benchmark must not alias the caller's arrays.
        return np.array(host, copy=True, order="C")

    # The library's own calls, as a user makes them: ``np.array(data, dtype)`` builds from a list.
    from_numpy = to_numpy = staticmethod(np.asarray)
    copy_from_numpy = from_list = staticmethod(np.array)

    def compile_workload(self, fn: Callable[..., Any], xp: Any, settings: dict[str, Any], *,
                         grad: bool = False) -> Callable[..., Any]:
        """The workload's function under ``numba.njit``, with NumPy itself as ``xp``."""
        try:
            from . import numba_jit
        except ImportError as exc:
            raise Unavailable(f"not applicable: NumPy's compiled mode is Numba, which is not "
                              f"installed (pip install 'arraybench[numba]'; {exc})") from None
        return numba_jit.compile_workload(fn, settings, grad)

    def compile_refusal(self, exc: BaseException) -> str | None:
        from . import numba_jit

        return numba_jit.refusal(exc)

    def info(self) -> dict[str, Any]:
        return {
            "library": "numpy",
            "version": np.__version__,
            "device_name": "cpu",
            **numpy_build_linalg(),
            **numba_info(),
            **cpu_threads_info(),
        }


def _import_compat_namespace() -> None:
    """Import array_api_compat's NumPy namespace without the NumPy submodules that load on first use.

    Cloning NumPy's namespace, array_api_compat touches every name NumPy lists, which imports each
    such submodule (f2py, testing, ma...: 0.11 of the 0.25 CPU s of that import, in every worker).
    None of them is an array function: they are hidden while it clones, and reached through NumPy
    where a workload asks for one.
    """
    lazy = {name for name in getattr(np, "__numpy_submodules__", ()) if name not in vars(np)}
    listed, listing = np.__all__, np.__dir__
    np.__all__ = [name for name in listed if name not in lazy]
    np.__dir__ = lambda: [name for name in listing() if name not in lazy]
    try:
        import array_api_compat.numpy as compat
    finally:
        np.__all__, np.__dir__ = listed, listing

    def reach(name: str) -> Any:
        if name in lazy:
            return getattr(np, name)
        raise AttributeError(f"module {compat.__name__!r} has no attribute {name!r}")

    compat.__getattr__ = reach


def numba_info() -> dict[str, Any]:
    """Numba's version, and its target once it compiled something here (importing Numba costs a
    second, so a worker that compiled nothing reads the version from the package metadata)."""
    if "arraybench.backends.numba_jit" in sys.modules:
        return sys.modules["arraybench.backends.numba_jit"].info()
    import importlib.metadata

    try:
        return {"numba": importlib.metadata.version("numba")}
    except importlib.metadata.PackageNotFoundError:
        return {"numba": "not installed"}


def numpy_build_linalg() -> dict[str, str]:
    """The BLAS and LAPACK NumPy was built against, from its config (only it names the LAPACK)."""
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]  # NumPy >= 1.25
    except Exception:  # older NumPy prints instead of returning; never fail a worker over it
        return {}
    texts = {name: " ".join(str(dep[k]) for k in ("name", "version") if dep.get(k))
             for key, name in (("blas", "blas_build"), ("lapack", "lapack")) for dep in [deps.get(key) or {}]}
    return {name: text for name, text in texts.items() if text}
