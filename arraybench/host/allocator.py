"""Whether, and how, a worker's C allocator is started in a known state.

glibc reads ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` and ``MALLOC_ARENA_MAX`` once, at start-up, so the
state is decided here, in the parent, and handed to the worker in its environment, as the thread
variables are (``threads``). A state cannot be switched reliably inside a running process: after
``mallopt`` and ``malloc_trim``, large free chunks already in the heap still serve a "fresh" call
from memory that stays mapped (measured: 0 faults a call in some samples instead of ~2,600).

Left alone where the C library is not glibc, or where the user chose the allocator's behaviour
(``MALLOC_*_`` variables, a malloc tunable, jemalloc or tcmalloc preloaded): their program would
run with their choice, so the benchmark does too, and records say "" (not controlled).
"""

from __future__ import annotations

import os
from typing import Mapping

from ..model.replicate import USER_VARIABLES, State, environment


def uncontrolled_reason(env: Mapping[str, str]) -> str:
    """Why workers started with ``env`` keep their allocator as it is ("" when it may be set)."""
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        libc = ""
    if not libc.startswith("glibc"):
        return "the C library is not glibc"
    chosen = [name for name in USER_VARIABLES if name in env]
    if chosen:
        return f"{', '.join(chosen)} set by the user"
    if "malloc" in env.get("GLIBC_TUNABLES", ""):
        return "a glibc.malloc tunable set by the user (GLIBC_TUNABLES)"
    preload = env.get("LD_PRELOAD", "")
    if any(name in preload for name in ("malloc", "jemalloc", "tcmalloc")):
        return f"another allocator preloaded (LD_PRELOAD={preload})"
    return ""


def with_state(env: Mapping[str, str], state: State) -> dict[str, str]:
    """``env`` with the variables for ``state``; a library's own (NumPy's huge-page advice) stays
    as the user set it, as glibc's would have (then the state is not set at all)."""
    return {**env, **{k: v for k, v in environment(state).items() if k.startswith("MALLOC_") or k not in env}}


def choice_ignored(chosen: str, env: Mapping[str, str]) -> str:
    """Why a state the user asked for (``--allocator fresh``) is not what workers started with
    ``env`` get, as one line; "" where it is applied, or where the default ("both") was left."""
    from ..errors import spell

    reason = uncontrolled_reason(env) if chosen != "both" else ""
    return (f"{spell('allocator', chosen)} is not applied ({reason}): the allocator runs as that "
            "sets it") if reason else ""
