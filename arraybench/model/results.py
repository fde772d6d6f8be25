"""A run's results: where, how, every record and the pairs' verdicts (``analysis/pairs``, kept by
their sides' keys); saved as ``results.json`` and read back validated. What ``Results`` shows is
delegated at call time to the rendering facade, which the model never imports.
"""

from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping

from ..errors import ResultsError, SaveError
from ..files import write_atomic
from . import schema
from .cell import Cell, case_key
from .record import COLUMNS, Record, Summary
from .schema import (NotPlainJson, NotRegularFile, SchemaError, check_environment, dumps, loads,
                     read_regular, to_json)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Verdict = Literal["faster", "slower", "level", "undecided"]
_OPPOSITE = {"faster": "slower", "slower": "faster", "level": "level", "undecided": "undecided"}


@dataclass(frozen=True)
class Pair:
    """``a`` against ``b``: ``ratio`` is a's time over b's, with its 95% interval and the verdict
    it supports, from ``rounds`` paired turns in ``processes`` processes."""

    a: Cell
    b: Cell
    a_label: str
    b_label: str
    ratio: float = 1.0
    ci_low: float = 1.0
    ci_high: float = 1.0
    verdict: Verdict = "undecided"
    processes: int = 0
    rounds: int = 0
    method: str = ""

    @property
    def case(self) -> str:
        """What its two sides have in common."""
        return case_key(self.a)

    def reversed(self) -> "Pair":
        """``b`` against ``a``: the inverse ratio and interval, the opposite verdict."""
        return replace(self, a=self.b, b=self.a, a_label=self.b_label, b_label=self.a_label,
                       ratio=1 / self.ratio, ci_low=1 / self.ci_high, ci_high=1 / self.ci_low,
                       verdict=_OPPOSITE[self.verdict])  # type: ignore[arg-type]

    @property
    def not_judged(self) -> str:
        """Why the pair was not judged (from ``method``); "" where it was."""
        return self.method.partition("not judged")[2].lstrip(": (").rstrip(")")

    @property
    def speedup(self) -> float:
        """How many times faster ``a`` is than ``b`` (below 1: slower)."""
        return 1 / self.ratio

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "a": self.a.key, "b": self.b.key,
                **{f.name: schema.to_json(getattr(self, f.name)) for f in fields(self)
                   if f.name not in ("a", "b")}}

    @classmethod
    def from_dict(cls, data: Any, cells: Mapping[str, Cell], where: str = "pair") -> "Pair | None":
        """A pair read back, each side the run's cell of the key it names; None where one names none."""
        if not isinstance(data, dict) or not all(isinstance(data.get(side), str) for side in "ab"):
            raise schema.SchemaError(f"{where}: expected an object naming its sides a and b")
        if data["a"] not in cells or data["b"] not in cells:
            return None
        a, b = cells[data["a"]], cells[data["b"]]
        read = schema.from_json(cls, {**data, "a": a.to_dict(), "b": b.to_dict()}, where=where)
        return replace(read, a=a, b=b)  # the run's own cells, not copies


class Pairs:
    """A run's pairs, found by their two sides' cells."""

    def __init__(self, pairs: Iterable[Pair] = ()) -> None:
        pairs = list(pairs)
        self._by_sides = {(p.b, p.a): p.reversed() for p in pairs} | {(p.a, p.b): p for p in pairs}

    def between(self, a: Cell, b: Cell) -> Pair | None:
        """``a`` against ``b``, whichever way round judged; None where they took no turns together."""
        return self._by_sides.get((a, b))


SCHEMA_VERSION = 2
TOOL = "arraybench"
RESULTS_NAME = "results.json"


#: The rendering facade, named and never imported here: were the model to import it (even lazily
#: or for type checking) each would import the other, and loading a file would pull in tables.
RENDERING = "arraybench.render.report"


#: The options' former names: runs saved then still read back, and the API still takes them.
LEGACY_NAMES: dict[str, str] = {"replicates": "processes", "max_replicates": "max_processes"}


def legacy_names(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the options' old names (a journal or results.json written before) renamed."""
    out = dict(data)
    for old, new in LEGACY_NAMES.items():
        if old in out:
            out.setdefault(new, out.pop(old))
    return out


def _rendering() -> ModuleType:
    return importlib.import_module(RENDERING)


@dataclass
class Results:
    """A run: where, how, and every record."""

    environment: dict[str, Any]
    settings: dict[str, Any]
    records: list[Record | Summary]
    schema_version: int = SCHEMA_VERSION
    tool: str = TOOL
    complete: bool = True
    #: Failures that belong to no cell, e.g. a workload file that did not load.
    errors: list[dict[str, str]] = field(default_factory=list)
    #: One verdict per pair of configurations that took turns together, computed once.
    pairs: list[Pair] = field(default_factory=list)
    #: The self-check: the twin's records and each twin against its original, kept apart from
    #: the ``records`` and ``pairs`` that tables, findings and gates read.
    twins: list[Record | Summary] = field(default_factory=list)
    self_check: list[Pair] = field(default_factory=list)
    #: The folder the run wrote to, where there is one (not saved).
    output_dir: Path | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "tool": self.tool,
            "complete": self.complete,
            "environment": to_json(self.environment),
            "settings": to_json(self.settings),
            "records": [r.to_dict() for r in self.records],
            "pairs": [p.to_dict() for p in self.pairs],
            "errors": list(self.errors),
            **({"self_check": {"records": [r.to_dict() for r in self.twins],
                               "pairs": [p.to_dict() for p in self.self_check]}}
               if self.twins or self.self_check else {}),
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically: a reader sees the old file or the new one, never half of one."""
        try:  # the reader's own rule: a file this cannot read back is not written at all
            text = dumps(self.to_dict(), indent=1) + "\n"
        except NotPlainJson as exc:
            raise SaveError(f"could not write {path} ({exc})", path) from None
        return write_atomic(path, text)

    def select(self, **match: Any) -> list[Record | Summary]:
        """Records whose attributes equal the given values: ``results.select(backend="torch")``."""
        return [r for r in self.records if all(getattr(r, k) == v for k, v in match.items())]

    @property
    def clean(self) -> bool:
        """Every cell ``ok`` or ``skipped``, and nothing failed before the cells (exit status 0)."""
        return all(r.status in ("ok", "skipped") for r in self.records) and not self.errors

    def write_report(self, out_dir: str | os.PathLike[str], *, plots: bool = True,
                     history: Any = None) -> list[Path]:
        """Write report.html, results.md, results.csv, findings.md and the SVG plots into
        ``out_dir``; return the files written. ``history`` (from the store) adds its section."""
        return _rendering().write_report(self, Path(out_dir), plots=plots, history=history)

    def table(self, width: int = 120) -> str:
        """The results table as plain text, as ``arraybench run`` prints it."""
        return _rendering().table(self, width=width)

    def __repr__(self) -> str:
        ok = sum(1 for r in self.records if r.status == "ok")
        head = (f"<arraybench Results: {len(self.records)} cells, {ok} ok"
                + ("" if self.complete else ", interrupted") + ">")
        return head + "\n" + self.table()

    def _repr_html_(self) -> str:
        return _rendering().table_html(self)

    def findings(self) -> list[str]:
        """Plain sentences computed from the records: who wins, by how much, and why."""
        return _rendering().findings(self)

    def compare(self, reference: "Results", *, threshold: float | None = None,
                alpha: float | None = None, cross_machine: bool = False) -> Any:
        """This run judged against ``reference``, cell by cell (``arraybench.compare(reference,
        self)``); runs of different machines raise ``CrossMachineError`` unless ``cross_machine``."""
        return _rendering().compare(reference, self, threshold=threshold, alpha=alpha,
                                    cross_machine=cross_machine)

    def plot(self, kind: str = "summary", *, workload: str | None = None,
             size: str | None = None) -> "Figure":
        """A matplotlib figure: ``"summary"`` (speed against NumPy per size label), ``"case"``
        (one workload at one size), ``"sweep"`` (one workload across sizes) or ``"roofline"``."""
        return _rendering().plot(self, kind, workload=workload, size=size)

    def to_dataframe(self, samples: bool = False) -> Any:
        """The records as a pandas DataFrame, one row per record (``Record.to_row``), or with
        ``samples=True`` one per sample, with its ``replicate`` and ``sample_s``. Needs pandas::

            df = arraybench.load_results("benchmark_plots").to_dataframe()
            df.pivot_table(index="workload", columns="config", values="median_s")
        """
        pd = pandas("Results.to_dataframe()")
        columns = ["key", "config", *COLUMNS]
        if not samples:
            return pd.DataFrame([r.to_row() for r in self.records], columns=columns)
        rows = [{**r.to_row(), "replicate": i, "sample": j, "sample_s": s}
                for r in self.records for i, rep in enumerate(r.replicates)
                for j, s in enumerate(rep.samples_s)]
        return pd.DataFrame(rows, columns=[*columns, "replicate", "sample", "sample_s"])


def pandas(who: str) -> ModuleType:
    """pandas, which arraybench does not install; ``ImportError`` says that ``who`` needs it."""
    try:
        return importlib.import_module("pandas")
    except ImportError:
        raise ImportError(f"{who} needs pandas, which arraybench does not install: pip install pandas") from None


def resolve(path: str | os.PathLike[str]) -> Path:
    """A results file named directly, or the ``results.json`` inside a folder named instead."""
    path = Path(path)
    if path.is_dir() and (path / RESULTS_NAME).is_file():
        return path / RESULTS_NAME
    return path


def load(path: str | os.PathLike[str]) -> Results:
    """Read and validate a results file; ``ResultsError`` says in one line what is wrong with it."""
    path = Path(path)
    try:
        text = read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = {FileNotFoundError: "no such file", IsADirectoryError: "is a folder; give its results.json",
               NotRegularFile: "is not a regular file (a named pipe or a device); give a results.json",
               UnicodeDecodeError: "cannot be read (not UTF-8 text; not an arraybench results file)"}
        said = why.get(type(exc)) or f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
        raise ResultsError(f"{path}: {said}") from None
    if not text.strip():
        raise ResultsError(f"{path}: is empty")
    try:
        data = loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON (truncated?): {exc.msg} at line {exc.lineno}") from None
    except NotPlainJson as exc:
        raise ResultsError(f"{path}: not an arraybench results file (it {exc})") from None
    results = from_dict(data, str(path))
    results.output_dir = path.parent
    return results


def from_dict(data: Any, origin: str = "results") -> Results:
    """Validate JSON parsed by ``schema.loads`` (plain, bounded) as arraybench results (this
    version's, or version 1's)."""
    if not isinstance(data, dict):
        raise ResultsError(f"{origin}: not an arraybench results file (top level is not an object)")
    if data.get("tool") != TOOL:
        raise ResultsError(f"{origin}: not an arraybench results file (tool is {data.get('tool')!r})")
    version = data.get("schema_version")
    if version not in (1, SCHEMA_VERSION):
        raise ResultsError(
            f"{origin}: schema version {version!r}; this arraybench reads versions 1 and {SCHEMA_VERSION}"
        )
    records = data.get("records")
    if not isinstance(records, list):
        raise ResultsError(f"{origin}: 'records' is missing or not a list")
    env = data.get("environment")
    settings = data.get("settings", {})
    if not isinstance(env, dict) or not isinstance(settings, dict):
        raise ResultsError(f"{origin}: 'environment' and 'settings' must be objects")
    try:
        check_environment(env)
        parsed: list[Record | Summary] = []
        for i, r in enumerate(records):
            if not isinstance(r, dict):
                raise SchemaError(f"record {i} is not an object")
            parsed.append(Record.from_dict(_from_version_1(r) if version == 1 else r,
                                           where=f"record {i}"))
        errors = data.get("errors", [])  # absent in files written before it existed
        if not isinstance(errors, list) or not all(
                isinstance(e, dict) and all(isinstance(v, str) for v in e.values()) for e in errors):
            raise SchemaError("'errors' must be a list of objects of strings")
        complete = data.get("complete", True)
        if not isinstance(complete, bool):
            raise SchemaError("'complete' must be true or false")
        pairs = data.get("pairs", [])  # absent in files written before runs took turns
        if not isinstance(pairs, list):
            raise SchemaError("'pairs' must be a list")
        checked = data.get("self_check", {})  # absent where the run did not check itself
        if not isinstance(checked, dict) or not isinstance(checked.get("records", []), list) \
                or not isinstance(checked.get("pairs", []), list):
            raise SchemaError("'self_check' must be an object of 'records' and 'pairs' lists")
        twins = [Record.from_dict(r, where=f"self_check.records[{i}]")
                 for i, r in enumerate(checked.get("records", []))]
        cells = {r.key: r.cell for r in [*parsed, *twins]}
        read_pairs = [p for i, d in enumerate(pairs) if (p := Pair.from_dict(d, cells, f"pairs[{i}]"))]
        twin_pairs = [p for i, d in enumerate(checked.get("pairs", []))
                      if (p := Pair.from_dict(d, cells, f"self_check.pairs[{i}]"))]
    except (SchemaError, ResultsError) as exc:
        raise ResultsError(f"{origin}: {exc}") from None
    return Results(environment=env, settings=legacy_names(settings), records=parsed, complete=complete,
                   errors=errors, pairs=read_pairs, twins=twins, self_check=twin_pairs)


_RENAMED_IN_2 = {"n_processes": "n_replicates", "process_medians_s": "replicate_medians_s",
                 "process_spread": "replicate_spread"}


def _from_version_1(r: dict[str, Any]) -> dict[str, Any]:
    """A version 1 record in version 2's names, its pooled samples dropped (not told apart by process)."""
    out = {_RENAMED_IN_2.get(k, k): v for k, v in r.items() if k != "samples_s"}
    if isinstance(out.get("method"), str) and "finite differences" in out["method"]:
        out["gradient"] = "finite_differences"
    return out
