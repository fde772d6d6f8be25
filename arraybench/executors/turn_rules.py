"""Who takes a round's turn: the rules ``turns`` hands turns by, each a pure function.

A case's cells take one sample a round while their own stopping rules go on. A cell whose rule
says it is done may pair on for a while beside cells of its case that still sample, so that
their pairs have rounds in common; how long, and beside whom, is decided here.
"""

from __future__ import annotations

import statistics
from typing import Sequence

__all__ = ["pairs_on", "takes_turn"]

#: A case whose rounds left fewer than this many quiet ones takes turns for longer (``takes_turn``),
#: up to this many times the turns its cells' own rules took...
QUIET_ROUNDS = 3
QUIET_STRETCH = 4
#: ...where at least ``RESTED_SHARE`` of all rounds so far were quiet (a machine loaded all the
#: time would only make every case take four times as long, for a pair that keeps every round
#: anyway), and while the case's rounds have taken less than this (a 150 ms matmul's rounds, two
#: seconds under load, seldom fall between a tenant's bursts).
STRETCH_S = 3.0
#: A cell done by its own rule pairs on with a cell of its case still sampling whose calls take
#: within this factor of its own: a pair further apart is decided by the rounds it has.
PAIR_ON_WITHIN = 2.0


def pairs_on(mine: Sequence[float], sampling: Sequence[Sequence[float]], short_of_quiet: bool = False) -> bool:
    """Whether a cell done by its own rule, its samples so far ``mine`` (seconds per call), takes
    the next round's turn beside ``sampling``, the samples so far of its case's cells that still
    sample by their own rule.

    It pairs on with one whose calls take within ``PAIR_ON_WITHIN`` of its own time (no samples
    yet: near): a 110 ms NumPy gradient's pairs with 2 ms ones are decided by the rounds they
    have, however long the 2 ms ones' own intervals stay open. Where its case is
    ``short_of_quiet``, it pairs on with every cell of its case, done or not.
    """
    def near(other: Sequence[float]) -> bool:
        if not mine or not other:
            return True
        x, y = statistics.median(mine), statistics.median(other)
        return max(x, y) < PAIR_ON_WITHIN * min(x, y)

    return short_of_quiet or any(near(other) for other in sampling)


def takes_turn(extra: bool, taken: int, done_at: int | None, short_of_quiet: bool = False) -> bool:
    """Whether a cell that took ``taken`` turns, its own sampling done after ``done_at`` of them
    (None: not done), takes the next round's turn.

    A cell done by its own rule pairs on with its case's others for as many turns again as it
    took, at most: a slow cell does not sample on for as long as a fast one's interval stays open
    (a NumPy gradient of 110 ms beside a 2 ms one). Where its case is ``short_of_quiet`` (fewer
    than ``QUIET_ROUNDS`` rounds without other processes' load, on a machine that rests now and
    then), up to ``QUIET_STRETCH`` times as many: the pair leaves busy rounds out, and a 150 ms
    matmul's three turns under a bursty tenant seldom leave it two. A cell in the other
    allocator state (``extra``) is paired with nothing: it stops when it is done.
    """
    if done_at is None:
        return True
    return not extra and taken < (QUIET_STRETCH if short_of_quiet else 2) * done_at
