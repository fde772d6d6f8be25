"""The sentences a run's findings are made of: a ratio worded once, machines set against each other,
one library's builds set against each other, and memory peaks.

A run's findings as people read them: sentences, in a notebook and at a prompt alike.

Findings across machines, for results that hold several (``merge``, a cluster run).

"Which of our machines should run this?": for each case, each machine's fastest configuration set
against the fastest machine's, judged on the 95% intervals as everywhere else; for a workload
measured at several sizes, one sentence at its largest size, and from which size the faster
machine pulls ahead (``crossover.find`` between the two machines' best configurations).
Speed-ups *between libraries* stay within one machine (``findings.winners``); these sentences are
the only ones that set machines against each other.

Findings across environments (``--python``, ``--variant``): one library, several builds.

"Which *build*?": for each case a backend ran in several environments, the fastest environment set
against the slowest, judged on the 95% intervals as everywhere else, each named with the version
and BLAS its workers really ran ("NumPy 2.4.6 (OpenBLAS SkylakeX) [np2]"), read from what they
reported when they started (``environment["backends"]["numpy/cpu[np2]"]``). Speed-ups between
libraries stay in ``findings.winners``; these sentences set a library against itself.

A record's peak memory and energy per call in words, for the HTML report, the Markdown and
the findings (libraries whose peaks differ widely on a case: ``analysis.memory.memory_gaps``).

Where a figure is missing, the record's own reason goes in its place: an empty cell would read as
"costs nothing" or "forgot to measure", and neither is what happened.
"""

from __future__ import annotations

import html
import math
import re
from typing import Iterable, Any, Mapping

from ..analysis.crossover import Point, find
from ..analysis.grouping import comparison, grouped, is_valid, library_label, significantly_faster, size_text
from ..analysis.memory import FLOOR_BYTES, MemoryGap, allocator_reserve, memory_gaps, times_output
from ..model.cell import worker_key
from ..model.pair import Pairs
from ..model.record import Record
from ..units import format_ratio, format_speedup, format_seconds, PAGE_BYTES, format_peak, format_size


def faster_by(a: Record, b: Record, pairs: Pairs) -> str:
    """How much faster ``a`` is than ``b``, by their pair where they took turns together (the
    ratio every table shows), else by their medians: ``1.50× faster``."""
    return format_speedup(comparison(a, b, pairs)[1])


_LOADED = re.compile(r"(\d+) of (\d+) rounds under other processes' load kept")


def under_load(a: Record, b: Record, pairs: Pairs) -> str:
    """Where the pair of ``a`` and ``b`` kept rounds that other processes loaded, what the sentence
    built on it says in the same breath: `` (N of M of their rounds under other processes' load)``;
    else ""."""
    found = pairs.between(a.cell, b.cell)
    seen = _LOADED.search(found.method) if found is not None else None
    return f" ({seen[1]} of {seen[2]} of their rounds under other processes' load)" if seen else ""


def why_not_apart(a: Record, b: Record, pairs: Pairs) -> str:
    """Why no verdict separates ``a`` and ``b``, as the sentence gives it: their pair's ratio and
    interval where they took turns together (the medians, over all processes, come from other
    rounds), and why it was not judged where it was not."""
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
    """How a sentence says that no verdict separates ``a`` and ``b``: ``level`` (within ±5%,
    with 95% confidence), or ``not told apart`` (the run cannot say which is faster)."""
    return "level" if comparison(a, b, pairs)[0] == "level" else "not told apart"


class Findings(list):
    """The findings of a run (``Results.findings()``): a list of sentences that shows as them.

    Still a list (index it, loop over it, compare it); in a notebook it displays as a bulleted
    list, and ``print`` or the prompt show one sentence a line.
    """

    def __str__(self) -> str:
        return "\n".join(f"- {sentence}" for sentence in self) if self else "(no findings)"

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        if not self:
            return "<p><i>no findings</i></p>"
        items = "".join(f"<li>{html.escape(str(sentence))}</li>" for sentence in self)
        return f"<ul class='arraybench-findings'>{items}</ul>"


def two_figures(x: float | None) -> int:
    """An interpolated size is no more precise than two significant figures."""
    if x is None:
        return 0
    digits = max(0, int(math.floor(math.log10(max(x, 1)))) - 1)
    return int(round(x, -digits))


def _best_by_machine(group: Iterable[Record]) -> dict[str, Record]:
    best: dict[str, Record] = {}
    for r in group:
        if is_valid(r) and (r.machine not in best or r.median_s < best[r.machine].median_s):
            best[r.machine] = r
    return best


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
    sizes_of: dict[str, set[int]] = {}
    for r in records:
        if is_valid(r):
            sizes_of.setdefault(r.workload, set()).add(r.size)
    out = []
    for (workload, _label), group in grouped(records).items():
        if workload.startswith("ceiling_"):
            continue
        swept = len(sizes_of.get(workload, ())) >= 3
        if swept and group[0].size != max(sizes_of[workload]):
            continue  # a sweep: one sentence, at its largest size
        best = _best_by_machine(group)
        if len(best) < 2:
            continue
        ranked = sorted(best.values(), key=lambda r: r.median_s)
        top = ranked[0]
        for other in ranked[1:]:
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


def build_text(info: Mapping[str, Any]) -> str:
    """The BLAS a worker reported, in a few words: "OpenBLAS 0.3.31 SkylakeX", "MKL"."""
    blas = info.get("blas") or info.get("torch_blas") or info.get("blas_build") or ""
    text = str(blas).replace("openblas", "OpenBLAS").replace("mkl", "MKL") if blas else ""
    if info.get("blas_architecture"):
        text = f"{text} {info['blas_architecture']}".strip()
    return text


def build_label(r: Record, environment: Mapping[str, Any] | None) -> str:
    """``NumPy 2.4.6 (OpenBLAS 0.3.31 SkylakeX) [np2]``: the library, the version and BLAS its
    workers ran in ``r``'s environment, and the environment's label."""
    from ..backends import SPECS

    workers = (environment or {}).get("backends")
    machines = (environment or {}).get("machines")
    if r.machine and isinstance(machines, Mapping) and isinstance(machines.get(r.machine), Mapping):
        workers = machines[r.machine].get("backends")
    info = workers.get(worker_key(r.backend, r.device, r.environment)) if isinstance(workers, Mapping) else None
    info = info if isinstance(info, Mapping) else {}
    name = SPECS[r.backend].label if r.backend in SPECS else r.backend
    version = info.get("version")
    text = f"{name} {version}" if version else name
    if r.device != "cpu":
        text += f" {r.device.upper()}"
    build = build_text(info)
    if build:
        text += f" ({build})"
    if not r.environment:
        return text
    # A variant's variables are what sets it apart (its build may be the same): said with it.
    described = (environment or {}).get("environments")
    own = described.get(r.environment) if isinstance(described, Mapping) else None
    variables = own.get("variables") if isinstance(own, Mapping) else None
    if isinstance(variables, Mapping) and variables:
        return f"{text} [{r.environment}: {', '.join(f'{k}={v}' for k, v in variables.items())}]"
    return f"{text} [{r.environment}]"


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
            if significantly_faster(fast, slow, pairs):
                out.append(f"On {where}, {a} is {faster_by(fast, slow, pairs)} than {b} "
                           f"({times}).")
            else:
                out.append(f"On {where}, {a} and {b} are {not_apart(fast, slow, pairs)} ({times}).")
            continue
        parts = [(f"{faster_by(fast, o, pairs)} than " if significantly_faster(fast, o, pairs)
                  else f"{not_apart(fast, o, pairs)}: ") + f"{build_label(o, environment)} ({format_seconds(o.median_s)})"
                 for o in rest]
        out.append(f"On {where}, {a} is fastest at {format_seconds(fast.median_s)}: {'; '.join(parts)}.")
    return out


#: A record written before energy was measured keeps no reason of its own.
_NO_ENERGY_NOTE = "energy not measured (results written before arraybench measured it)"
_NO_PEAK_NOTE = "peak memory not measured (results written before arraybench measured it)"


def peak_text(r: Record) -> str:
    """The peak memory per call ("24 MB"), or "—" where there is none."""
    return format_peak(r.peak_bytes) if is_valid(r) and r.peak_bytes is not None else "—"


def peak_sub(r: Record) -> list[str]:
    """What goes under a peak: "2.1× the output", the caching allocator's reserve, or why none."""
    if not is_valid(r):
        return []
    if r.peak_bytes is None:
        return [r.peak_note or _NO_PEAK_NOTE]
    return peak_details(r)


def peak_details(r: Record) -> list[str]:
    """What to read beside a peak: "2.1× the output", "64 MB reserved by the caching allocator"."""
    out = []
    multiple = times_output(r)
    if multiple is not None and (r.peak_bytes or 0) >= PAGE_BYTES:
        out.append(f"{format_ratio(multiple)} the output")
    reserve = allocator_reserve(r)
    if reserve is not None:
        out.append(f"{format_size(reserve)} reserved by the caching allocator")
    return out


def gap_sentence(gap: MemoryGap) -> str:
    """"JAX CPU needs 2.0× the memory of PyTorch CPU for fft large (n = ...): 48 MB against 24 MB"."""
    more, less = gap.more, gap.less
    where = f"{more.workload} {size_text(more)}" + (f" on {more.machine}" if more.machine else "")
    if (less.peak_bytes or 0) < FLOOR_BYTES:
        text = (f"{library_label(more)} needs {format_size(more.peak_bytes)} per call for {where}, "
                f"{library_label(less)} under {format_size(FLOOR_BYTES)}")
    else:
        text = (f"{library_label(more)} needs {format_ratio(gap.ratio)} the memory of "
                f"{library_label(less)} for {where}: {format_size(more.peak_bytes)} against "
                f"{format_size(less.peak_bytes)}")
    said = [f"{library_label(r)}'s peak is {'; '.join(peak_details(r))}" for r in (more, less) if peak_details(r)]
    return text + (f" ({'; '.join(said)})" if said else "") + "."


def memory_findings(records: Iterable[Record]) -> list[str]:
    """The findings' sentences on memory: one per case whose libraries' peaks differ widely."""
    return [gap_sentence(gap) for gap in memory_gaps(records)]


def format_energy(joules: float | None) -> str:
    """Joules in three figures and a fitting unit: ``0.0123`` -> ``"12.3 mJ"``; None -> "—"."""
    if joules is None:
        return "—"
    for unit, scale in (("J", 1.0), ("mJ", 1e-3), ("µJ", 1e-6)):
        if joules >= scale * 0.9995 or unit == "µJ":
            return f"{joules / scale:.3g} {unit}"
    return f"{joules:.3g} J"  # unreachable


def energy_why(r: Record) -> str:
    """Why a record has no energy figure (its own words), or "" where it has one."""
    return "" if r.energy_j is not None else (r.energy_note or _NO_ENERGY_NOTE)


def energy_measured(records: Iterable[Record]) -> bool:
    """Whether any valid record has an energy figure (a column is worth its room)."""
    return any(is_valid(r) and r.energy_j is not None for r in records)


def energy_absent(records: Iterable[Record]) -> list[str]:
    """Where no column shows energy: one line per reason, naming the configurations it holds for,
    so that every valid record's missing figure is explained."""
    why: dict[str, list[str]] = {}
    for r in records:
        if is_valid(r) and r.energy_j is None:
            labels = why.setdefault(energy_why(r), [])
            if r.config_label not in labels:
                labels.append(r.config_label)
    return [f"Energy per call not measured for {', '.join(labels)}: {reason}" for reason, labels in why.items()]
