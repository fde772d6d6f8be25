"""Option value types (``options.OPTIONS`` names them): each turns text into a value or one clear
error, the same on the command line, in the pytest plugin and in the project file."""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable

from .errors import UsageError


def csv_list(text: str) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``."""
    return [p.strip() for p in text.split(",") if p.strip()]


def file_path(text: str) -> str:
    """A path as given; one no file can have (a NUL character) is refused here, in one line."""
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"{text!r} is no file name: it holds a NUL character")
    return text


def _number(text: str, kind: type, hint: str) -> float:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {hint}") from None


def _at_least(kind: type, hint: str, ok: Callable[[Any], bool], must: str) -> Callable[[str], Any]:
    """A value type: ``text`` as ``kind`` where ``ok`` holds, else one line saying what it ``must`` be."""
    def parse(text: str) -> Any:
        value = _number(text, kind, hint)
        if not ok(value):
            raise argparse.ArgumentTypeError(f"{text!r} must be {must}")
        return value
    return parse


positive_float = _at_least(float, "a number", lambda v: math.isfinite(v) and v > 0, "a positive number")
#: Seconds that may be none, as a warm-up.
non_negative_float = _at_least(float, "a number", lambda v: math.isfinite(v) and v >= 0, "0 or more seconds")
positive_int = _at_least(int, "a whole number", lambda v: v >= 1, "at least 1")
#: NumPy's generators refuse negative seeds.
seed = _at_least(int, "a whole number", lambda v: v >= 0, "0 or more")


def _share(text: str, hint: str) -> float:
    raw = text.strip()
    return _number(raw[:-1], float, hint) / 100 if raw.endswith("%") else _number(raw, float, hint)


def fraction(text: str) -> float:
    """``0.02`` or ``2%``: strictly between 0 and 1."""
    value = _share(text, "a fraction (0.02) or a percentage (2%)")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1 (or 0% and 100%)")
    return value


def percent(text: str) -> float:
    """``10%`` or ``0.1`` -> 0.1; any positive amount (``150%`` is allowed)."""
    value = _share(text, "a percentage (10%) or a fraction (0.1)")
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive percentage")
    return value


def processes(text: str) -> tuple[int, int | None]:
    """``--processes``: ``auto`` (the default range), ``N`` (exactly N) or ``MIN:MAX`` (adaptive)
    -> ``(least, most)``; ``most`` is None for a fixed count."""
    from .model.options import RunOptions

    raw = text.strip().lower()
    if raw == "auto":
        d = RunOptions()
        return d.processes, d.max_processes
    if ":" in raw:
        lo_text, _, hi_text = raw.partition(":")
        lo = _number(lo_text, int, "a whole number")
        hi = _number(hi_text, int, "a whole number")
        if lo < 2:
            raise argparse.ArgumentTypeError(
                f"{text!r}: MIN must be at least 2 (one process cannot show the variation between processes)")
        if hi < lo:
            raise argparse.ArgumentTypeError(f"{text!r}: MAX must be at least MIN")
        return lo, hi
    value = _number(raw, int, "a whole number (give auto, N or MIN:MAX)")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value, None


def assignment(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` -> ``(NAME, VALUE)``; the value stays text until the workload's own type
    is known (``--param tsteps=50``). NAME may be aimed at one workload: ``jacobi_2d.tsteps``."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name.rpartition(".")[2].isidentifier() or name.startswith("."):
        raise argparse.ArgumentTypeError(f"{text!r} is not [WORKLOAD.]NAME=VALUE (e.g. tsteps=50)")
    return name, value.strip()


def python_assignment(text: str) -> tuple[str, str]:
    """``--python LABEL=INTERPRETER`` -> ``(LABEL, INTERPRETER)``."""
    from .host.environments import parse_python

    try:
        return parse_python(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--python {text!r}: ")) from None


def variant_assignment(text: str) -> tuple[str, dict[str, str]]:
    """``--variant LABEL:VAR=VALUE[,VAR=VALUE]`` -> ``(LABEL, {VAR: VALUE})``."""
    from .host.environments import parse_variant

    try:
        return parse_variant(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--variant {text!r}: ")) from None


class Assignments(argparse._AppendAction):
    """``--param NAME=VALUE``, repeatable: each NAME once (``--param tsteps=10 --param tsteps=20``
    is refused, not silently the last), and what is typed replaces a project file's list."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        current = getattr(namespace, self.dest, None)
        # The default object itself (argparse's, or [tool.arraybench]'s) until the first typed one.
        items = [] if current is self.default or current is None else list(current)
        name, value = values
        for old_name, old_value in items:
            if old_name == name:
                raise argparse.ArgumentError(self, f"{name} is given twice ({name}={old_value}, then "
                                                   f"{name}={value}); give it once")
        setattr(namespace, self.dest, [*items, values])


class CsvExtend(argparse.Action):
    """A comma-separated list, repeatable: ``--workloads a --workloads b,c`` is all three, and what
    is typed replaces a project file's list."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        current = getattr(namespace, self.dest, None)
        items = [] if current is self.default or current is None else list(current)
        setattr(namespace, self.dest, [*items, *(v for v in values if v not in items)])


def unique_assignments(pairs: list[tuple[str, str]], what: str = "--param") -> dict[str, str]:
    """``[(NAME, VALUE)]`` as a dict, refusing a NAME given twice (a project file's list, say)."""
    out: dict[str, str] = {}
    for name, value in pairs:
        if name in out:
            raise UsageError(f"{what} {name} is given twice ({name}={out[name]}, then {name}={value}); "
                             "give it once")
        out[name] = value
    return out
