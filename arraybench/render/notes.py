"""What a table says beside its numbers: the notes under it, and the counters and kernels behind a
number.

The notes under a results table: each row's warnings and reasons, said once.

A run on a busy machine gives nearly every row a warning of its own ("measured while the machine
was busy: other processes used 1.2 of 2 cores", "95% CI of the median is ±3.0%, above the ±2%
target: …"). Numbered one per text, they outnumber the rows. Here the notes of a table are
grouped instead:

- a note's **kind** is its heading (the text before its first ``": "``) with the numbers masked;
  one kind is one numbered note, whatever its numbers in each row;
- within a kind, texts that differ only in their numbers are said once, each number that differs
  shown as the range it spans (``other processes used 0.9–1.9 of 2 cores``);
- each note names the rows it covers (``matmul large: NumPy CPU, JAX CPU``), and a note that covers
  every row is said once above the others without a mark on any row.

The terminal, Markdown and HTML tables all build their notes here, so they read the same.

The counters and kernels behind a number, as short text for the HTML report and the tables.

``usage_lines`` is a record's "used" column (cores, kernel share, page faults and context switches
per call, hardware counts where counted, and whether the machine was busy); ``kernel_rows`` are the
environment rows naming the kernels each library runs and the variables that change them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Hashable, Iterable, Sequence, Any, Mapping

from ..model.record import Record
from ..model.usage import Usage


# A number as the notes write them: 12, 1,365, 12.8 (a sign or unit is the text around it).
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class Row:
    """A table row, as a note names it: its case (``matmul large``) and its library."""

    case: str
    library: str


@dataclass
class Item:
    """One text of a note (its numbers merged across rows) and the rows it covers."""

    text: str
    rows: list[Row]


@dataclass
class Note:
    """One numbered note: a heading shared by its items, and the items; ``everywhere`` when it
    covers every row of the table (then no row carries its number)."""

    number: int
    kind: str
    heading: str
    items: list[Item]
    everywhere: bool = False

    @property
    def rows(self) -> list[Row]:
        return [row for item in self.items for row in item.rows]


@dataclass
class NoteBook:
    """The notes of one table. ``add`` every row's texts first, then read ``refs`` and ``notes``."""

    _rows: list[Row] = field(default_factory=list)
    _measured: list[Row] = field(default_factory=list)
    _by_kind: dict[str, dict[str, list[tuple[str, Row]]]] = field(default_factory=dict)
    _of_row: dict[Hashable, list[str]] = field(default_factory=dict)
    _built: list[Note] | None = None
    #: Whether a note gives a number as its range over the rows it covers (``0.3–0.6 of 2 cores``).
    ranged: bool = False

    def add(self, key: Hashable, row: Row, texts: Iterable[str], *, measured: bool = True) -> None:
        """The notes of one row (``key`` identifies it for ``refs``). A row not ``measured``
        (failed, skipped) has a reason rather than warnings: a condition of the measurement (a
        busy machine, one process) covers every row when it covers every measured one."""
        self._rows.append(row)
        if measured:
            self._measured.append(row)
        kinds = self._of_row.setdefault(key, [])
        for text in texts:
            text = " ".join(str(text).split())
            if not text:
                continue
            kind = _mask(heading_of(text))
            self._by_kind.setdefault(kind, {}).setdefault(_mask(text), []).append((text, row))
            if kind not in kinds:
                kinds.append(kind)
        self._built = None

    def notes(self) -> list[Note]:
        """Every note: those that cover every row first (unnumbered: no row carries them), then the
        others numbered from 1 in the order their first row came."""
        if self._built is None:
            self.ranged = False
            everyone = set(self._measured)
            built = []
            for kind, templates in self._by_kind.items():
                items = [Item(merge_numbers([t for t, _ in members]),
                              list(dict.fromkeys(row for _, row in members)))
                         for members in templates.values()]
                self.ranged = self.ranged or any(
                    item.text not in {t for t, _ in members} for item, members in zip(items, templates.values()))
                texts = [t for members in templates.values() for t, _ in members]
                heading = merge_numbers([heading_of(t) for t in texts])
                covered = {row for item in items for row in item.rows}
                built.append(Note(0, kind, heading, items, everywhere=len(everyone) > 1 and covered >= everyone))
            built.sort(key=lambda n: not n.everywhere)  # stable: first-seen order otherwise
            numbered = [n for n in built if not n.everywhere]
            for i, note in enumerate(numbered, 1):
                note.number = i
            self._built = built
        return self._built

    def refs(self, key: Hashable) -> list[int]:
        """The numbers of the notes a row carries (not those that cover every row)."""
        by_kind = {n.kind: n for n in self.notes()}
        out = []
        for kind in self._of_row.get(key, []):
            note = by_kind.get(kind)
            if note is not None and not note.everywhere:
                out.append(note.number)
        return sorted(set(out))

    @property
    def measured(self) -> list[Row]:
        """The rows that were measured (those whose notes are warnings, not a reason)."""
        return list(self._measured)

    @property
    def all_measured(self) -> bool:
        """Whether every row was measured (then "all rows" says it; else "all measured rows")."""
        return len(self._measured) == len(self._rows)

    def __len__(self) -> int:
        return len(self.notes())


#: Said under a table whose notes give ranges.
RANGES_LEGEND = "In a note for several rows, a–b is the range of a number over those rows"


def everywhere_mark(book: NoteBook) -> str:
    """How the notes that cover every row are introduced: ``all rows:`` (``all measured rows:``
    when some rows failed or were skipped)."""
    return "all rows:" if book.all_measured else "all measured rows:"


def heading_of(text: str) -> str:
    """What a note is about: its text before the first ``": "`` (all of it if none)."""
    return text.split(": ", 1)[0]


def detail_of(text: str) -> str:
    """A note's text after its heading ("" if it has none)."""
    parts = text.split(": ", 1)
    return parts[1] if len(parts) == 2 else ""


def _mask(text: str) -> str:
    return _NUMBER.sub("#", text)


def merge_numbers(texts: Sequence[str]) -> str:
    """Texts alike but for their numbers, as one: each number that differs becomes its range
    (``used 0.9–1.9 of 2 cores``). Texts that differ otherwise: the first one."""
    texts = list(dict.fromkeys(texts))
    if len(texts) == 1:
        return texts[0]
    words = [_NUMBER.split(t) for t in texts]
    numbers = [_NUMBER.findall(t) for t in texts]
    if any(w != words[0] for w in words):
        return texts[0]
    out = [words[0][0]]
    for i, between in enumerate(words[0][1:]):
        values = list(dict.fromkeys(n[i] for n in numbers))
        if len(values) == 1:
            out.append(values[0])
        else:
            ordered = sorted(values, key=lambda v: float(v.replace(",", "")))
            out.append(f"{ordered[0]}–{ordered[-1]}")
        out.append(between)
    return "".join(out)


def rows_text(rows: Sequence[Row], every: Sequence[Row] = ()) -> str:
    """``matmul large: NumPy CPU, JAX CPU; sort small (all)``: rows by case, a case whose every
    row is covered said as one; ``all but sort large: JAX CPU`` when that is shorter."""
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
        if in_case.get(case, 0) > 1 and len(libraries) >= in_case[case]:
            parts.append(f"{case} (all)")
        else:
            parts.append(f"{case}: {', '.join(libraries)}")
    return "; ".join(parts)


@dataclass(frozen=True)
class NoteText:
    """A note as plain text: its number (``None`` for one that covers every row), its text, and
    the lines under it (one per kind of detail, when its rows differ in more than numbers)."""

    number: int | None
    text: str
    subs: tuple[str, ...] = ()


#: What a note's rows share, said once where each row's own detail is left to the files
#: (``note_texts(brief=True)``: the terminal), by the note's kind.
PATTERNS = {"bimodal": "samples fall into two clusters, a fast and a slow mode (each cell's modes "
                       "and what tells them apart: results.md and report.html)"}

#: Past this many items, a brief note says its pattern once instead of a line per row (a kind
#: of ``PATTERNS`` past one item).
BRIEF_ITEMS = 5


def note_texts(book: NoteBook, every: Sequence[Row], *, brief: bool = False) -> list[NoteText]:
    """Each note of ``book`` as text, naming the rows it covers (of ``every``, the table's rows).
    ``brief``: a note of many items that differ beyond their numbers says its pattern once, with
    the rows it covers (the terminal); the files keep every item."""
    out = []
    for note in book.notes():
        number = None if note.everywhere else note.number
        measured = set(book.measured)
        if brief and len(note.items) > (1 if note.kind in PATTERNS else BRIEF_ITEMS):
            pattern = PATTERNS.get(note.kind, "each row's detail is in results.md and report.html")
            rows = list(dict.fromkeys(note.rows))
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
                                tuple((detail_of(i.text) or i.text) + covered(i) for i in note.items)))
    return out


def _count(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:.2g}"


def usage_lines(r: Record) -> list[str]:
    """The record's usage in a few short lines; empty when nothing was counted."""
    u = r.usage
    if u is None:
        return []
    lines = []
    if u.cores is not None:
        kernel = f", {u.kernel_share:.0%} in kernel" if u.kernel_share is not None else ""
        lines.append(f"{u.cores:.1f} cores{kernel}")
    if u.minor_faults_per_call is not None:
        major = f" ({_count(u.major_faults_per_call)} major)" if u.major_faults_per_call else ""
        lines.append(f"{_count(u.minor_faults_per_call)} faults/call{major}")
    if u.involuntary_switches_per_call is not None:
        lines.append(f"{_count(u.involuntary_switches_per_call)} preempted/call")
    if u.ipc is not None:
        lines.append(f"IPC {u.ipc:.2f}")
    if r.busy:
        lines.append(f"busy: others {u.others_cores:.1f} cores" if u.others_cores is not None else "busy")
    return lines


def usage_title(u: Usage | None) -> str:
    """Every rate, for a tooltip."""
    if u is None:
        return ""
    from ..model.usage import RATES

    parts = [f"{name} {getattr(u, name):.4g}" for name in RATES if getattr(u, name) is not None]
    if u.hardware_absent:
        parts.append(f"hardware counters: {u.hardware_absent}")
    return "; ".join(parts)


def kernel_rows(env: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(what, text) rows: the kernels each library's worker reported, the CPU's own ISA, and the
    environment variables that change kernels, threads or precision."""
    rows = []
    fp = env.get("fingerprint") or {}
    if isinstance(fp, Mapping) and fp.get("cpu_isa"):
        rows.append(("CPU features", " ".join(str(f) for f in fp["cpu_isa"])))
    workers = env.get("backends") or {}
    if isinstance(workers, Mapping):
        for config, info in workers.items():
            text = library_kernels(info) if isinstance(info, Mapping) else ""
            if text:
                rows.append((f"kernels ({config})", text))
    rows.append(("kernel variables", knobs_text(env.get("kernel_env"))))
    return rows


def library_kernels(info: Mapping[str, Any]) -> str:
    """The kernels one worker's library reported running ("" where it reported none)."""
    bits = []
    if info.get("library") in ("numpy", None) and info.get("blas_architecture"):
        bits.append(f"OpenBLAS {info['blas_architecture']} kernels")
    for key, words in (("cpu_capability", "ATen"), ("mkl_isa", "MKL"), ("onednn_isa", "oneDNN"),
                       ("xla_cpu_target", "XLA target"), ("xla_cpu_max_isa", "XLA ISA cap")):
        if info.get(key):
            bits.append(f"{words} {info[key]}")
    return "; ".join(bits)


def knobs_text(knobs: Any) -> str:
    """The variables that change kernels, threads or precision, as ``NAME=value`` text."""
    if isinstance(knobs, Mapping) and knobs:
        return ", ".join(f"{k}={v}" for k, v in knobs.items())
    return "none set"
