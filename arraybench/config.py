"""Project defaults: ``[tool.arraybench]`` in the nearest ``pyproject.toml`` upwards (or the file
``ARRAYBENCH_CONFIG`` names; empty: none). Any option ``OPTIONS`` puts on the project file, spelled as
on the command line or with underscores, checked as if typed; the command line wins.

Such a file may sit in a folder someone else owns (``/tmp/pyproject.toml``), so, as git's
``safe.directory``, the options that choose the code run or where results go (``OWN_KEYS``) are taken
only from a file the user owns and no one else may write; ``trust_folder`` never from a file."""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UsageError, unknown_name
from .options import FILE, OWN_KEYS, dashed, on

TABLE = "[tool.arraybench]"
#: A project file beyond this is not one (pyproject.toml files are KiBs).
MAX_BYTES = 4 << 20
#: Keys only the command line may give: a file never grants trust.
COMMAND_LINE_ONLY = frozenset({"trust-folder"})


@dataclass
class ProjectDefaults:
    """A project file's defaults: ``values`` by argparse destination, ``spelled`` as the file has them."""

    source: Path | None = None
    values: dict[str, Any] = field(default_factory=dict)
    spelled: dict[str, Any] = field(default_factory=dict)


def find(start: Path | None = None) -> Path | None:
    """The project file: ``ARRAYBENCH_CONFIG``, or the nearest pyproject.toml upwards."""
    named = os.environ.get("ARRAYBENCH_CONFIG")
    if named is not None:
        return Path(named) if named else None
    here = (start or Path.cwd()).resolve()
    return next((f / "pyproject.toml" for f in (here, *here.parents) if (f / "pyproject.toml").is_file()), None)


def load(parser: argparse.ArgumentParser, path: Path | None) -> ProjectDefaults:
    """The defaults ``path``'s ``[tool.arraybench]`` sets for ``parser``'s options; ``UsageError`` for
    a file that is not TOML, an unknown key or a value the option would refuse."""
    if path is None:
        return ProjectDefaults()
    try:
        raw, doubt = _read(path)
        data = tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (ARRAYBENCH_CONFIG)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror if isinstance(exc, OSError) and exc.strerror else exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    table = data.get("tool", {}).get("arraybench") if isinstance(data.get("tool"), dict) else None
    if table is None:
        return ProjectDefaults(source=path)
    if not isinstance(table, dict):
        raise UsageError(f"{path}: {TABLE} must be a table of options, not {type(table).__name__}")
    actions = _options(parser)
    result = ProjectDefaults(source=path)
    own = sorted(k for k in table if k.replace("_", "-") in OWN_KEYS)
    if own and doubt is not None:
        chosen = " and ".join(dict.fromkeys(OWN_KEYS[k.replace("_", "-")] for k in own))
        raise UsageError(f"{path}: {TABLE} sets {', '.join(own)}, which would choose {chosen}, "
                         f"but the file {doubt}, so it is not used; give these on the command "
                         "line, or set ARRAYBENCH_CONFIG to a file of your own (an empty "
                         "ARRAYBENCH_CONFIG uses none)")
    for key, value in table.items():
        if key.replace("_", "-") in COMMAND_LINE_ONLY:
            # Skipped, not refused: a file should not stop every plain run either.
            print(f"arraybench: {path}: {key} is ignored: trusting a folder's code is decided on "
                  "the command line only (--resume DIR --trust-folder)", file=sys.stderr)
            continue
        if key == "store" and isinstance(value, bool) and "no-store" in actions:
            # `store = false`: store no run (as --no-store); `store = true`: the default store.
            if not value:
                result.values[actions["no-store"].dest] = True
            result.spelled[key] = value
            continue
        action = actions.get(key.replace("_", "-"))
        if action is None:
            listed = sorted({dashed(o.name) for o in on(FILE)} & set(actions))  # not the old spellings
            raise UsageError(f"{path}: " + unknown_name("key", key, sorted(actions), listed=listed,
                                                        where=f"in {TABLE}"))
        result.values[action.dest] = _convert(action, value, f"{path}: {TABLE} {key}")
        result.spelled[key] = value
    return result


def _read(path: Path) -> tuple[bytes, str | None]:
    """The file's bytes (a regular file of at most ``MAX_BYTES``: a pipe would block, /dev/zero never
    end), and why it cannot be trusted with ``OWN_KEYS``, or None."""
    from .model.schema import read_regular

    st = os.stat(path)  # stat, not open: a named pipe is not opened here
    if st.st_size > MAX_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_BYTES >> 10} KiB; a project file is a few KiB", str(path))
    data = read_regular(path)
    after = os.stat(path)
    if (after.st_dev, after.st_ino) != (st.st_dev, st.st_ino):  # swapped while read: vouch for none
        return data, "was replaced while it was read"
    return data, distrust(after)


def distrust(st: os.stat_result) -> str | None:
    """Why a file may not choose what runs or where results go (another user owns it, or others may write it), or None."""
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"belongs to another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "may be written by other users (chmod go-w fixes that)"
    return None


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """``parser``'s options a file may set, by each spelling without dashes (``max-time``)."""
    known = parser._option_string_actions
    return {dashed(n): known["--" + dashed(n)] for o in on(FILE) for n in (o.name, *o.aliases)
            if "--" + dashed(n) in known}


def _convert(action: argparse.Action, value: Any, where: str) -> Any:
    """``value`` as the option's own parser would give it, or ``UsageError``."""
    if isinstance(action, argparse._StoreConstAction):  # a flag (store_true is one) or a preset: `fast = true`
        if not isinstance(value, bool):
            raise UsageError(f"{where} must be true or false, not {value!r}")
        return action.const if value else action.default
    if isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str) for v in items):
            raise UsageError(f"{where} must be text or a list of texts")
        return [_one(action, v, where) for v in items]
    if isinstance(value, list):
        if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
            raise UsageError(f"{where} must be a list of names or numbers")
        value = ",".join(str(v) for v in value)
    elif isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UsageError(f"{where} must be text or a number, not {value!r}")
    return _one(action, str(value), where)


def _one(action: argparse.Action, text: str, where: str) -> Any:
    try:
        converted = action.type(text) if action.type is not None else text
    except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
        raise UsageError(f"{where}: {exc}") from None
    if action.choices is not None and converted not in action.choices:
        raise UsageError(f"{where}: {converted!r} is not one of {', '.join(map(str, action.choices))}")
    return converted
