"""What a run finds, in plain sentences computed from its records alone (once per run). Speed-ups between
libraries stay within one machine and one environment; machines and builds get sentences of their own."""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterable, Mapping

from .explanations import build_label, explanations
from .tables import gap_sentence
from ..analysis.crossover import Crossover, Point, crossovers, find
from ..analysis.grouping import (baseline, comparison, grouped, is_valid, library_label, significantly_faster,
                                 size_text, swept_workloads)
from ..analysis.memory import memory_gaps
from ..analysis.roofline import ceiling_key, ceilings, share
from ..analysis.pairs import SelfCheck
from ..numeric.stopping import LEVEL_WITHIN
from ..model.cell import config_label
from ..model.results import Pairs, Results
from ..model.record import Record
from ..units import format_ratio, format_seconds, format_speedup


def faster_by(a: Record, b: Record, pairs: Pairs) -> str:
    """``1.50× faster``: ``a`` against ``b`` by their pair where they took turns, else by their medians."""
    return format_speedup(comparison(a, b, pairs)[1])


_LOADED = re.compile(r"(\d+) of (\d+) rounds under other processes' load kept")


def under_load(a: Record, b: Record, pairs: Pairs) -> str:
    """`` (N of M of their rounds under other processes' load)`` where their pair kept such rounds, else ""."""
    found = pairs.between(a.cell, b.cell)
    seen = _LOADED.search(found.method) if found is not None else None
    return f" ({seen[1]} of {seen[2]} of their rounds under other processes' load)" if seen else ""


def why_not_apart(a: Record, b: Record, pairs: Pairs) -> str:
    """Why no verdict separates ``a`` and ``b``: their pair's ratio and interval, and why it was not judged."""
    found = pairs.between(a.cell, b.cell)
    if found is None:
        return "this run cannot say which is faster"
    said = (f"round by round, the first takes {format_ratio(found.ratio)} the time of the second, "
            f"95% interval {format_ratio(found.ci_low)} to {format_ratio(found.ci_high)}: "
            "this run cannot say which is faster")
    if found.not_judged:
        said += ", not judged: " + found.not_judged
    return said


def not_apart(a: Record, b: Record, pairs: Pairs) -> str:
    """``level`` (within ±10%, with 95% confidence) or ``not told apart``."""
    return "level" if comparison(a, b, pairs)[0] == "level" else "not told apart"


def two_figures(x: float) -> int:
    """An interpolated size (a "from" crossover always has one) is no more precise than two significant figures."""
    digits = max(0, int(math.floor(math.log10(max(x, 1)))) - 1)
    return int(round(x, -digits))


def _name(machine: str) -> str:
    return machine or "this machine"


def _points(records: Iterable[Record], like: Record) -> list[Point]:
    return [Point(r.size, r.median_s, r.ci_low_s, r.ci_high_s) for r in records
            if is_valid(r) and r.machine == like.machine and r.workload == like.workload
            and (r.backend, r.device, r.mode, r.transfer) == (like.backend, like.device, like.mode, like.transfer)]


def machine_findings(records: Iterable[Record], pairs: Pairs = Pairs()) -> list[str]:
    """One sentence per case (or per swept workload) that more than one machine measured."""
    records = list(records)
    if len({r.machine for r in records}) < 2:
        return []
    # A sweep's largest size (a sweep gets one sentence, there).
    largest = {w: max(r.size for r in records if r.workload == w and is_valid(r)) for w in swept_workloads(records)}
    out = []
    for (workload, _label), group in grouped(records).items():
        swept = workload in largest
        if workload.startswith("ceiling_") or (swept and group[0].size != largest[workload]):
            continue
        best: dict[str, Record] = {}  # each machine's fastest, fastest first
        for r in sorted((r for r in group if is_valid(r)), key=lambda r: r.median_s):
            best.setdefault(r.machine, r)
        if len(best) < 2:
            continue
        top, *ranked = best.values()
        for other in ranked:
            where = f"{workload} {size_text(top)}"
            pair = (f"{library_label(top)} {format_seconds(top.median_s)} against "
                    f"{library_label(other)} {format_seconds(other.median_s)}, each machine's fastest")
            if not significantly_faster(top, other, pairs):
                out.append(f"On {where}, {_name(top.machine)} and {_name(other.machine)} are "
                           f"{not_apart(top, other, pairs)} ({pair}).")
                continue
            text = (f"On {where}, {_name(top.machine)} is {faster_by(top, other, pairs)} "
                    f"than {_name(other.machine)} ({pair})")
            if swept:
                c = find(workload, top.config_label, _points(records, top), other.config_label,
                         _points(records, other))
                if c is not None and c.kind == "from" and c.size:
                    text += f", from n ≈ {two_figures(c.size):,}"
                elif c is not None and c.kind == "always":
                    text += f", at every size measured from n = {c.sizes[0]:,}"
            out.append(text + ".")
    return out


def environment_findings(records: Iterable[Record], environment: Mapping[str, Any] | None = None,
                         pairs: Pairs = Pairs()) -> list[str]:
    """For each case a configuration ran in several environments: the fastest against the slowest."""
    cases: dict[tuple, list[Record]] = {}
    for r in records:
        if is_valid(r) and not r.workload.startswith("ceiling_"):
            key = (r.machine, r.workload, r.size_label, r.backend, r.device, r.mode, r.transfer, r.dtype)
            cases.setdefault(key, []).append(r)
    out = []
    for group in cases.values():
        if len({r.environment for r in group}) < 2:
            continue
        ordered = sorted(group, key=lambda r: r.median_s)
        fast, rest = ordered[0], ordered[1:]
        where = f"{fast.workload} {size_text(fast)}" + (f" on {fast.machine}" if fast.machine else "")
        a = build_label(fast, environment)
        if len(rest) == 1:
            slow = rest[0]
            b = build_label(slow, environment)
            times = f"{format_seconds(fast.median_s)} against {format_seconds(slow.median_s)}"
            said = (f"{a} is {faster_by(fast, slow, pairs)} than {b}" if significantly_faster(fast, slow, pairs)
                    else f"{a} and {b} are {not_apart(fast, slow, pairs)}")
            out.append(f"On {where}, {said} ({times}).")
            continue
        parts = [(f"{faster_by(fast, o, pairs)} than " if significantly_faster(fast, o, pairs)
                  else f"{not_apart(fast, o, pairs)}: ") + f"{build_label(o, environment)} ({format_seconds(o.median_s)})"
                 for o in rest]
        out.append(f"On {where}, {a} is fastest at {format_seconds(fast.median_s)}: {'; '.join(parts)}.")
    return out


def winners(records: Iterable[Record], pairs: Pairs = Pairs()) -> list[str]:
    """For each workload and size: the fastest configuration and its margin over the runner-up."""
    records = list(records)
    out = []
    swept = swept_workloads(records)
    for (workload, label), whole in grouped(records).items():
        if workload.startswith("ceiling_") or (not label.isidentifier() and workload in swept):
            continue  # a sweep is summed up by its crossovers, not size by size
        for machine in dict.fromkeys(r.machine for r in whole):  # libraries meet on one machine
            group = [r for r in whole if r.machine == machine]
            out += _winner(workload, group, f" on {machine}" if machine else "", pairs)
    return out


def _winner(workload: str, group: list[Record], on: str, pairs: Pairs) -> list[str]:
    """The winner sentence of one case on one machine (``on``: " on LABEL" or "")."""
    valid = sorted((r for r in group if is_valid(r)), key=lambda r: r.median_s)
    if len(valid) < 2:
        return []
    if len({(r.backend, r.device, r.mode, r.transfer, r.gradient) for r in valid}) == 1:
        return []  # one library in several environments: environment_findings names their builds
    best, second = valid[0], valid[1]
    if significantly_faster(second, best, pairs):
        best, second = second, best  # their pair, side by side, orders them against their medians
    where = f"{workload} {size_text(best)}{on}"
    base = baseline(group)
    named = [best, second] + ([base] if base is not None and base is not best and base is not second else [])
    label = _gradient_labels(named)
    if not significantly_faster(best, second, pairs):
        word = not_apart(best, second, pairs)
        why = f"within {LEVEL_WITHIN:.0%} of each other" if word == "level" else why_not_apart(best, second, pairs)
        return [f"On {where}, {label(best)} and {label(second)} are {word} "
                f"({format_seconds(best.median_s)} and {format_seconds(second.median_s)}, their medians; "
                f"{why}){_unequal_gradients(named[:2], workload)}."]
    text = (f"On {where}, {label(best)} is fastest at {format_seconds(best.median_s)}, "
            f"{faster_by(best, second, pairs)} than {label(second)}{under_load(best, second, pairs)}")
    if len(named) == 3:
        text += f" and {faster_by(best, base, pairs)} than {label(base)}"
    if best.median_s > second.median_s:
        text += (f" (side by side, round by round; their medians over all processes, "
                 f"{format_seconds(best.median_s)} and {format_seconds(second.median_s)}, order "
                 "them the other way)")
    return [text + _unequal_gradients(named, workload) + "."]


def _gradient_labels(records: list[Record]) -> Callable[[Record], str]:
    """Names that say how each computed its gradient, where the methods differ (the ratio is then theirs)."""
    if not _unequal_gradients(records, ""):
        return library_label

    def label(r: Record) -> str:
        text = config_label(r.backend, r.device, r.mode, transfer=r.transfer, environment=r.environment)
        method = {"autodiff": "autodiff", "finite_differences": "finite differences",
                  "analytic": "analytic gradient"}.get(r.gradient or "")
        return f"{text} ({method})" if method else text

    return label


def _unequal_gradients(records: list[Record], workload: str) -> str:
    """The clause a comparison of gradients computed in different ways ends with, or ""."""
    kinds = {r.gradient for r in records}
    if {"autodiff", "analytic"} <= kinds and "finite_differences" not in kinds:
        return (f": the workload's own hand-written gradient (@{workload}.gradient) against "
                f"autodiff of the loss, so the ratio is between two codes, not only two libraries")
    if not {"autodiff", "finite_differences"} <= kinds:
        return ""
    return (f": autodiff against finite differences, which take one pass of the loss per "
            f"parameter; give the libraries without autodiff a gradient of their own "
            f"(@{workload}.gradient(\"numpy\")) to compare them on equal terms")


def crossover_sentence(c: Crossover) -> str:
    """The crossover as a plain sentence."""
    lo, hi = c.sizes
    tail = ""
    if c.level_from is not None and c.kind in ("from", "always"):
        tail = f" From n = {c.level_from:,} on they are level (within the 95% CIs)."
    if c.kind == "always":
        return (f"{c.a} beats {c.b} on {c.workload} at every size measured "
                f"(n = {lo:,} to {hi:,}).{tail}")
    if c.kind == "never":
        ratio = c.ratio_at_largest or 1.0
        where = (f"{format_ratio(ratio)} its time at n = {hi:,}" if ratio > 1
                 else f"level at n = {hi:,}")
        return f"{c.a} never beats {c.b} on {c.workload} up to n = {hi:,} ({where})."
    if c.kind == "from":
        return (f"{c.a} beats {c.b} on {c.workload} from n ≈ {two_figures(c.size):,} "
                f"(between the measured {c.lower:,} and {c.upper:,}).{tail}")
    return f"{c.a} and {c.b} are level on {c.workload} at every size measured (n = {lo:,} to {hi:,})."


def _crossover(c: Crossover, records: list[Record]) -> str:
    """A crossover's sentence, saying so where the two sides computed their gradients differently."""
    named = [r for r in records if r.workload == c.workload and r.config_label in (c.a, c.b)]
    clause = _unequal_gradients(named, c.workload)
    return crossover_sentence(c) + (f" That is{clause[1:]}." if clause else "")


def overheads(records: Iterable[Record]) -> list[str]:
    """Each configuration's fastest call: an upper bound on its fixed per-call cost."""
    best: dict[str, Record] = {}
    for r in records:
        if not is_valid(r) or r.workload.startswith("ceiling_"):
            continue
        # Finite differences call the same library: its floor is the library's.
        label = config_label(r.backend, r.device, r.mode, transfer=r.transfer, machine=r.machine,
                             environment=r.environment)
        if label not in best or r.median_s < best[label].median_s:
            best[label] = r
    if len(best) < 2:
        return []
    parts = [f"{label} {format_seconds(r.median_s)} ({r.workload} {r.size_label})"
             for label, r in sorted(best.items(), key=lambda kv: kv[1].median_s)]
    return ["Per-call floor (the fastest call measured, which bounds dispatch overhead): "
            + "; ".join(parts) + "."]


def compiled_vs_eager(records: Iterable[Record], pairs: Pairs = Pairs()) -> list[str]:
    """Where jax.jit / torch.compile beat eager execution, and what compiling cost."""
    records = list(records)
    def case(r: Record) -> tuple:
        return r.machine, r.workload, r.size, r.backend, r.device, r.dtype, r.transfer, r.environment

    eager = {case(r): r for r in records if r.mode == "latency" and is_valid(r)}
    out = []
    for r in records:
        if r.mode != "compiled" or not is_valid(r):
            continue
        e = eager.get(case(r))
        if e is None:
            continue
        where = f"{r.workload} {size_text(r)}"
        compile_note = f"; compiling took {format_seconds(r.compile_s)}{_cached(r)}" if r.compile_s else ""
        name = f"{r.method} on {e.config_label}"
        if significantly_faster(r, e, pairs) or significantly_faster(e, r, pairs):
            how = faster_by(r, e, pairs) if significantly_faster(r, e, pairs) else "slower"
            out.append(f"{name} is {how} than eager on {where} ({format_seconds(r.median_s)} vs "
                       f"{format_seconds(e.median_s)}{compile_note}).")
        else:
            out.append(f"{name} and eager are {not_apart(r, e, pairs)} on {where}{compile_note}.")
    return out


def _cached(r: Record) -> str:
    """Whether the compile came from a disk cache: a cache load (70 ms) is no compile (1.6 s)."""
    if any("served from a disk cache" in w and "may be" not in w for w in r.warnings):
        return ", served from a disk cache (a cold compile takes longer)"
    if any("from a disk cache" in w for w in r.warnings):
        return ", which may have been served from a disk cache"
    return ""


def ceiling_shares(records: Iterable[Record]) -> list[str]:
    """The best share of the measured ceiling reached on each workload and size."""
    records = list(records)
    table = ceilings(records)
    if not table:
        return []
    out = []
    for (workload, _label), group in grouped(records).items():
        if workload.startswith("ceiling_"):
            continue
        shares = [(s, r) for r in group if is_valid(r) and (s := share(r, table)) is not None]
        if not shares:
            continue
        s, r = max(shares, key=lambda sr: sr[0])
        ridge = table[ceiling_key(r)].ridge
        bound = "compute" if (r.flops and r.bytes and ridge and r.flops / r.bytes >= ridge) else "memory"
        note = ""
        if s > 1.05:
            note = (" (above 100%: its data fits in cache, faster than the memory the ceiling was measured from)"
                    if bound == "memory" else
                    " (above 100%: it beat the ceiling's own measurement, which has noise of its own)")
        owner = f"{r.device.upper()}'s" + (f" (on {r.machine})" if r.machine else "")
        out.append(f"On {workload} {size_text(r)}, {r.config_label} reaches {s:.0%} of the "
                   f"{owner} measured {bound} ceiling{note}.")
    return out


def problems(records: Iterable[Record]) -> list[str]:
    """Wrong and failed results, said plainly."""
    return [f"{r.config_label} {'gave a wrong result' if r.status == 'wrong' else 'failed'} on "
            f"{r.workload} {size_text(r)}: {r.reason}." for r in records if r.status in ("wrong", "failed")]


def self_check_lines(results: "Results") -> list[str]:
    """The run's A/A self-check in one sentence (first among the findings, and above the table)."""
    if not results.twins and not results.self_check:
        return []
    check = SelfCheck(tuple(results.self_check))
    if not check.pairs:
        return ["Self-check: no pair of the configuration and its twin was timed side by side."]
    n = len(check.pairs)
    said = (f"Self-check: {check.pairs[0].b_label} against itself in {n} case{'s' if n != 1 else ''}: "
            f"{check.level} level, {n - check.level - len(check.false)} undecided, "
            f"{len(check.false)} called faster or slower; median drift {format_ratio(check.drift)}")
    if check.false:
        return [said + f" (up to {format_ratio(check.worst)}). This run's verdicts are unreliable: the machine "
                "moved identical configurations apart while it ran."]
    if not check.level:
        return [said + ": none was found level, so on this machine, now, only wide differences can be told apart."]
    return [said + "."]


def findings(records: Iterable[Record], environment: Mapping[str, Any] | None = None,
             pairs: Pairs = Pairs()) -> list[str]:
    """Every finding, in reading order, its verdicts those of the run's ``pairs``."""
    records = list(records)
    swept = swept_workloads(records)
    return (
        winners(records, pairs)
        + machine_findings(records, pairs)
        + environment_findings(records, environment, pairs)
        + [_crossover(c, records) for c in crossovers(records) if c.workload in swept]
        + overheads(records)
        + compiled_vs_eager(records, pairs)
        + ceiling_shares(records)
        + [gap_sentence(gap) for gap in memory_gaps(records)]
        + explanations(records, environment)
        + problems(records)
    )


