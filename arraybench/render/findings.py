"""Findings: short plain sentences computed from the measured records alone.

Who wins each case and by how much, where crossovers fall, each library's per-call floor (its
dispatch overhead, from the fastest call measured), where compiling beats eager execution, what
share of the machine's ceiling each result reaches, and which results are wrong or failed. Nothing
here is written in advance: change the records and the sentences change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from .across_machines import machine_findings, two_figures
from ..analysis.crossover import Crossover, crossovers
from .environments import environment_findings
from .explanations import explanations
from .footprint_text import memory_findings
from .sentences import faster_by, not_apart, under_load, why_not_apart
from ..model.cell import config_label
from ..model.pair import Pairs
from ..model.record import Record
from ..units import format_ratio, format_seconds
from ..analysis.grouping import baseline, grouped, is_valid, library_label, significantly_faster, size_text
from ..analysis.roofline import ceiling_key, ceilings, share
from ..analysis.self_check import SelfCheck

if TYPE_CHECKING:
    from ..model.results import Results



def winners(records: Iterable[Record], pairs: Pairs = Pairs()) -> list[str]:
    """For each workload and size: the fastest configuration and its margin over the runner-up,
    by the verdicts of the run's ``pairs``."""
    records = list(records)
    out = []
    swept = {w for w in {r.workload for r in records} if _swept(records, w)}
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
        why = "within 5% of each other" if word == "level" else why_not_apart(best, second, pairs)
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
    """Configuration names that say how each computed its gradient, where the sentence sets
    autodiff against finite differences (the ratio is then mostly the method's)."""
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
    """A crossover's sentence, saying so where one side is autodiff and the other finite
    differences (its labels name only the finite differences)."""
    named = [r for r in records if r.workload == c.workload and r.config_label in (c.a, c.b)]
    clause = _unequal_gradients(named, c.workload)
    return crossover_sentence(c) + (f" That is{clause[1:]}." if clause else "")


def _swept(records: list[Record], workload: str) -> bool:
    return len({r.size for r in records if r.workload == workload}) >= 3


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
    eager = {(r.machine, r.workload, r.size, r.backend, r.device, r.dtype, r.transfer, r.environment): r
             for r in records if r.mode == "latency" and is_valid(r)}
    out = []
    for r in records:
        if r.mode != "compiled" or not is_valid(r):
            continue
        e = eager.get((r.machine, r.workload, r.size, r.backend, r.device, r.dtype, r.transfer,
                       r.environment))
        if e is None:
            continue
        where = f"{r.workload} {size_text(r)}"
        compile_note = f"; compiling took {format_seconds(r.compile_s)}{_cached(r)}" if r.compile_s else ""
        name = f"{r.method} on {e.config_label}"
        if significantly_faster(r, e, pairs):
            out.append(f"{name} is {faster_by(r, e, pairs)} than eager on {where} "
                       f"({format_seconds(r.median_s)} vs {format_seconds(e.median_s)}{compile_note}).")
        elif significantly_faster(e, r, pairs):
            out.append(f"{name} is slower than eager on {where} ({format_seconds(r.median_s)} vs "
                       f"{format_seconds(e.median_s)}{compile_note}).")
        else:
            out.append(f"{name} and eager are {not_apart(r, e, pairs)} on {where}{compile_note}.")
    return out


def _cached(r: Record) -> str:
    """Where the worker saw the compile served (or possibly served) from a disk cache: said, since
    a cache load (70 ms) is no compile time (1.6 s the first time)."""
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
        shares = [(share(r, table), r) for r in group if is_valid(r)]
        shares = [(s, r) for s, r in shares if s is not None]
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
    out = []
    for r in records:
        if r.status in ("wrong", "failed"):
            verb = "gave a wrong result" if r.status == "wrong" else "failed"
            out.append(f"{r.config_label} {verb} on {r.workload} {size_text(r)}: {r.reason}.")
    return out


def self_check_lines(results: "Results") -> list[str]:
    """The run's self-check in one sentence (first among the findings, and above the table): how
    many A/A pairs, how many level, undecided, faster or slower, and the drift; none where the
    run did not check itself."""
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
    """Every finding, in reading order, its verdicts those of the run's ``pairs``; with the run's
    ``environment``, also the kernels each library runs (``explanations``)."""
    records = list(records)
    return (
        winners(records, pairs)
        + machine_findings(records, pairs)
        + environment_findings(records, environment, pairs)
        + [_crossover(c, records) for c in crossovers(records) if _swept(records, c.workload)]
        + overheads(records)
        + compiled_vs_eager(records, pairs)
        + ceiling_shares(records)
        + memory_findings(records)
        + explanations(records, environment)
        + problems(records)
    )
