"""The sizes' syntax: a label (``small``), an element count (``4096``, ``1e6``) or a geometric range
(``16:4096[:steps]``), read the same by the command line, the API and ``arraybench timeit``."""

from __future__ import annotations

import math

from ..errors import UsageError

MAX_SIZE = 10**10  # elements; beyond this no machine holds the inputs
MAX_STEPS = 1000  # sizes in one LO:HI:STEPS range; more would take days, not a benchmark


def parse_sizes(text: str) -> list[str]:
    """``small,large``, explicit sizes ``100,1000``, or a geometric range ``16:4096[:steps]``."""
    out: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if ":" in part:
            out.extend(str(n) for n in geometric_range(part))
        else:
            out.append(part)
    if not out:
        raise UsageError(f"--sizes {text!r} names no size; use e.g. small,large or 100,1000 or 16:4096")
    return out


def geometric_range(spec: str) -> list[int]:
    """``lo:hi`` doubles from lo to hi; ``lo:hi:k`` takes k geometrically spaced sizes."""
    pieces = spec.split(":")
    if len(pieces) not in (2, 3):
        raise UsageError(f"size range {spec!r} must be LO:HI or LO:HI:STEPS")
    lo, hi = (parse_size(p) for p in pieces[:2])
    if hi < lo:
        raise UsageError(f"size range {spec!r} goes down; write it as {hi}:{lo}")
    if len(pieces) == 3:
        try:
            steps = int(pieces[2].replace("_", ""))
        except ValueError:
            raise UsageError(f"STEPS {pieces[2]!r} is not a whole number") from None
        if steps < 2:
            raise UsageError(f"size range {spec!r}: STEPS must be at least 2")
        if steps > MAX_STEPS:
            raise UsageError(f"size range {spec!r}: STEPS must be at most {MAX_STEPS}")
        ratio = (hi / lo) ** (1 / (steps - 1))
        return sorted({round(lo * ratio**i) for i in range(steps)})
    doublings = int(math.log2(hi / lo)) + 1
    return sorted({*(lo << k for k in range(doublings) if lo << k < hi), hi})


def parse_size(text: str) -> int:
    """An element count such as ``4096``, ``1e6`` or ``1_000``; ``UsageError`` when it is not one."""
    text = text.strip().replace("_", "")
    try:
        value = float(text) if ("e" in text.lower() or "." in text) else int(text)
    except ValueError:
        raise UsageError(f"size {text!r} is not a number (use a label such as small or a count)") from None
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise UsageError(f"size {text!r} is not a whole number")
    n = int(value)
    if n <= 0:
        raise UsageError(f"size {n} must be positive")
    if n > MAX_SIZE:
        raise UsageError(f"size {n} is absurdly large (the limit is {MAX_SIZE:.0e} elements)")
    return n
