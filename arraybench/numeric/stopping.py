"""Every threshold that decides when measuring stops, each with why it has its value.

Three rules read them, at three scales: a cell's own sampling inside its worker (``worker/sampling``
and the timer's calibration), who takes a round's turn while a replicate index's workers take
turns (``analysis/policy``, applied by ``executors/turns``), and how many processes a cell gets
(``analysis/policy.decide``, asked by ``analysis/policy.RunState``). They live in this leaf so that the
worker, which imports nothing of the parent's, and the parent read one copy.
"""

from __future__ import annotations

# -- a cell's own sampling, in its worker ----------------------------------------------------------

#: A batch that lasts this share of the target sample is long enough (the timer calibrates so).
FULL_BATCH = 0.8
#: A batch shorter than this share of the target sample, of calls shorter than this share of the
#: time calibration went by, was calibrated under another process's load (``Sampling._regrow``)...
REGROW_BELOW = 0.25
#: ...and grows, as calibration does, at most this many times.
MOST_REGROWS = 5
#: A warm-up call this slow ends the warm-up alone, and is kept as the first sample.
SLOW_CALL_S = 0.1
#: The most warm-up calls, however short each is.
MAX_WARMUP_CALLS = 10_000
#: A sample over which resident memory grew more than this is warm-up (``take_back_warmup``).
WARMUP_GROWTH_BYTES = 1 << 20
#: Taken back at most, per operation: memory that keeps growing is the operation's, not a warm-up.
MAX_WARMUP_SAMPLES = 20
#: Calls shorter than this are re-warmed (one untimed call) before a sample that follows another
#: operation's; longer calls are their own warm-up, near enough, and re-warming would double them.
REWARM_BELOW_S = 0.01
#: Before each turn of a threaded cell, its worker waits at most this long for its other threads to
#: stop running: a BLAS pool spins after a call (OpenBLAS's for ~0.1 s), which took a core from JAX's
#: correlation (1.35-1.6x slower after contour_integral's inverse)...
SETTLE_S = 0.3
#: ...its pool being the threads that ran this share of its warm-up's time beside it (under load, JAX's
#: second XLA thread got under a tenth). Calls of one thread lost nothing to a pool spinning beside
#: them (NumPy's 1M elementwise, sort and FFT after a matmul: 0.85-1.01x), and waiting on each turn of
#: a NumPy worker took 7.7 s a process.
OWN_THREAD_SHARE = 0.02

# -- who takes a round's turn ----------------------------------------------------------------------

#: A cell done by its own rule pairs on beside its case's others for this many times the turns it
#: took, at most: a slow cell does not sample on for as long as a fast one's interval stays open
#: (a NumPy gradient of 110 ms beside a 2 ms one).
PAIR_ON_TURNS = 2
#: A case whose rounds left fewer than this many quiet ones takes turns for longer...
QUIET_ROUNDS = 3
#: ...up to this many times the turns its cells' own rules took: the pair leaves busy rounds out,
#: and a 150 ms matmul's three turns under a bursty tenant seldom leave it two...
QUIET_STRETCH = 4
#: ...while the case's rounds have taken less than this many seconds (a 150 ms matmul's rounds,
#: two seconds under load, seldom fall between a tenant's bursts)...
STRETCH_S = 3.0
#: ...and where at least this share of all turns so far were quiet: the machine rests between
#: bursts, so more turns will likely find quiet ones (a machine loaded all the time would only
#: make every case take four times as long, for a pair that keeps every round anyway). The same
#: share lets a cell's process budget pay only for its quiet turns (``BETWEEN_BURSTS``).
RESTED_SHARE = 0.1
#: A cell done by its own rule pairs on with a cell of its case still sampling whose calls take
#: within this factor of its own: a pair further apart is decided by the rounds it has.
PAIR_ON_WITHIN = 2.0

# -- how many processes a cell gets ----------------------------------------------------------------

#: Each process takes at least this many samples of a cell, however many processes share the
#: cell's sample floor: three is the fewest whose median one stray sample cannot set.
LEAST_SAMPLES_PER_PROCESS = 3
#: A pair whose 95% interval holds 1 and lies within this share of it either way is level, and
#: answered: neither is faster by more than 10% (asv's default factor, and the smallest difference
#: a default run is asked to tell apart). At 5%, three processes' t interval (4.3 standard errors)
#: called 17% of quiet A/A pairs level: a claim of sameness finer than the run can resolve.
LEVEL_WITHIN = 0.10
#: The budget of a cell with an open pair, in times ``--max-time``: processes are what decide a
#: verdict, and a busy machine makes each cost more; a cell with no pair to decide stops at one.
OPEN_BUDGET = 2
#: The budget of a cell with an open pair, in times ``--max-time``, where other processes loaded
#: some of its turns and left others quiet. Its quiet turns are few, a process's verdict rests on
#: a turn or two a side, and three processes give a t interval 4.3 standard errors wide: under a
#: tenant's bursts, 150 ms matmuls 0.87-0.90x apart stopped at 3-4 processes on three times the
#: budget, undecided in most runs.
BETWEEN_BURSTS = 5
