"""The plots a report wrote into a folder, listed one name a line in ``.arraybench-files``: what
``--overwrite`` removes (``outdir/own_files``), with the report files it names itself, before a new
run starts there. Only plain plot names in the folder itself are listed or read back: the manifest
is the user's file too, and one edited by hand must not remove anything else.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..files import write_atomic
from ..model.untrusted import read_regular

MANIFEST_NAME = ".arraybench-files"
#: The kinds of file a manifest may name.
LISTED_SUFFIXES = (".svg", ".png")


def manifest(out: Path) -> list[str]:
    """The names the manifest in ``out`` lists, each a plot's plain name in ``out`` itself (a
    name that is not one is ignored: the manifest is the user's file too)."""
    try:
        text = read_regular(out / MANIFEST_NAME, follow_links=False).decode("utf-8", "replace")
    except OSError:  # none yet, or not a file we wrote: it lists nothing
        return []
    return [name for name in text.splitlines() if _listable(name)]


def _listable(name: str) -> bool:
    return (bool(name) and name == os.path.basename(name) and "\\" not in name and "\0" not in name
            and not name.startswith(".") and name.endswith(LISTED_SUFFIXES))


def remember(out: Path, written: list[Path]) -> None:
    """Add the plots just written in ``out`` to its manifest (with those it listed already)."""
    names = [p.name for p in written if p.parent == out and _listable(p.name)]
    listed = manifest(out)
    if not names or set(names) <= set(listed):
        return
    write_atomic(out / MANIFEST_NAME, "".join(f"{n}\n" for n in dict.fromkeys([*listed, *names])))
