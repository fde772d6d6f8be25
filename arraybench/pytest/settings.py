"""The plugin's command-line options, read and checked once per pytest session.

Every value is checked in ``pytest_configure``, before any test runs: a bad one is a
``UsageError`` that pytest prints as one line (``ERROR: --arraybench-fail-above: ...``) and exits 4,
instead of a failure after minutes of measuring.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import UsageError

#: The options, as pytest's ``addoption`` takes them: (name, keywords). Values stay text here and
#: are parsed in ``read``, so that a bad one is one line, not argparse's usage block.
OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--arraybench-backends", dict(metavar="LIST", help="libraries to measure, comma-separated "
                                   "(default: numpy,torch,jax,cupy where installed, as arraybench run)")),
    ("--arraybench-processes", dict(metavar="N|MIN:MAX", help="worker processes per cell, as "
                                    "arraybench run --processes (default: auto); one process "
                                    "cannot show a regression")),
    ("--arraybench-max-time", dict(metavar="SECONDS", help="seconds of sampling per cell "
                                   "(default: 1, as arraybench run)")),
    ("--arraybench-compare", dict(metavar="last|last~N|RUN_ID|git:REF", help="git:REF measures REF's code "
                                  "beside this code in this session (like asv continuous); otherwise, compare this session's run "
                                  "with a stored run: the last one on this machine that measured "
                                  "any of the same cells, the N-th before it, or a run id")),
    ("--arraybench-fail-above", dict(metavar="PERCENT", help="fail the session on a significant "
                                     "slowdown above this (e.g. 10%%) against --arraybench-compare, "
                                     "or on a cell that broke")),
    ("--arraybench-memory", dict(action="store_true", help="with --arraybench-fail-above, also fail "
                                 "on a peak memory per call grown above that limit")),
    ("--arraybench-store", dict(metavar="PATH|URL", help="the results store: an SQLite file or a "
                                "postgresql:// URL (default: results.sqlite in your data folder)")),
    ("--arraybench-save", dict(action="store_true", help="store this session's run in the "
                               "results store (a baseline for later sessions)")),
    ("--arraybench-skip", dict(action="store_true", help="skip the tests that measure "
                               "(use the arraybench_run fixture)")),
    ("--arraybench-only", dict(action="store_true", help="run only the tests that measure (use "
                               "the arraybench_run fixture) and skip the others, as "
                               "pytest-benchmark's --benchmark-only")),
    ("--arraybench-disable", dict(action="store_true", help="run the tests that measure as "
                                  "checks only, as pytest-benchmark's --benchmark-disable: each "
                                  "cell's workload called once in the pytest process (no worker "
                                  "starts), nothing timed, compared or stored")),
    ("--arraybench-json", dict(metavar="PATH", help="write the session's run to PATH as a "
                               "results.json (as pytest-benchmark's --benchmark-json)")),
)

#: What --arraybench-disable's run says it ran with: one call, in one process.
DISABLED_RUN = {"processes": 1, "max_processes": 1, "max_time": 1e-3, "min_samples": 1}


@dataclass(frozen=True)
class Settings:
    """The session's options, checked; ``None`` where not given (the API's defaults apply)."""

    backends: list[str] | None = None
    processes: int | None = None
    max_processes: int | None = None
    max_time: float | None = None
    #: ``"last"``, ``"last~N"`` or a run id (a prefix of one).
    compare: str | None = None
    fail_above: float | None = None
    #: The gate holds peak memory to ``fail_above`` too.
    memory: bool = False
    store: str | None = None
    save: bool = False
    skip: bool = False
    #: Only the tests that use the ``arraybench_run`` fixture run; the others are skipped.
    only: bool = False
    disable: bool = False
    #: Where the session's run is written as a results.json (``--arraybench-json``).
    json: str | None = None

    def run_options(self) -> dict[str, Any]:
        """Keywords for ``arraybench.run`` from the options given."""
        out: dict[str, Any] = {}
        if self.backends is not None:
            out["backends"] = self.backends
        if self.processes is not None:
            out["processes"] = self.processes
            if self.max_processes is not None:  # processes= alone is exactly N, as in the API
                out["max_processes"] = self.max_processes
        if self.max_time is not None:
            out["max_time"] = self.max_time
        if self.disable:
            out.update(DISABLED_RUN)
        if self.against is not None:
            out["against"] = self.against
        return out

    @property
    def against(self) -> str | None:
        """The git ref of ``--arraybench-compare=git:REF``: measured beside this code, each test."""
        if self.compare is not None and self.compare.startswith(GIT):
            return self.compare[len(GIT):]
        return None

    @property
    def store_choice(self) -> bool | str:
        """Where the run is stored and the baseline read: a location, or the default store."""
        return self.store if self.store is not None else True


#: ``--arraybench-compare=git:REF``: the same session measures REF's code beside this code.
GIT = "git:"


def read(get: Callable[[str], Any]) -> Settings:
    """The checked settings from ``get(dest)`` (``config.getoption``); ``UsageError`` names the
    option and what is wrong with it in one line."""
    def parsed(dest: str, kind: str) -> Any:
        text = get(dest)
        if text is None:
            return None
        # The command line's own value types, imported only for an option given: they come with
        # the commands, and the plugin loads in every pytest session of the environment.
        from ..commands import argtypes

        try:
            return getattr(argtypes, kind)(text)
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"--{dest.replace('_', '-')}: {exc}") from None

    backends = parsed("arraybench_backends", "csv_list")
    if backends is not None:
        _check_backends(backends)
    counts = parsed("arraybench_processes", "processes")
    compare = get("arraybench_compare")
    if compare is not None:
        compare = compare.strip()
        from ..api import check_choice

        if compare.startswith(GIT):
            if not compare[len(GIT):].strip():
                raise UsageError("--arraybench-compare=git:REF needs a ref, such as git:main or git:HEAD~1")
        else:
            check_choice(compare)
    settings = Settings(
        backends=backends,
        processes=None if counts is None else counts[0],
        max_processes=None if counts is None else counts[1],
        max_time=parsed("arraybench_max_time", "positive_float"),
        compare=compare,
        fail_above=parsed("arraybench_fail_above", "percent"),
        store=_store(get("arraybench_store")),
        save=bool(get("arraybench_save")),
        memory=bool(get("arraybench_memory")),
        skip=bool(get("arraybench_skip")),
        only=bool(get("arraybench_only")),
        disable=bool(get("arraybench_disable")),
        json=_json_path(get("arraybench_json")),
    )
    if settings.disable and (settings.compare is not None or settings.save):
        raise UsageError("--arraybench-disable times nothing worth keeping: leave out "
                         + ("--arraybench-compare" if settings.compare is not None else "--arraybench-save"))
    if settings.only and settings.skip:
        raise UsageError("--arraybench-only and --arraybench-skip together would skip every test: "
                         "give one of them")
    if settings.fail_above is not None and settings.compare is None:
        raise UsageError("--arraybench-fail-above needs a run to compare with: add "
                         "--arraybench-compare=last (or a run id)")
    if settings.memory and settings.fail_above is None:
        raise UsageError("--arraybench-memory gates peak memory with --arraybench-fail-above's limit: "
                         "add --arraybench-fail-above=PERCENT (e.g. 10%)")
    return settings


def _check_backends(names: list[str]) -> None:
    """The library names as ``arraybench run --backends`` checks them (without importing one)."""
    from ..api import RunOptions, validate

    if not names:
        raise UsageError("--arraybench-backends names no library; e.g. --arraybench-backends=numpy,torch")
    try:
        validate(RunOptions(backends=names), ())
    except UsageError as exc:
        raise UsageError(f"--arraybench-backends: {exc}") from None


def _store(text: str | None) -> str | None:
    if text is None:
        return None
    if not text.strip():
        raise UsageError("--arraybench-store is empty; give a file path or a postgresql:// URL")
    from ..api import resolve_location

    return resolve_location(text)  # a path made absolute, as --store


def _json_path(text: str | None) -> str | None:
    """``--arraybench-json PATH``, absolute (tests may change the folder), its folder existing."""
    if text is None:
        return None
    import os

    if not text.strip():
        raise UsageError("--arraybench-json is empty; give a file path")
    path = os.path.abspath(text)
    if not os.path.isdir(os.path.dirname(path)):
        raise UsageError(f"--arraybench-json {text}: no folder {os.path.dirname(path)}")
    return path
