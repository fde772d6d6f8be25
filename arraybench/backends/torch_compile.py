"""What torch.compile needs around a workload: its own code object per cell, the recompile limit
as an error, and whether a disk cache served the compile."""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable

import torch

__all__ = ["CompiledNothing", "HAS_ISOLATE_RECOMPILES", "cache_notes", "fail_on_recompile_limit", "own_code"]


#: ``torch.compile(isolate_recompiles=True)``: its own recompile region per call (torch >= 2.13).
HAS_ISOLATE_RECOMPILES = "isolate_recompiles" in inspect.signature(torch.compile).parameters


def own_code(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A copy of the function ``fn`` with a new code object (same globals, defaults, closure)."""
    if not isinstance(fn, types.FunctionType):
        def call(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        fn = call
    copy = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__ = fn.__qualname__
    return copy


class CompiledNothing(Exception):
    """torch.compile ran a cell without compiling any graph of it: a compiled record would be eager."""


def fail_on_recompile_limit() -> None:
    """Make Dynamo's recompile limit an error (a failed cell) instead of a silent fall back to eager.

    ``suppress_errors`` (``TORCHDYNAMO_SUPPRESS_ERRORS``) would turn every compile error into eager
    code too, and torch refuses it beside ``fail_on_recompile_limit_hit``.
    """
    from torch._dynamo import config

    for name in ("fail_on_recompile_limit_hit", "fail_on_cache_limit_hit"):  # 2.13's name, then older
        if hasattr(config, name):
            config.suppress_errors = False
            setattr(config, name, True)
            return


def cache_notes(counters: Any) -> list[str]:
    """Whether Inductor's FX graph cache (or AOTAutograd's) served this function's compile: the
    first call then loads compiled code (70 ms) instead of compiling it (1.6 s the first time)."""
    inductor, aot = counters.get("inductor", {}), counters.get("aot_autograd", {})
    hits = inductor.get("fxgraph_cache_hit", 0) + aot.get("autograd_cache_hit", 0)
    misses = inductor.get("fxgraph_cache_miss", 0)
    if not hits:
        return []
    part = "partly " if misses else ""
    return [f"torch.compile's first call was {part}served from a disk cache ({hits} hit(s) in "
            f"Inductor's and AOTAutograd's caches, {misses} graph(s) compiled): its compile time is "
            f"mostly a cache load; a cold compile (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1) takes longer"]
