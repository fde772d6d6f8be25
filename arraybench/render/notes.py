"""What a results table says in every format: each cell's text, and the notes under it said once.

A busy run gives nearly every row a warning of its own. A note's kind is its heading (the text before
``": "``) with numbers masked; texts alike but for their numbers are said once with each number's range
over the rows, naming the rows covered; a note covering every row is said once above the others.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Hashable, Iterable, Mapping, Sequence

from ..analysis.grouping import comparison, is_valid, size_detail, size_text
from ..analysis.roofline import achieved
from ..model.cell import config_label
from ..model.results import Pairs, Results
from ..model.record import Record
from ..numeric.stopping import LEVEL_WITHIN
from ..units import format_interval, format_rate, format_speedup


# A number as the notes write them: 12, 1,365, 12.8 (a sign or unit is the text around it).
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class Row:
    """A table row, as a note names it: its case (``matmul large``) and its library."""

    case: str
    library: str


@dataclass
class Item:
    """One text of a note, its numbers merged across the rows it covers (``ranged``: as ``0.3–0.6 of 2 cores``)."""

    text: str
    rows: list[Row]
    ranged: bool = False


@dataclass
class Note:
    """One numbered note: a heading and its items; ``everywhere`` when it covers every row (no row carries it)."""

    number: int
    kind: str
    heading: str
    items: list[Item]
    everywhere: bool = False


@dataclass
class NoteBook:
    """The notes of one table. ``add`` every row's texts first, then read ``refs`` and ``notes``."""

    rows: list[Row] = field(default_factory=list)
    #: The rows that were measured (those whose notes are warnings, not a reason).
    measured: list[Row] = field(default_factory=list)
    _by_kind: dict[str, dict[str, list[tuple[str, Row]]]] = field(default_factory=dict)
    _of_row: dict[Hashable, list[str]] = field(default_factory=dict)

    def add(self, key: Hashable, row: Row, texts: Iterable[str], *, measured: bool = True) -> None:
        """The notes of one row (``key`` identifies it for ``refs``)."""
        self.rows.append(row)
        if measured:
            self.measured.append(row)
        kinds = self._of_row.setdefault(key, [])
        for text in texts:
            text = " ".join(str(text).split())
            if not text:
                continue
            kind = _mask(heading_of(text))
            self._by_kind.setdefault(kind, {}).setdefault(_mask(text), []).append((text, row))
            if kind not in kinds:
                kinds.append(kind)

    @cached_property
    def notes(self) -> list[Note]:
        """Every note: those covering every row first, then the others numbered in their first rows' order."""
        everyone = set(self.measured)
        built = []
        for kind, templates in self._by_kind.items():
            items = []
            for members in templates.values():
                texts = [t for t, _ in members]
                merged = merge_numbers(texts)
                items.append(Item(merged, list(dict.fromkeys(row for _, row in members)), merged not in texts))
            heading = merge_numbers([heading_of(t) for members in templates.values() for t, _ in members])
            covered = {row for item in items for row in item.rows}
            built.append(Note(0, kind, heading, items, everywhere=len(everyone) > 1 and covered >= everyone))
        built.sort(key=lambda n: not n.everywhere)  # stable: first-seen order otherwise
        for i, note in enumerate((n for n in built if not n.everywhere), 1):
            note.number = i
        return built

    @property
    def ranged(self) -> bool:
        """Whether a note gives a number as its range over the rows it covers."""
        return any(item.ranged for note in self.notes for item in note.items)

    def refs(self, key: Hashable) -> list[int]:
        """The numbers of the notes a row carries (not those that cover every row)."""
        by_kind = {n.kind: n for n in self.notes if not n.everywhere}
        return sorted({by_kind[kind].number for kind in self._of_row.get(key, []) if kind in by_kind})


#: Said under a table whose notes give ranges.
RANGES_LEGEND = "In a note for several rows, a–b is the range of a number over those rows"


def everywhere_mark(book: NoteBook) -> str:
    """``all rows:``, or ``all measured rows:`` when some failed or were skipped."""
    return "all rows:" if len(book.measured) == len(book.rows) else "all measured rows:"


def heading_of(text: str) -> str:
    """What a note is about: its text before the first ``": "`` (all of it if none)."""
    return text.partition(": ")[0]


def _mask(text: str) -> str:
    return _NUMBER.sub("#", text)


def merge_numbers(texts: Sequence[str]) -> str:
    """Texts alike but for their numbers as one, each number that differs as its range; else the first."""
    words = [_NUMBER.split(t) for t in texts]
    numbers = [_NUMBER.findall(t) for t in texts]
    if any(w != words[0] for w in words):
        return texts[0]
    out = [words[0][0]]
    for i, between in enumerate(words[0][1:]):
        values = sorted(dict.fromkeys(n[i] for n in numbers), key=lambda v: float(v.replace(",", "")))
        out += [values[0] if len(values) == 1 else f"{values[0]}–{values[-1]}", between]
    return "".join(out)


def rows_text(rows: Sequence[Row], every: Sequence[Row] = ()) -> str:
    """``matmul large: NumPy CPU, JAX CPU; sort small (all)``, or ``all but …`` when that is shorter."""
    covered = set(rows)
    rest = [row for row in every if row not in covered]
    if rest and 2 * len(rest) < len(covered):
        return "all but " + rows_text(rest, every)
    by_case: dict[str, list[str]] = {}
    for row in rows:
        by_case.setdefault(row.case, []).append(row.library)
    in_case = Counter(row.case for row in every)
    parts = []
    for case, libraries in by_case.items():
        libraries = list(dict.fromkeys(libraries))
        whole = in_case.get(case, 0) > 1 and len(libraries) >= in_case[case]
        parts.append(f"{case} (all)" if whole else f"{case}: {', '.join(libraries)}")
    return "; ".join(parts)


@dataclass(frozen=True)
class NoteText:
    """A note as plain text: its number (``None``: it covers every row), its text, and the lines under it."""

    number: int | None
    text: str
    subs: tuple[str, ...] = ()


#: What a note's rows share, by its kind, where the terminal leaves each row's detail to the files.
PATTERNS = {"bimodal": "samples fall into two clusters, a fast and a slow mode (each cell's modes "
                       "and what tells them apart: results.md and report.html)"}

#: Past this many items (one for a kind of ``PATTERNS``), a brief note says its pattern once.
BRIEF_ITEMS = 5


def note_texts(book: NoteBook, *, brief: bool = False) -> list[NoteText]:
    """Each note of ``book`` as text, naming the rows it covers (of the table's rows)."""
    out, every = [], book.rows
    for note in book.notes:
        number = None if note.everywhere else note.number
        measured = set(book.measured)
        if brief and len(note.items) > (1 if note.kind in PATTERNS else BRIEF_ITEMS):
            pattern = PATTERNS.get(note.kind, "each row's detail is in results.md and report.html")
            rows = list(dict.fromkeys(row for item in note.items for row in item.rows))
            out.append(NoteText(number, f"{note.heading}: {pattern} ({rows_text(rows, every)})"))
            continue

        def covered(item: Item) -> str:
            # Under a note said for every row, an item still names its rows unless it has them all.
            if note.everywhere and set(item.rows) >= measured:
                return ""
            return f" ({rows_text(item.rows, book.measured if note.everywhere else every)})"

        if len(note.items) == 1:
            out.append(NoteText(number, note.items[0].text + covered(note.items[0])))
        else:
            out.append(NoteText(number, note.heading,
                                tuple((i.text.partition(": ")[2] or i.text) + covered(i) for i in note.items)))
    return out


def library_kernels(info: Mapping[str, Any]) -> str:
    """The kernels one worker's library reported running ("" where it reported none)."""
    openblas = info.get("library") in ("numpy", None) and info.get("blas_architecture")
    bits = [f"OpenBLAS {info['blas_architecture']} kernels"] if openblas else []
    bits += [f"{words} {info[key]}" for key, words in (
        ("cpu_capability", "ATen"), ("mkl_isa", "MKL"), ("onednn_isa", "oneDNN"), ("xla_cpu_target", "XLA target"),
        ("xla_cpu_max_isa", "XLA ISA cap")) if info.get(key)]
    return "; ".join(bits)


def knobs_text(knobs: Any) -> str:
    """The variables that change kernels, threads or precision, as ``NAME=value`` text."""
    if isinstance(knobs, Mapping) and knobs:
        return ", ".join(f"{k}={v}" for k, v in knobs.items())
    return "none set"


def interval_target(results: Results) -> float | None:
    """The interval target the run's cells were measured to (``rel_ci``), which the legends name."""
    return results.settings.get("rel_ci")


def ci_legend(target: float | None) -> str:
    """What the interval column holds, said under every table that has one; ``target``: the run's
    ``rel_ci`` (``interval_target``; None: records without their run)."""
    measure = "the run's interval target" if target is None else f"the ±{target:.0%} target"
    return ("95% CI: ± half the width of the median's 95% confidence interval, as a share of the median "
            f"(the same measure as {measure})")


def ci_text(r: Record) -> str:
    """The 95% CI of the median as ± a share of the median (``±1.2%``; see ``ci_legend``)."""
    return format_interval(r.ci_low_s, r.median_s, r.ci_high_s)


def speedup(r: Record, base: Record | None) -> float | None:
    """How many times faster than NumPy on the CPU (below 1: slower)."""
    if base is None or not is_valid(r):
        return None
    return base.median_s / r.median_s


def speedup_text(r: Record, base: Record | None, pairs: Pairs = Pairs()) -> str:
    """``3.8× faster``, ``16× slower``, ``level``, ``undecided``, ``baseline`` or ``—``: its pair's with NumPy."""
    if base is None or not is_valid(r) or not is_valid(base):
        return "—"
    if r is base:
        return "baseline"
    said, ratio = comparison(r, base, pairs)
    if said == "level":
        return f"level (±{LEVEL_WITHIN:.0%})"
    if said == "undecided":
        return "undecided"
    return format_speedup(ratio)  # the verdict is "faster" or "slower": the ratio says which


def achieved_text(r: Record) -> str:
    """``"12.3 GFLOP/s · 1.2 GB/s"``, or ``"—"``."""
    parts = [format_rate(v, unit) for v, unit in zip(achieved(r), ("FLOP/s", "B/s")) if v is not None]
    return " · ".join(parts) or "—"


def error_text(r: Record) -> str:
    return "—" if r.max_rel_error is None else f"{r.max_rel_error:.1e}"


def case_lines(workload: str, group: list[Record]) -> list[str]:
    """The case column of a group of rows, one line per row: workload, size label, ``n = …`` and settings."""
    first = group[0]
    lines = [workload, first.size_label, size_detail(first)] if first.size_label != str(first.size) \
        else [workload, size_text(first)]
    lines = [line for line in lines if line]
    out = lines[:len(group) - 1] + ["\n".join(lines[len(group) - 1:])]
    return out + [""] * (len(group) - len(out))


def notebook(groups: dict[tuple[str, str], list[Record]], *, workload: bool = True) -> NoteBook:
    """The notes of a table's rows, each row keyed by its record's key."""
    book = NoteBook()
    for (name, label), group in groups.items():
        for r in group:
            book.add(r.key, Row(f"{name} {label}" if workload else label, r.config_label),
                     [r.reason] if r.status != "ok" and r.reason else r.warnings, measured=r.status == "ok")
    return book


def unavailable(records: Iterable[Record]) -> tuple[dict[str, list[str]], list[Record]]:
    """The configurations skipped in every cell for one reason (unavailable here), by reason
    (``no GPU: PyTorch GPU, JAX GPU`` said once), and the records of the others, which tables show."""
    records = list(records)
    by_config: dict[tuple[str, str, str], list[Record]] = {}
    for r in records:
        by_config.setdefault((r.backend, r.device, r.environment), []).append(r)
    gone = {config: recs[0].reason for config, recs in by_config.items()
            if all(r.status == "skipped" for r in recs) and len({r.reason for r in recs}) == 1}
    out: dict[str, list[str]] = {}
    for (backend, device, environment), reason in gone.items():
        out.setdefault(reason, []).append(config_label(backend, device, environment=environment))
    return out, [r for r in records if (r.backend, r.device, r.environment) not in gone]
