"""The C allocator's two states a large-output cell is measured in, as plain data.

glibc's malloc serves a request of 128 KiB or more with ``mmap`` and hands it back to the kernel
when it is freed, unless an earlier free raised its *dynamic* threshold; so the same call either
gets **fresh pages** every time (zeroed by the kernel, one page fault per 4 KiB: NumPy's FFT at
n = 10⁶ took 37.8 ms that way) or **reuses memory** its last call freed (17.8 ms), depending on
what the process allocated before. Measured by accident, a cell's processes land in either state
and their mean is a time no program sees. So every worker starts in a known state (the parent
sets glibc's variables, ``host/allocator``): the headline's, ``HEADLINE``; a CPU cell whose
outputs are large is measured again by workers started in ``OTHER``, kept beside it
(``StateSamples`` per replicate, ``other_*`` fields per record), never averaged.

``SETTINGS`` are the values given to glibc (and NumPy), by the names of the environment variables read at
start-up, so a plain script started with them is in the same state (``benchmarks/allocator.py``
checks that it times the same).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .usage import Usage

State = Literal["reused", "fresh"]
STATES: tuple[State, ...] = ("reused", "fresh")
#: The state of a record's headline time; the other is measured beside it where outputs are large.
HEADLINE: State = "reused"
#: The state measured beside the headline.
OTHER: State = "fresh"

#: glibc's default mmap threshold: outputs this large come from mmap unless memory is kept.
LARGE_OUTPUT_BYTES = 128 * 1024

#: The variables that put glibc in each state, by the names it reads from the environment at
#: start-up (``mallopt``'s M_MMAP_THRESHOLD and M_TRIM_THRESHOLD; setting either threshold also
#: turns off the dynamic threshold that makes the state an accident). ``reused``: nothing up to
#: 1 GiB is mmapped and nothing is trimmed, so a freed output is there for the next call. glibc's
#: own number of arenas: one arena for every thread (MALLOC_ARENA_MAX=1, once set here against
#: JAX's per-thread arenas) made JAX's own threads and the caller's take one lock for every
#: allocation, which no user's program does: NPBench's cholesky and ludcmp took 5.8 and 2.7 ms of
#: CPU a call in arraybench's JAX worker against 2.8 and 1.5 ms with glibc's arenas (2.5 and 1.3
#: ms in NPBench's own plain process), while plain JAX processes with the two thresholds alone no
#: longer land in two states (elementwise at n = 10⁶: 0-391 faults a call in 16 of 16, 98-488
#: with one arena; a fresh output would take ~5,900). ``fresh``: glibc's default threshold,
#: fixed, so every output of 128 KiB or more is mapped and unmapped.
SETTINGS: dict[State, dict[str, int]] = {
    "reused": {"MALLOC_MMAP_THRESHOLD_": 1 << 30, "MALLOC_TRIM_THRESHOLD_": (1 << 31) - 1},
    # NumPy asks for transparent huge pages on large arrays, and a mapping gets them only where
    # the kernel placed it on a 2 MiB boundary, which it does for lengths that are multiples of
    # 2 MiB alone and otherwise as the process's earlier mappings fall: NumPy's sort at n = 10⁶
    # faulted 421 pages a call in plain processes and 932 in most of arraybench's workers (7.5
    # against 6.8 ms). Without the advice every library's fresh output is 4 KiB pages.
    "fresh": {"MALLOC_MMAP_THRESHOLD_": LARGE_OUTPUT_BYTES, "MALLOC_TRIM_THRESHOLD_": LARGE_OUTPUT_BYTES,
              "NUMPY_MADVISE_HUGEPAGE": 0},
}
#: Variables that mean the user chose the allocator's behaviour: arraybench leaves it alone then.
USER_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                  "MALLOC_MMAP_MAX_", "MALLOC_ARENA_MAX")

WORDS: dict[str, str] = {"reused": "reused memory", "fresh": "fresh pages"}


def environment(state: State) -> dict[str, str]:
    """The environment variables that start a glibc process in ``state``."""
    return {name: str(value) for name, value in SETTINGS[state].items()}


def shell_words(state: State) -> str:
    """``MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=2147483647``: as typed before a command."""
    return " ".join(f"{k}={v}" for k, v in environment(state).items())


@dataclass
class StateSamples:
    """One process's samples of a cell in the allocator state other than the headline's."""

    allocator: State
    #: Seconds per call, one per sample, as ``Replicate.samples_s``.
    samples_s: list[float] = field(default_factory=list, metadata={"min": 0})
    number: int | None = field(default=None, metadata={"min": 1})
    stop_reason: str = ""
    #: The counters around these samples (page faults per call above all).
    usage: Usage | None = None
