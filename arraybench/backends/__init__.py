"""The backend registry: what each library is called, which devices it has, and how to load it.
Nothing here imports an array library; ``load``, called only in a worker, imports a backend module."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
from contextlib import suppress
from dataclasses import dataclass

from .base import Backend, Unavailable as Unavailable

DEVICES = ("cpu", "gpu")


@dataclass(frozen=True)
class BackendSpec:
    """A backend as the parent process knows it, without importing its library."""

    name: str  # also the library's import name, and ``arraybench[name]`` installs it
    label: str
    devices: tuple[str, ...]
    #: pip names that provide it, to report a version (default: its name).
    distributions: tuple[str, ...] = ()

    def missing_reason(self) -> str | None:
        """Why the library cannot be imported here, or None when it is installed."""
        with suppress(ImportError, ValueError):
            if importlib.util.find_spec(self.name) is not None:
                return None
        extra = "cpu" if self.name == "numpy" else self.name
        return f"{self.label} is not installed (pip install 'arraybench[{extra}]')"

    def preflight(self, device: str) -> str | None:
        """A cheap reason why ``device`` cannot work, found without importing the library (a worker
        that learns there is no GPU costs seconds); the worker remains the authority."""
        missing = self.missing_reason()
        if missing or device == "cpu":
            return missing
        if sys.platform == "darwin":
            # Apple GPUs have no device files: Metal is asked in the worker.
            return "CuPy has no Apple GPU support (CUDA and ROCm only)" if self.name == "cupy" else None
        if not any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")):
            return "no GPU on this machine (no NVIDIA or ROCm device files)"
        version = self.version() or ""
        if self.name == "torch" and version.endswith("+cpu"):
            return f"PyTorch {version} is a CPU-only build (no CUDA)"
        if self.name == "jax" and not _jax_gpu_plugin():
            return "JAX is installed without a GPU plugin (pip install 'jax[cuda12]')"
        return None

    def version(self) -> str | None:
        """The installed version from package metadata (no import)."""
        for dist in self.distributions or (self.name,):
            with suppress(importlib.metadata.PackageNotFoundError):
                return importlib.metadata.version(dist)
        return None


def _jax_gpu_plugin() -> bool:
    """Whether a JAX GPU plugin (jax-cuda12-plugin, jax-rocm7-plugin, ...) is installed."""
    # jaxlib releases before the plugins carried CUDA in their own build (0.4.x+cuda12)
    with suppress(importlib.metadata.PackageNotFoundError):
        if any(k in importlib.metadata.version("jaxlib") for k in ("cuda", "rocm")):
            return True
    names = ((d.metadata["Name"] or "").lower().replace("_", "-") for d in importlib.metadata.distributions())
    # jax-metal: Apple's PJRT plugin (platform METAL).
    return any(n.startswith(("jax-cuda", "jax-rocm")) and n.endswith("plugin") or n == "jax-metal"
               for n in names)


SPECS: dict[str, BackendSpec] = {s.name: s for s in (
    BackendSpec("numpy", "NumPy", ("cpu",)),
    BackendSpec("torch", "PyTorch", ("cpu", "gpu")),
    BackendSpec("jax", "JAX", ("cpu", "gpu")),
    BackendSpec("mlx", "MLX", ("cpu", "gpu")),
    BackendSpec("cupy", "CuPy", ("gpu",),
                ("cupy", "cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x", "cupy-rocm-6-0")),
)}


#: The libraries a run uses unless told (the seed's NumPy, PyTorch and JAX, and CuPy on a GPU).
#: MLX is named (``--backends ...,mlx``), not assumed: in the default float64 its CPU ``sin`` is
#: only about float32-accurate (a true ``wrong`` in every default run) and its GPU has no float64.
DEFAULT_BACKENDS: tuple[str, ...] = ("numpy", "torch", "jax", "cupy")


def load(name: str) -> type[Backend]:
    """Import a backend's module (and so its library) and return its class. Worker processes only."""
    module = importlib.import_module(f"{__name__}.{name}")
    return getattr(module, f"{name.capitalize()}Backend")  # NumpyBackend, TorchBackend...
