"""The one decision of every gate (``compare --fail-above``, ``run --compare ... --fail-above``,
the pytest plugin's ``--arraybench-fail-above``): whether a run may pass against its baseline."""

from __future__ import annotations

from ..errors import one_line


def gate_failures(comparison, limit: float, *, fail_option: str = "--fail-above",
                  processes_option: str = "--processes", memory: bool = False) -> list[str]:
    """Why the new run must not pass a gate of ``limit`` (one line per reason; none: it passes).

    The one decision of every gate (``compare --fail-above``, the pytest plugin's
    ``--arraybench-fail-above``): a significant slowdown above the limit, a cell that broke, a
    cell the new run did not measure (skipped), a slowdown above it that no test could judge (one
    process on a side), or no cell compared at all; with ``memory``, a cell whose peak memory per
    call grew above the limit (``analysis.memory.memory_growth_above``).
    The option names are the caller's, so that each line says what its user types.
    """
    lines = []
    bad = comparison.slowdowns_above(limit)
    if bad:
        names = ", ".join(f"{c.new.workload} {c.new.size_label} {c.new.config_label} ({c.ratio:.3f})"
                          for c in bad)
        lines.append(f"{len(bad)} significant slowdown{'s' if len(bad) != 1 else ''} above "
                     f"{limit:.0%}: {one_line(names)}")
    broken = comparison.broken()
    if broken:
        names = ", ".join(f"{c.new.workload} {c.new.size_label} {c.new.config_label} ({c.new.status})"
                          for c in broken)
        many = len(broken) != 1
        lines.append(f"{len(broken)} cell{'s that were' if many else ' that was'} ok in the base "
                     f"run broke in the new run: {one_line(names)}")
    unmeasured = comparison.unmeasured()
    if unmeasured:
        names = ", ".join(f"{c.new.workload} {c.new.size_label} {c.new.config_label}"
                          + (f" ({c.new.reason})" if c.new.reason else "") for c in unmeasured)
        many = len(unmeasured) != 1
        lines.append(f"{len(unmeasured)} cell{'s' if many else ''} measured in the base run "
                     f"{'were' if many else 'was'} not measured in the new run: {one_line(names)}; "
                     f"{fail_option} passes nothing unseen")
    unjudged = comparison.unjudged_above(limit)
    if unjudged:
        names = ", ".join(f"{c.new.workload} {c.new.size_label} {c.new.config_label} ({c.ratio:.3f})"
                          for c in unjudged)
        lines.append(f"{len(unjudged)} cell{'s' if len(unjudged) != 1 else ''} slower than "
                     f"{limit:.0%} could not be judged (one process on a side; measure with "
                     f"{processes_option} 2 or more): {one_line(names)}; {fail_option} passes "
                     "nothing unseen")
    if memory:
        from .memory import memory_growth_above

        grown = memory_growth_above(comparison, limit)
        if grown:
            lines.append(f"{len(grown)} peak memory growth{'s' if len(grown) != 1 else ''} above "
                         f"{limit:.0%}: {one_line(', '.join(m.text() for m in grown))}")
    if not comparison.comparable:
        lines.append(f"no cell could be compared (none was valid in both runs); {fail_option} "
                     "passes nothing unseen")
    return lines
