"""The same-session baseline (``--against REF``): a git ref's code measured beside the work tree's.

A stored baseline was measured at another time, in another state of the machine; ``asv
continuous`` measures both commits in one session instead. Here the files of ``REF`` are exported
(``git archive``) into a temporary folder, and the run gets two environments, side by side like
any others (``executors/turns``): ``REF``'s, whose workers find the user's package and workload
files in that folder first, and the work tree's own (``here``). Every pair of a case then compares
the same library on both versions of the code, one verdict each (``analysis/pairs``).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from ..errors import UsageError

#: The environment of the work tree's own code in a run ``--against REF``.
HERE = "here"
#: Tells a worker that workload files under the first folder are read from the second instead.
SOURCE_MAP = "ARRAYBENCH_SOURCE_MAP"


def label_for(ref: str) -> str:
    """An environment label for ``ref`` (``main``, ``HEAD-1``, ``v1.2``)."""
    text = re.sub(r"[^A-Za-z0-9_.+-]+", "-", ref).strip("-.+_") or "ref"
    if not text[0].isalnum():
        text = "r" + text
    return text[:40]


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=120)
    except FileNotFoundError:
        raise UsageError("--against needs git, which is not installed") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"--against: git {args[0]} took over 120 s") from None


_EXPORTED: dict[tuple[str, Path], tuple[Path, Path]] = {}


def export(ref: str, where: Path | None = None) -> tuple[Path, Path]:
    """(the work tree's root, a temporary folder holding ``ref``'s files); ``UsageError`` in one
    line where there is no git work tree or no such ref. The folder goes when the process ends;
    a process exports each ref once (a pytest session's tests share it)."""
    where = (where or Path.cwd()).resolve()
    if (ref, where) in _EXPORTED and _EXPORTED[(ref, where)][1].is_dir():
        return _EXPORTED[(ref, where)]
    top = _git(["rev-parse", "--show-toplevel"], where)
    if top.returncode != 0:
        raise UsageError(f"--against {ref}: {where} is not in a git work tree")
    root = Path(top.stdout.decode().strip())
    commit = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root)
    if commit.returncode != 0:
        raise UsageError(f"--against {ref}: no such commit, branch or tag in {root}")
    folder = Path(tempfile.mkdtemp(prefix="arraybench-against-"))
    atexit.register(shutil.rmtree, folder, True)
    archive = folder / "tree.tar"
    with archive.open("wb") as out:
        done = subprocess.run(["git", "archive", "--format=tar", commit.stdout.decode().strip()], cwd=root,
                              stdout=out, stderr=subprocess.PIPE, timeout=300)
    if done.returncode != 0:
        raise UsageError(f"--against {ref}: git archive failed: {done.stderr.decode().strip()[:200]}")
    tree = folder / label_for(ref)
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")  # the data filter: no links out, no devices
    archive.unlink()
    _EXPORTED[(ref, where)] = root, tree
    return root, tree


def variants(ref: str, root: Path, tree: Path, inherited: str = "") -> dict[str, dict[str, str]]:
    """The two environments of a run ``--against ref``: ``ref``'s code first on the path (a
    ``src/`` layout's too) and its workload files read from ``tree``; the work tree's as it is."""
    paths = [str(tree)] + ([str(tree / "src")] if (tree / "src").is_dir() else []) + ([inherited] if inherited else [])
    return {label_for(ref): {"PYTHONPATH": os.pathsep.join(paths), SOURCE_MAP: f"{root}{os.pathsep}{tree}"},
            HERE: {}}


def mapped(path: str, mapping: str | None) -> str:
    """``path`` read from the exported tree where it lies in the work tree (``SOURCE_MAP``)."""
    if not mapping or os.pathsep not in mapping:
        return path
    root, tree = mapping.split(os.pathsep, 1)
    try:
        relative = Path(path).resolve().relative_to(root)
    except ValueError:
        return path
    return str(Path(tree) / relative)
