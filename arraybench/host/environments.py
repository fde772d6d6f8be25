"""Environments: the interpreters (``--pythons``) and variables (``--variants``) a run's backends run
under, side by side in one run: one more dimension of a cell, each backend's workers interleaved
across them so a slow phase hits every environment alike. Without either, one environment, "".
Another interpreter needs Python >= 3.10, NumPy and its backends' libraries, not arraybench: its
workers import this one through a folder on ``PYTHONPATH`` holding only a link to this package."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import UsageError, option_name

if TYPE_CHECKING:
    from ..model.options import RunOptions


#: A label as tables show it (``NumPy CPU [np126]``) and file names hold it.
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,39}")
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Joins a python's label and a variant's when both are given (``np126/t1``).
JOIN = "/"
#: Linux's MAX_ARG_STRLEN: the longest ``NAME=VALUE`` (with its final NUL) a new process may get.
MAX_VARIABLE_BYTES = 128 * 1024
#: A comma inside a ``--variants`` value, written ``\,`` (a plain comma separates variables).
_UNESCAPED_COMMA = re.compile(r"(?<!\\),")


@dataclass(frozen=True)
class Environment:
    """Where a backend's workers run: ``python`` (None: this interpreter) and ``variables``."""

    label: str
    python: str | None = None
    variables: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def default(self) -> bool:
        """The run's own interpreter and variables (a run without environments)."""
        return self.python is None and not self.variables


def _check_label(label: Any, what: str) -> str:
    if not isinstance(label, str) or not LABEL.fullmatch(label):
        raise UsageError(f"{option_name(what)}: label {label!r} must be 1 to 40 letters, digits or "
                         "_.+- (starting with a letter or digit), such as np126")
    return label


def check_pythons(pythons: Any, *, here: bool = True) -> dict[str, str]:
    """``{label: interpreter}`` checked: labels well formed, each an executable (a bare name looked up on
    PATH), made absolute but not resolved (a venv's python is a link). ``here=False`` (a cluster's nodes
    check their own): one this machine lacks is kept as given."""
    if not isinstance(pythons, Mapping):
        raise UsageError(f"{option_name('pythons')} must map labels to interpreters, such as "
                         f"{{'np126': '.venv126/bin/python'}}, not {type(pythons).__name__}")
    out: dict[str, str] = {}
    for label, path in pythons.items():
        _check_label(label, "pythons")
        if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
            raise UsageError(f"{option_name('pythons')} {label}: give an interpreter's path, not {path!r}")
        text = os.fspath(path)
        found = shutil.which(text) if os.sep not in text else text
        if not here and (found is None or not os.path.isfile(found)):
            if os.sep in text and not os.path.isabs(text):
                raise UsageError(f"{option_name('pythons')} {label}={text}: not found here; on a "
                                 "cluster give an absolute path (or a name on the nodes' PATH)")
            out[label] = text  # each node looks for it, and says so where it is missing
            continue
        if found is None or not os.path.isfile(found):
            raise UsageError(f"{option_name('pythons')} {label}={text}: no such interpreter")
        if not os.access(found, os.X_OK):
            raise UsageError(f"{option_name('pythons')} {label}={text}: is not executable")
        out[label] = os.path.abspath(found)
    return out


def check_variants(variants: Any) -> dict[str, dict[str, str]]:
    """``{label: {VAR: VALUE}}`` checked: labels well formed, names of variables valid, values text."""
    if not isinstance(variants, Mapping):
        raise UsageError(f"{option_name('variants')} must map labels to variables, such as "
                         f"{{'t1': {{'OPENBLAS_NUM_THREADS': '1'}}}}, not {type(variants).__name__}")
    out: dict[str, dict[str, str]] = {}
    for label, variables in variants.items():
        _check_label(label, "variants")
        if not isinstance(variables, Mapping):
            raise UsageError(f"{option_name('variants')} {label}: give variables as VAR=VALUE, not {variables!r}")
        for name, value in variables.items():
            if not isinstance(name, str) or not VARIABLE.fullmatch(name):
                raise UsageError(f"{option_name('variants')} {label}: {name!r} is not the name of an "
                                 "environment variable")
            if not isinstance(value, (str, int, float)) or isinstance(value, bool) or "\0" in str(value):
                raise UsageError(f"{option_name('variants')} {label}: {name}={value!r} is not a value")
            size = len(f"{name}={value}".encode("utf-8", "surrogateescape"))
            if size >= MAX_VARIABLE_BYTES:
                # The kernel refuses to start a process with one (E2BIG), read as "could not write".
                raise UsageError(f"{option_name('variants')} {label}: {name}= is {size:,} bytes; the "
                                 f"system starts no process with a variable of {MAX_VARIABLE_BYTES // 1024} "
                                 "KiB or more (put a long value in a file and name the file)")
        out[label] = {k: str(v) for k, v in variables.items()}
    return out


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """``LABEL:VAR=VALUE[,VAR=VALUE]`` (``LABEL:`` alone: the inherited set); ``\\,`` is a comma in a value."""
    label, sep, rest = text.partition(":")
    if not sep:
        raise UsageError(f"--variants {text!r}: write LABEL:VAR=VALUE[,VAR=VALUE], such as "
                         "t1:OPENBLAS_NUM_THREADS=1")
    variables: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in _UNESCAPED_COMMA.split(rest))):
        name, eq, value = part.partition("=")
        if not eq:
            raise UsageError(f"--variants {text!r}: {part!r} is not VAR=VALUE")
        variables[name.strip()] = value.replace("\\,", ",")
    return label.strip(), variables


def parse_python(text: str) -> tuple[str, str]:
    """``LABEL=INTERPRETER``."""
    label, sep, path = text.partition("=")
    if not sep or not label.strip() or not path.strip():
        raise UsageError(f"--pythons {text!r}: write LABEL=INTERPRETER, such as np126=.venv126/bin/python")
    return label.strip(), path.strip()


#: The label of the self-check's twin: the run's first environment again, in processes of its own.
TWIN = "twin"


def of(options: RunOptions) -> list[Environment]:
    """The run's environments: every interpreter under every variant ("" without either), then the self-check's ``TWIN``."""
    pythons: list[tuple[str, str | None]] = list(options.pythons.items()) or [("", None)]
    variants: list[tuple[str, dict[str, str]]] = list(options.variants.items()) or [("", {})]
    found = [Environment(JOIN.join(filter(None, (p, v))), python, dict(variables))
             for p, python in pythons for v, variables in variants]
    if options.self_check:
        found.append(Environment(TWIN, found[0].python, dict(found[0].variables)))
    return found


def twin_of(options: RunOptions) -> str:
    """The label of the environment the self-check's twin copies."""
    return of(options)[0].label


def find(options: RunOptions, label: str) -> Environment:
    """The environment ``label`` of the run (``KeyError`` if it has none of that name)."""
    return {env.label: env for env in of(options)}[label]


def describe(options: RunOptions) -> dict[str, dict[str, Any]]:
    """What results.json says of each environment (the versions it ran come from its workers)."""
    return {e.label: {"python": e.python or sys.executable, "variables": dict(e.variables)}
            for e in of(options) if not e.default}


_IMPORT_DIR: str | None = None
IMPORT_PREFIX = "arraybench-import-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OverflowError, OSError):
        pass  # another user's process, or not a pid we can ask about: leave it
    return True


def remove_stale_folders(tmp: str | None = None, prefix: str = IMPORT_PREFIX) -> list[str]:
    """Remove this user's per-process folders (``PREFIX<pid>-...``) whose process is gone; the removed."""
    tmp = tmp or tempfile.gettempdir()
    pattern = re.compile(re.escape(prefix) + r"([0-9]+)-[A-Za-z0-9_]+")
    removed = []
    try:
        names = os.listdir(tmp)
    except OSError:
        return removed
    for name in names:
        found = pattern.fullmatch(name)
        path = os.path.join(tmp, name)
        if found is None or _alive(int(found.group(1))):
            continue
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)  # holds a link only: rmtree never follows it
            removed.append(path)
    return removed


def import_dir() -> str:
    """A folder holding only a link to this package, for another interpreter's ``PYTHONPATH``."""
    global _IMPORT_DIR
    if _IMPORT_DIR is None or not os.path.isdir(_IMPORT_DIR):
        # Named by this process's id, so the next run removes one a killed process left behind.
        remove_stale_folders()
        folder = tempfile.mkdtemp(prefix=f"{IMPORT_PREFIX}{os.getpid()}-")
        os.symlink(Path(__file__).resolve().parent.parent, os.path.join(folder, "arraybench"))
        atexit.register(shutil.rmtree, folder, True)  # the link only: rmtree never follows it
        _IMPORT_DIR = folder
    return _IMPORT_DIR


def worker_env(environment: Environment, env: dict[str, str]) -> dict[str, str]:
    """A worker's variables in ``environment``: the variant's over ``threads.worker_env``'s (it is the knob
    measured), and for another interpreter this arraybench first on its path."""
    out = {**env, **environment.variables}
    if environment.python is not None:
        out["PYTHONPATH"] = os.pathsep.join(filter(None, (import_dir(), env.get("PYTHONPATH", ""))))
    return out
