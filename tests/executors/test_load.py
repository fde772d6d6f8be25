"""The load watch: other processes' CPU while workers take turns, arraybench's own left out."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from arraybench.executors.turns import LoadWatch
from arraybench.host.cpu_time import process_seconds

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="no /proc on this system")

#: Spins for 0.4 s of CPU, says so, then waits (alive, idle) until its stdin closes.
_SPIN = ("import sys, time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass\n"
         "print('spun', flush=True)\nsys.stdin.read()\n")


def test_a_process_listed_as_ours_is_not_counted_among_the_others():
    """Two watches at once, one told the spinning child is arraybench's: over the child's spin the
    other counts the child's CPU more, and only that, whatever else loads the machine."""
    child = subprocess.Popen([sys.executable, "-c", _SPIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        with LoadWatch([child.pid]) as ours, LoadWatch([]) as not_ours:
            # The child's CPU from when the watches began: its interpreter's start, before them,
            # is neither's (on a loaded machine that start took a tenth of a second more).
            before = process_seconds(child.pid)
            start = time.monotonic()
            assert child.stdout.readline() == "spun\n"
            time.sleep(0.1)
            end = time.monotonic()
            used = process_seconds(child.pid) - before
    finally:
        child.stdin.close()
        child.wait()
    assert used >= 0.2  # the child spun while the watches watched

    def seconds(watch: LoadWatch) -> float:  # others' CPU seconds between the first and last reads
        return watch._others[-1] - watch._others[0]

    # Both watches read from before the child started to after it spun; two ticks each way for
    # the moments the two read at. The inner watch (not_ours) reads later and stops earlier: what
    # every process ran between the two watches' reads (on a loaded machine, while a read waited
    # for a core) falls in one window only, so it widens the margin, at most all cores' worth.
    cores = os.cpu_count() or 1
    apart = (not_ours._times[0] - ours._times[0]) + (ours._times[-1] - not_ours._times[-1])
    assert abs(seconds(not_ours) - seconds(ours) - used) <= 0.04 + cores * apart
    assert not_ours.others(start, end) > ours.others(start, end)


def test_others_are_read_over_a_window_of_a_fifth_of_a_second_at_least():
    watch = LoadWatch([])
    watch._times = [0.05 * i for i in range(9)]
    # Others used one core from 0.05 to 0.25, nothing before or after.
    watch._others = [min(max(t - 0.05, 0.0), 0.20) for t in watch._times]  # CPU seconds
    assert watch.others(0.05, 0.25) == pytest.approx(1.0)
    # 20 ms at the burst's end, widened to 0.14-0.34 and read from the reads around it (0.10-0.35).
    assert watch.others(0.23, 0.25) == pytest.approx(0.6)
    assert watch.busy(0.23, 0.25)
    assert not watch.busy(0.31, 0.40)  # after the burst: nothing
    assert LoadWatch([]).others(0.0, 1.0) is None  # never read


def test_a_tick_of_counting_error_over_a_short_span_is_no_load():
    # Counts cut to 10 ms units: over 30 ms of reads, an idle machine's one stray unit read as
    # 0.33 of a core, over two reads 0.67, and a short round of turns was called busy.
    watch = LoadWatch([])
    watch._times = [0.0, 0.015, 0.03]
    watch._others = [0.0, 0.01, 0.01]
    assert watch.others(0.0, 0.03) == 0.0 and not watch.busy(0.0, 0.03)
    watch._others = [0.0, 0.01, 0.03]  # a core busy over the span: beyond what cutting explains
    assert watch.others(0.0, 0.03) == pytest.approx(1.0) and watch.busy(0.0, 0.03)


def test_a_case_short_of_quiet_rounds_pairs_on_for_longer_but_not_forever():
    """Up to four times the turns its own rule took where its case lacks quiet rounds; the other
    allocator state, paired with nothing, never."""
    from arraybench.analysis.policy import takes_turn
    from arraybench.numeric.stopping import QUIET_STRETCH

    assert not takes_turn(extra=False, taken=6, done_at=3)
    assert takes_turn(extra=False, taken=6, done_at=3, short_of_quiet=True)
    assert not takes_turn(extra=False, taken=3 * QUIET_STRETCH, done_at=3, short_of_quiet=True)
    assert not takes_turn(extra=True, taken=3, done_at=3, short_of_quiet=True)


def test_a_cell_done_pairs_on_only_with_cells_near_its_time_unless_short_of_quiet_rounds():
    """A 110 ms gradient's pairs with 2 ms ones are decided by the rounds they have: it stops
    when its own rule says so; beside a cell within a factor of two, it pairs on."""
    from arraybench.analysis.policy import pairs_on

    slow, fast, near = [0.11, 0.12, 0.11], [0.002] * 5, [0.07, 0.08]
    assert not pairs_on(slow, [fast])
    assert pairs_on(slow, [fast, near])
    assert pairs_on(slow, [fast], short_of_quiet=True)  # under load: every pair, as before
    assert pairs_on(slow, [[]])  # no sample yet: near until it has one
    assert not pairs_on(slow, [])  # nothing left sampling to pair with...
    assert pairs_on(slow, [], short_of_quiet=True)  # ...but the done ones, for quiet rounds


def test_a_burst_over_part_of_a_long_round_makes_it_busy():
    watch = LoadWatch([])
    watch._times = [0.05 * i for i in range(41)]  # two seconds of reads
    # One core from 1.0 to 1.3 s: a tenth of a core over the whole two seconds.
    watch._others = [min(max(t - 1.0, 0.0), 0.30) for t in watch._times]
    assert watch.others(0.0, 2.0) == pytest.approx(0.15)
    assert watch.busy(0.0, 2.0)
    assert not watch.busy(0.0, 0.9) and not watch.busy(1.45, 2.0)


def test_a_worker_that_ends_during_the_turns_is_not_taken_for_another_process():
    """Its ticks read 0 once it is gone: the watch keeps the last it read, so the others' count
    does not jump by everything the worker had used."""
    child = subprocess.Popen([sys.executable, "-c", _SPIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    with LoadWatch([child.pid]) as watch:
        assert child.stdout.readline() == "spun\n"
        time.sleep(0.1)  # read alive, after the spin
        child.stdin.close()
        child.wait()
        time.sleep(0.1)  # read gone
    assert watch._last[child.pid] >= 0.35
    # What the others used over the child's exit is at most what the machine's cores could do,
    # not the child's 0.4 s poured into one read.
    gone = len(watch._times) - 1
    before = max(i for i, t in enumerate(watch._times) if t <= watch._times[gone] - 0.1)
    used = watch._others[gone] - watch._others[before]
    assert used <= (watch._times[gone] - watch._times[before]) * (os.cpu_count() or 1) + 0.02
