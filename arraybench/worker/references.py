"""The float64 references a worker keeps for its cells (with their own noise), and a cell's inputs,
made once per run and shared by its workers; and what NumPy is asked about a result.

Every worker of a cell needs the same reference, which costs more than a second per worker on a
default run: where the run shares them (``SharedReferences``: a folder the parent made), the first
worker writes each one, named by what decides its content, and the others read it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import numpy as np
from numpy.lib.format import read_array, write_array

from ..workloads.check import Noise
from .effects import host_copy
from ..workloads.definition import Workload
from ..workloads.inputs import Inputs, make_inputs
from ..workloads.params import accepted, text as params_text
from ..workloads.reference import (Reference, extended_allowed, numpy_namespace, reference_noise,
                                   reference_result)

class ReferenceCache:
    """Float64 references and their own noise, once per (workload, size, dtype) in a process, and
    once per run where the run shares them (``shared``: its folder)."""

    def __init__(self, shared: str | None = None) -> None:
        self._cache: dict[tuple[str, int, str], Reference] = {}
        self._noise: dict[tuple[str, int, str], Any] = {}
        self._shared = SharedReferences(shared) if shared else None
        self._names: dict[tuple[str, int, str], str] = {}

    def _name(self, key: tuple[Any, ...], inputs: tuple[np.ndarray, ...]) -> str:
        if key not in self._names:
            self._names = {key: digest(key, inputs)}
        return self._names[key]

    def _made(self, kind: str, key: tuple[Any, ...], inputs: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """What a worker of the run kept of ``kind`` for ``key``, else ``make()``, kept for the others."""
        if self._shared is None:
            return make()
        name = self._name(key, inputs)
        found, value = self._shared.load(kind, name)
        if not found:
            value = make()
            self._shared.put(kind, name, value)
        return value

    def inputs(self, wl: Workload, size: int, dtype: str, seed: int, params: dict[str, Any] | None) -> Inputs:
        """The cell's host inputs (``make_inputs``), built by one worker of the run."""
        where = (wl.source, getattr(wl.fn, "__module__", ""), getattr(wl.fn, "__qualname__", ""))
        return self._made("inputs", (wl.name, *where, size, dtype, params_text(params or {}), seed), (),
                          lambda: make_inputs(wl, size, dtype, seed, params))

    def reference(self, wl: Workload, size: int, dtype: str, inputs: tuple[np.ndarray, ...],
                  params: dict[str, Any] | None = None) -> Reference:
        """The reference with its own estimated error (nonzero for finite-difference gradients)."""
        key = (wl.name, size, dtype, params_text(params or {}))
        if key not in self._cache:
            self._cache.clear()  # large references are big; keep one
            self._cache[key] = self._made("reference", key, inputs, lambda: single_threaded(
                lambda: reference_result(wl, inputs, params, _extended(wl, size, params, inputs))))
        return self._cache[key]

    def noise(self, wl: Workload, size: int, dtype: str, inputs: tuple[np.ndarray, ...],
              params: dict[str, Any] | None = None) -> Noise | tuple[Noise, ...] | None:
        """How far that reference moves on its own (a few reference calls, never timed)."""
        key = (wl.name, size, dtype, params_text(params or {}))
        if key not in self._noise:
            ref = self.reference(wl, size, dtype, inputs, params)
            self._noise = {key: self._made("noise", key, inputs, lambda: single_threaded(
                lambda: reference_noise(wl, inputs, ref.value, params, dtype, ref.plain,
                                        _extended(wl, size, params, inputs))))}
        return self._noise[key]


def _extended(wl: Workload, size: int, params: dict[str, Any] | None, inputs: tuple[np.ndarray, ...]) -> bool:
    """Whether the reference reruns in long double, by the inputs and the float64 work declared."""
    try:
        work = wl.work_for(size, 8, params)
    except Exception:  # a work model that fails is reported where the cell reads it
        work = None
    return extended_allowed(inputs, work.flops if work is not None else None)


def single_threaded(fn: Callable[[], Any]) -> Any:
    """Run NumPy work with a one-thread BLAS: waking OpenBLAS's pool in a torch or JAX worker
    slows that library's next operations (~1.8x for a torch matmul right after a NumPy one)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return fn()
    with threadpool_limits(limits=1, user_api="blas"):
        return fn()


def narrower_than_numpys(wl: Workload, host: tuple[Any, ...], params: dict[str, Any],
                          out_dtype: str | None, dtype: str) -> bool:
    """Whether a floating result narrower than the run's ``dtype`` is one NumPy does not give when
    it runs the workload's ``reference=`` (or else its own function) on the same inputs."""
    if out_dtype is None or wl.grad or wl.namespace == "backend":
        return False
    got, want = np.dtype(out_dtype), np.dtype(dtype)
    if not (np.issubdtype(got, np.floating) and np.issubdtype(want, np.floating)) \
            or np.finfo(got).eps <= np.finfo(want).eps:
        return False
    try:
        copies = tuple(host_copy(h) for h in host)
        ref = wl.reference
        if ref is not None:
            produced = single_threaded(lambda: wl.result_of(
                ref(*copies, **accepted(ref, params, filled=len(copies))), list(copies)))
        else:
            fn = wl.function_for("numpy")
            produced = single_threaded(lambda: wl.result_of(
                fn(numpy_namespace(wl.namespace_for("numpy")), *copies, **params), list(copies)))
    except Exception:  # NumPy cannot run it here: the fixed inputs explain what they can
        return False
    theirs = getattr(produced, "dtype", None)
    return theirs is not None and np.dtype(theirs) == want


UNCHECKED = ("not checked: the reference (the workload's reference=, or its own function run by NumPy) "
              "returned None, so there is nothing to judge the result by: return the result, or "
              "declare @workload(mutates=(...)) for code that changes its inputs in place")


def is_none(value: Any) -> bool:
    """Whether a reference (or one of its outputs) is None, as NumPy holds it."""
    values = value if isinstance(value, tuple) else (value,)
    return any(v is None or (isinstance(v, np.ndarray) and v.dtype == object and v.shape == ()
                             and v.item() is None) for v in values)


def digest(key: tuple[Any, ...], inputs: tuple[Any, ...]) -> str:
    """A file name for ``key`` and the inputs it was computed from."""
    h = hashlib.blake2b(repr((key, np.__version__)).encode(), digest_size=16)
    for a in inputs:
        arr = np.ascontiguousarray(a) if isinstance(a, np.ndarray) else np.asarray(a)
        h.update(str((arr.dtype.str, arr.shape)).encode())
        if arr.dtype != object:
            data = arr.view(np.uint8).reshape(-1) if arr.size else np.empty(0, np.uint8)
            h.update(_folded(data) if data.size >= _FOLD_ABOVE else data)
    return h.hexdigest()


#: Inputs of more bytes are folded before hashing (a 2000² matmul's inputs: 73 ms hashed, 4 ms folded).
_FOLD_ABOVE = 1 << 20
_BLOCK = 4096


@functools.cache
def _weights() -> np.ndarray:
    """Odd weights, so that a change to any one word changes its block's sum; made when first
    needed: NumPy's random module is no import of a worker that reads its inputs from the run's."""
    return np.random.default_rng(0x5EED).integers(0, 2**63, _BLOCK, dtype=np.uint64) * 2 + 1


def _folded(data: np.ndarray) -> bytes:
    """Each block of 4,096 words as a weighted sum (mod 2**64), and the bytes past the last whole
    word: inputs that differ anywhere fold differently but for odds of 2**-64 a block (this names
    a file, and guards against nothing malicious). An integer matmul makes no input-sized temporary."""
    words = data[: data.size // 8 * 8].view(np.uint64)
    whole = words.size // _BLOCK * _BLOCK
    sums = words[:whole].reshape(-1, _BLOCK) @ _weights()
    rest = words[whole:] @ _weights()[: words.size - whole]
    return sums.tobytes() + rest.tobytes() + data[words.size * 8:].tobytes()


#: A cell's inputs are shared up to this many bytes: the run's folder is often in memory (tmpfs).
SHARED_INPUT_BYTES = 256 * 2**20


def _parts(value: Any) -> list[np.ndarray] | None:
    """The arrays of a reference value (one, or a tuple of them), or None where it is not arrays."""
    values = value if isinstance(value, tuple) else (value,)
    out = []
    for v in values:
        if isinstance(v, (float, int, np.number)) and not isinstance(v, bool):
            v = np.asarray(v)
        if not isinstance(v, np.ndarray) or v.dtype == object:
            return None
        out.append(v)
    return out


class SharedReferences:
    """The run's folder of references, their noise and cells' inputs: each file a JSON header then
    .npy records, read back without pickle and written atomically (a worker reads all or none)."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)

    def load(self, kind: str, name: str) -> tuple[bool, Any]:
        """(found, the ``Reference``, noise or ``Inputs`` (``kind``) stored under ``name``)."""
        found = self._read(f"{name}.{kind}.npys")
        if found is None:
            return False, None
        meta, arrays = found
        if kind == "inputs":
            return True, Inputs(tuple(arrays), tuple(meta["fixed"]))
        if kind == "noise":
            data = meta["noise"]
            return True, (tuple(Noise(**n) for n in data) if isinstance(data, list)
                          else None if data is None else Noise(**data))
        unpack = (lambda parts: tuple(parts) if meta["tuple"] else
                  (parts[0].item() if meta["scalar"] else parts[0]))
        value, plain = arrays[:meta["values"]], arrays[meta["values"]:]
        return True, Reference(unpack(value), meta["error"], meta["note"], unpack(plain) if plain else None)

    def put(self, kind: str, name: str, value: Any) -> None:
        """Keep ``value`` under ``name``; quietly nothing for a reference that is not arrays, or
        inputs that are not plain arrays of at most ``SHARED_INPUT_BYTES`` (the folder may be memory)."""
        if kind == "inputs":
            arrays = value.arrays
            if all(isinstance(a, np.ndarray) and a.dtype != object for a in arrays) \
                    and sum(a.nbytes for a in arrays) <= SHARED_INPUT_BYTES:
                self._write(f"{name}.inputs.npys", {"fixed": list(value.fixed)}, arrays)
        elif kind == "noise":
            self._write(f"{name}.noise.npys", {"noise": [asdict(n) for n in value] if isinstance(value, tuple)
                                               else None if value is None else asdict(value)}, ())
        else:
            parts, plain = _parts(value.value), _parts(value.plain) if value.plain is not None else []
            if parts is not None and plain is not None:
                self._write(f"{name}.{kind}.npys", {"values": len(parts), "tuple": isinstance(value.value, tuple),
                                                    "scalar": not isinstance(value.value, (tuple, np.ndarray)),
                                                    "error": value.error, "note": value.note}, (*parts, *plain))

    def _read(self, name: str) -> tuple[dict[str, Any], list[np.ndarray]] | None:
        try:
            with open(self.folder / name, "rb") as f:
                meta = json.loads(str(read_array(f, allow_pickle=False)))
                return meta, [read_array(f, allow_pickle=False) for _ in range(meta["arrays"])]
        except (OSError, KeyError, ValueError):
            return None

    def _write(self, name: str, meta: dict[str, Any], arrays: tuple[np.ndarray, ...]) -> None:
        try:
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".part-")
            with os.fdopen(fd, "wb") as f:
                for array in (np.asarray(json.dumps({**meta, "arrays": len(arrays)})), *arrays):
                    write_array(f, array, allow_pickle=False)
            os.replace(tmp, self.folder / name)
        except OSError:
            pass  # a full disk costs the sharing, never the cell
