"""Fresh inputs for code that changes its arguments in place (``mutates=``), restored outside the clock.

Without giving up batching for fast calls: a *pool* of argument tuples, each with its own copies
of the changed inputs, is refilled before a batch, and the timed loop walks it one tuple a call. A
pool of one is per-call restoring. Against a hand-written ``timeit`` loop (``benchmarks/inplace.py``)
the pool is within 2.5% for 6.7 and 54 µs calls, where per-call restoring is 3-6% slow; for 0.8 ms
calls both are within 2%, and per call keeps one copy. So ``auto`` pools calls shorter than
``PER_CALL_FROM_S`` and restores before every longer one.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

if TYPE_CHECKING:
    from ..backends.base import Backend

#: How inputs are restored: a pool of copies per batch, before every call, or (``auto``) by call time.
RESTORES = ("auto", "pool", "per_call")
#: ``auto`` restores before every call for calls at least this long (see the module's docstring).
PER_CALL_FROM_S = 100e-6
#: However small the inputs, a pool holds no more tuples than this.
MAX_POOL = 1 << 16


class FreshInputs:
    """The arguments of a bound call, with the inputs at ``positions`` fresh for every call (slot 0
    is the bound arguments themselves, the others clones made when first needed)."""

    def __init__(self, args: Sequence[Any], positions: Sequence[int], pristine: Sequence[Any], *,
                 clone: Callable[[Any], Any], copy_into: Callable[[Any, Any], None],
                 sync: Callable[[Any], None] | None = None, capacity: int = 1,
                 restore: str = "pool") -> None:
        if len(positions) != len(pristine) or not positions:
            raise ValueError("FreshInputs needs one pristine copy per changed input")
        self.args = tuple(args)
        self.positions = tuple(positions)
        self.pristine = tuple(pristine)
        self._clone = clone
        self._copy_into = copy_into
        self._sync = sync
        #: The most argument tuples the memory budget allows, and how many a batch uses now.
        self.pool_size = max(1, int(capacity))
        self.capacity = self.pool_size
        self.restore = restore
        self._slots: list[tuple[Any, ...]] = [self.args]
        #: Calls that found their inputs restored, over this object's life (for the record).
        self.restored = 0

    def pool(self, calls: int) -> list[tuple[Any, ...]]:
        """Up to ``calls`` (at most ``capacity``) argument tuples, every changed input restored."""
        k = max(1, min(int(calls), self.capacity))
        while len(self._slots) < k:
            self._slots.append(self._new_slot())
        slots = self._slots[:k]
        for slot in slots:
            for pos, src in zip(self.positions, self.pristine):
                self._copy_into(slot[pos], src)
        if self._sync is not None:
            self._sync(None)  # the copies are done before the clock starts
        self.restored += k
        return slots

    def calibrated(self, per_call_s: float, batched: bool = False) -> None:
        """Told the time of one call once warmed up: ``auto`` chooses the pool or per-call restoring
        (``batched``, throughput on an asynchronous device, keeps the pool: one wait per call
        would time latency instead)."""
        if self.restore == "auto":
            self.capacity = 1 if per_call_s >= PER_CALL_FROM_S and not batched else self.pool_size

    @property
    def per_call(self) -> bool:
        """Whether every call has its inputs restored just before it (a pool of one)."""
        return self.capacity == 1

    def _new_slot(self) -> tuple[Any, ...]:
        slot = list(self.args)
        for pos in self.positions:
            slot[pos] = self._clone(self.pristine[self.positions.index(pos)])
        return tuple(slot)

    def describe(self, names: Sequence[str]) -> str:
        """The note a record carries: what was restored, and how (the same text in every process)."""
        what = ", ".join(names)
        if self.per_call:
            how = ("before every call, with the clock stopped (the clock reads this adds are "
                   "subtracted: restore_overhead_s)")
        else:
            how = f"from a pool of up to {self.capacity} copies refilled before each batch, outside the timer"
        return f"fresh inputs: {what} restored {how}"


def pool_capacity(restore: str, slot_bytes: int, budget_bytes: float) -> int:
    """How many argument tuples a pool may hold: 1 per call restoring, else what the budget allows."""
    if restore not in RESTORES:
        raise ValueError(f"restore must be one of {', '.join(RESTORES)}, not {restore!r}")
    if restore == "per_call":
        return 1
    return max(1, min(MAX_POOL, math.floor(budget_bytes / max(slot_bytes, 1))))


def fresh_inputs(backend: "Backend", args: Sequence[Any], prefix: int, arrays: Sequence[Any],
                 host: Sequence[Any], positions: Sequence[int], restore: str,
                 budget_bytes: float) -> FreshInputs:
    """Fresh copies of ``arrays[i]`` for ``i`` in ``positions``, where they live (device or host);
    ``args`` are the bound call's arguments, the arrays from ``prefix``; ``host`` the pristine values."""
    pristine = [_pristine(backend, arrays[i], host[i]) for i in positions]
    slot_bytes = sum(int(getattr(p, "nbytes", 8 * len(p) if isinstance(p, list) else 0)) for p in pristine)
    return FreshInputs(args, [prefix + i for i in positions], pristine,
                       clone=backend.clone, copy_into=backend.copy_into, sync=backend.sync,
                       capacity=pool_capacity(restore, slot_bytes, budget_bytes), restore=restore)


def _pristine(backend: "Backend", arg: Any, host: Any) -> Any:
    if isinstance(arg, list):
        return list(host)
    if isinstance(arg, np.ndarray):
        return host.copy()
    return backend.asarray(host)  # on the device, so that restoring is a device-to-device copy
