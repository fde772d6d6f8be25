"""What a run finds, in sentences, computed once per run; and the numerical agreement of its
libraries.

Findings: short plain sentences computed from the measured records alone.

Who wins each case and by how much, where crossovers fall, each library's per-call floor (its
dispatch overhead, from the fastest call measured), where compiling beats eager execution, what
share of the machine's ceiling each result reaches, and which results are wrong or failed. Nothing
here is written in advance: change the records and the sentences change.

Numerical agreement: each library's error against the float64 reference, per workload and dtype.

The seed's "why do NumPy and PyTorch give slightly different numbers?" answered with data: the
reference is NumPy in float64 on the very same inputs, so each number is that library's own
rounding (different summation orders, vectorised transcendental functions, FFT algorithms).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .explanations import explanations
from .sentences import (machine_findings, two_figures, environment_findings, memory_findings, faster_by,
                        not_apart, under_load, why_not_apart)
from ..analysis.crossover import Crossover, crossovers
from ..analysis.grouping import (baseline, grouped, is_valid, library_label, significantly_faster, size_text,
                                 config_sort_key)
from ..analysis.roofline import ceiling_key, ceilings, share
from ..analysis.pairs import SelfCheck
from ..model.cell import config_label
from ..model.pair import Pairs
from ..model.record import Record
from ..units import format_ratio, format_seconds

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


def _rows(records: Iterable[Record]) -> tuple[list[tuple[str, str, str, str]], list[Record],
                                               dict[tuple[str, str, str, str, str], Record]]:
    """(workload, size, dtype, output) rows, the configurations, and the record of each cell."""
    recs = [r for r in records if r.max_rel_error is not None or r.status == "wrong"]
    configs: dict[tuple, Record] = {}
    for r in recs:
        configs.setdefault(config_sort_key(r), r)
    ordered = [configs[k] for k in sorted(configs)]
    rows: list[tuple[str, str, str, str]] = []
    cells: dict[tuple[str, str, str, str, str], Record] = {}
    for r in sorted(recs, key=lambda r: (r.workload, r.size, r.dtype)):
        outputs = r.output_names or [""]
        for out in outputs:
            row = (r.workload, r.size_label, r.dtype, out)
            if row not in rows:
                rows.append(row)
            cells[row + (_column(r),)] = r
    return rows, ordered, cells


def _column(r: Record) -> str:
    """One column per library, device and mode (NumPy's finite-difference gradient included)."""
    return "|".join((r.backend, r.device, r.mode, str(r.transfer), r.environment))


def _header(r: Record) -> str:
    # NumPy's finite-difference gradient shares its library's column: named without the method.
    return config_label(r.backend, r.device, r.mode, transfer=r.transfer, machine=r.machine,
                        environment=r.environment)


FOOTNOTE = ("† judged against its own, looser tolerance: finite differences lose about sqrt(eps) "
            "times the loss's scale. ✗ / red: over tolerance, marked wrong (or skipped: a known "
            "limitation of the library, its reason in the run's table).")


def _over(r: Record, err: float | None) -> bool:
    """Marked over tolerance: a wrong cell, or one skipped for a known limitation whose error
    (of this output) the check found over its tolerance (MLX's float64 sin on the CPU)."""
    if r.status == "wrong":
        return True
    return r.status == "skipped" and err is not None and r.tolerance is not None and err > r.tolerance


def row_tolerance(row: tuple, configs: list[Record], cells: dict) -> float | None:
    """The tolerance most cells of a row are judged by (the strictest one present)."""
    found = [cells[row + (_column(c),)].tolerance for c in configs if row + (_column(c),) in cells]
    found = [t for t in found if t is not None]
    return min(found) if found else None


def _own_tolerance_mark(r: Record, row_tol: float | None) -> str:
    return "†" if (r.tolerance is not None and row_tol is not None and r.tolerance > row_tol) else ""


def output_error(r: Record, output: str) -> float | None:
    """The error of one named output of a record (or its overall error)."""
    if output and r.output_names and output in r.output_names:
        i = r.output_names.index(output)
        if i < len(r.output_errors):
            return r.output_errors[i]
    return r.max_rel_error


def print_numerics(records: Iterable[Record], console: Console) -> None:
    """The table ``arraybench numerics`` prints, and the footnote that reads its marks."""
    console.print(numerics_table(records))
    console.print(f"[dim]{FOOTNOTE}[/]")


def numerics_table(records: Iterable[Record]) -> Table:
    """Rows: workload, size, dtype (and output); columns: library/device; cells: max relative error."""
    rows, configs, cells = _rows(records)
    table = Table(title="error against the NumPy float64 reference (max relative error; red: over tolerance)",
                  header_style="bold", title_justify="left")
    for name in ("workload", "size", "dtype", "output", "tolerance"):
        table.add_column(name, no_wrap=True)
    for cfg in configs:
        table.add_column(_header(cfg), justify="right")
    for row in rows:
        tolerance = row_tolerance(row, configs, cells)
        values = []
        for cfg in configs:
            r = cells.get(row + (_column(cfg),))
            if r is None:
                values.append(Text("—", style="dim"))
                continue
            err = output_error(r, row[3])
            text = ("—" if err is None else f"{err:.1e}") + _own_tolerance_mark(r, tolerance)
            values.append(Text(text, style="bold red" if _over(r, err) else ""))
        table.add_row(row[0], row[1], row[2], row[3], f"{tolerance:.1e}" if tolerance is not None else "—",
                      *values)
    return table


def numerics_markdown(records: Iterable[Record]) -> str:
    """The same table as Markdown."""
    rows, configs, cells = _rows(records)
    head = ["workload", "size", "dtype", "output", "tolerance"] + [_header(c) for c in configs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        tolerance = row_tolerance(row, configs, cells)
        vals = []
        for cfg in configs:
            r = cells.get(row + (_column(cfg),))
            err = output_error(r, row[3]) if r is not None else None
            mark = (_own_tolerance_mark(r, tolerance) + (" ✗" if _over(r, err) else "")) if r else ""
            vals.append("—" if err is None else f"{err:.1e}{mark}")
        lines.append("| " + " | ".join([*row, f"{tolerance:.1e}" if tolerance is not None else "—", *vals]) + " |")
    return "\n".join(lines) + "\n\n" + FOOTNOTE + "\n"
