"""The plugin's command-line options (``options.OPTIONS``, those on ``PYTEST``), read and checked
once per pytest session.

Every value is checked in ``pytest_configure``, before any test runs: a bad one is a
``UsageError`` that pytest prints as one line (``ERROR: --arraybench-fail-above: ...``) and exits 4,
instead of a failure after minutes of measuring.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import UsageError
from ..options import API, PYTEST, on, option

#: What --arraybench-disable's run says it ran with: one call, in one process.
DISABLED_RUN = {"processes": 1, "max_processes": 1, "max_time": 1e-3, "min_samples": 1}


@dataclass(frozen=True)
class Settings:
    """The session's options (``options.OPTIONS`` on ``PYTEST``, whose help says what each means),
    checked; ``None`` where not given (the API's defaults apply)."""

    backends: list[str] | None = None
    processes: int | None = None
    max_processes: int | None = None
    max_time: float | None = None
    compare: str | None = None  # "last", "last~N", a run id (a prefix of one) or "git:REF"
    fail_above: float | None = None
    memory: bool = False
    store: str | None = None
    save: bool = False
    skip: bool = False
    only: bool = False
    disable: bool = False
    json: str | None = None

    def run_options(self) -> dict[str, Any]:
        """Keywords for ``arraybench.run`` from the options given."""
        out = {o.name: getattr(self, o.name) for o in on(PYTEST)
               if API in o.on and getattr(self, o.name) is not None}
        if self.processes is not None and self.max_processes is not None:  # processes= alone: exactly N
            out["max_processes"] = self.max_processes
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


#: ``--arraybench-compare=git:REF``: the same session measures REF's code beside this code.
GIT = "git:"


def read(get: Callable[[str], Any]) -> Settings:
    """The checked settings from ``get(dest)`` (``config.getoption``); ``UsageError`` names the
    option and what is wrong with it in one line."""
    def parsed(name: str) -> Any:
        """The option's text, read by the command line's own value type."""
        text = get("arraybench_" + name)
        if text is None:
            return None
        try:
            return option(name, PYTEST).type(text)
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"--arraybench-{name.replace('_', '-')}: {exc}") from None

    backends = parsed("backends")
    if backends is not None:
        _check_backends(backends)
    counts = parsed("processes")
    compare = get("arraybench_compare")
    if compare is not None:
        compare = compare.strip()
        from ..store.refs import check_choice

        if compare.startswith(GIT):
            if not compare[len(GIT):].strip():
                raise UsageError("--arraybench-compare=git:REF needs a ref, such as git:main or git:HEAD~1")
        else:
            check_choice(compare)
    flags = {o.name: bool(get("arraybench_" + o.name)) for o in on(PYTEST) if o.action == "store_true"}
    settings = Settings(
        backends=backends, processes=None if counts is None else counts[0],
        max_processes=None if counts is None else counts[1], max_time=parsed("max_time"), compare=compare,
        fail_above=parsed("fail_above"), store=_store(get("arraybench_store")),
        json=_json_path(get("arraybench_json")), **flags)
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
    from ..model.options import RunOptions
    from ..plan import validate

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
    from ..store import resolve_location

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
