"""The source a run measured, as git knows it (commit, branch, dirty), recorded as asv does so that
history can name a step's commit; and the same-session baseline (``--against REF``): a git ref's code
measured beside the work tree's, as ``asv continuous`` does, not a stored run from another state of
the machine (``export``, ``variants``). A work tree may come from anyone, and git runs what a
repository's configuration names (fsmonitor, filters, hooks): every call here (``command``) turns
those off, so reading a repository runs nothing of its choosing."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Iterator, Mapping

from ..errors import UsageError, from_command_line
from .environments import remove_stale_folders

#: How long git may take to answer; a slow network file system must not hold a run up.
TIMEOUT_S = 5.0
#: Settings that keep git from running what the repository's configuration names: its fsmonitor
#: hook (or daemon), its hooks, and any transport (a partial clone fetches missing objects,
#: through whatever ``core.sshCommand`` says).
NEUTRAL = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never")


def command(cwd: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of ``git args`` in ``cwd`` running nothing of the repository's choosing
    (``NEUTRAL``, and every filter driver its configuration defines emptied)."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0",  # never lock (or rewrite) the index
           "GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0"}
    try:  # reading configuration runs nothing; git config lists what includes bring in too
        found = subprocess.run(["git", *NEUTRAL, "config", "--null", "--name-only", "--get-regexp", r"^filter\."],
                               cwd=cwd, capture_output=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL, env=env)
        keys = found.stdout.decode("utf-8", "surrogateescape").split("\0")
    except (OSError, subprocess.SubprocessError, ValueError):
        keys = []
    names = sorted({k[len("filter."):k.rindex(".")] for k in keys if k.count(".") >= 2})
    # An empty command is none.
    filters = [arg for name in names for setting in ("clean=", "smudge=", "process=", "required=false")
               for arg in ("-c", f"filter.{name}.{setting}")]
    return ["git", *NEUTRAL, *filters, *args], env


#: git's answers kept while ``asked_once`` holds (None: git is asked every time).
_answers: dict[tuple[str, ...], str | None] | None = None


@contextmanager
def asked_once(answers: dict[tuple[str, ...], str | None]) -> Iterator[None]:
    """Inside, each question to git in each folder is asked once, its answer kept in ``answers``:
    a pytest session's tests measure one version of the code (each test's run asked 6-8 git
    processes the same questions)."""
    global _answers
    before, _answers = _answers, answers
    try:
        yield
    finally:
        _answers = before


def _answer(cwd: Path, *args: str) -> str | None:
    key = (str(cwd), *args)
    if _answers is not None and key in _answers:
        return _answers[key]
    try:
        done = _git(list(args), cwd, timeout=TIMEOUT_S)
        answer = os.fsdecode(done.stdout).strip() if done.returncode == 0 else None
    except (UsageError, OSError, ValueError):  # no git, too slow, or no such folder
        answer = None
    if _answers is not None:
        _answers[key] = answer
    return answer


def labels(cwd: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """``{"commit", "branch", "dirty"}`` of the work tree holding ``cwd``; empty outside one (no branch when detached)."""
    where = Path(cwd if cwd is not None else os.getcwd())
    commit = _answer(where, "rev-parse", "--verify", "--quiet", "--short=12", "HEAD")
    if not commit:
        return {}
    out = {"commit": commit}
    branch = _answer(where, "symbolic-ref", "--quiet", "--short", "HEAD")
    if branch:
        out["branch"] = branch
    # Submodules left out: status would run in each, under its own configuration.
    status = _answer(where, "status", "--porcelain", "--untracked-files=no", "--ignore-submodules=all")
    if status is not None:
        out["dirty"] = "yes" if status else "no"
    return out


def project(cwd: str | os.PathLike[str] | None = None) -> str:
    """The top of the git work tree holding ``cwd``, else that folder, resolved: the folder a run belongs to."""
    where = Path(cwd if cwd is not None else os.getcwd()).resolve()
    top = _answer(where, "rev-parse", "--show-toplevel")
    return str(Path(top).resolve()) if top else str(where)


#: The environment of the work tree's own code in a run ``--against REF``.
HERE = "here"
#: Tells a worker that workload files under the first folder are read from the second instead.
SOURCE_MAP = "ARRAYBENCH_SOURCE_MAP"
#: The commit REF named when the run began, kept in REF's environment (and so in the journal).
COMMIT = "ARRAYBENCH_AGAINST_COMMIT"
#: How an exported tree's folder is named in the temporary folder (then the id of the process
#: that made it, so a later export can tell a killed run's leftovers).
PREFIX = "arraybench-against-"
#: What an ignored file may be and still change what the code does when imported.
_IMPORTED = (".py", ".so", ".pyd", ".dylib")
#: What an ignored folder or file in a package may be without changing the code.
_HARMLESS = ("__pycache__", ".pyc", ".egg-info", ".dist-info")


def label_for(ref: str) -> str:
    """An environment label for ``ref`` (``main``, ``v1.2``); never ``here``, the work tree's own."""
    text = re.sub(r"[^A-Za-z0-9_.+-]+", "-", ref).strip("-.+_") or "ref"
    return text[:40] if text[:40] != HERE else f"ref-{HERE}"


def _git(args: list[str], cwd: Path, *, timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        argv, env = command(cwd, *args)
        return subprocess.run(argv, cwd=cwd, capture_output=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise UsageError("--against needs git, which is not installed") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"--against: git {args[0]} took over {timeout:g} s") from None


_EXPORTED: dict[tuple[str, Path], tuple[Path, Path]] = {}
#: The commit each exported tree holds.
_COMMIT_OF: dict[Path, str] = {}


def export(ref: str, where: Path | None = None, *, label: str | None = None) -> tuple[Path, Path]:
    """(the work tree's root, a temporary folder holding ``ref``'s files), once per process; ``UsageError``
    without a work tree or ref. The folder goes with the process (or, killed, with the next export)."""
    where = (where or Path.cwd()).resolve()
    if (ref, where) in _EXPORTED and _EXPORTED[(ref, where)][1].is_dir():
        return _EXPORTED[(ref, where)]
    top = _git(["rev-parse", "--show-toplevel"], where)
    if top.returncode != 0:
        raise UsageError(f"--against {ref}: {where} is not in a git work tree")
    root = Path(os.fsdecode(top.stdout.strip()))
    commit = resolve(ref, root)
    remove_stale_folders(prefix=PREFIX)
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    atexit.register(shutil.rmtree, folder, True)
    tree = folder / (label or label_for(ref))
    _write_commit(root, commit, tree, ref)
    _COMMIT_OF[tree] = commit
    _EXPORTED[(ref, where)] = root, tree
    return root, tree


def resolve(ref: str, root: Path) -> str:
    """The full commit id ``ref`` names in the repository at ``root``, or ``UsageError``."""
    found = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], root)
    if found.returncode != 0 or not found.stdout.strip():
        raise UsageError(f"--against {ref}: no such commit, branch or tag in {root}")
    return found.stdout.decode().strip()


def _write_commit(root: Path, commit: str, tree: Path, ref: str) -> None:
    """``commit``'s files under ``tree``, each blob as git stores it: ``cat-file`` runs no filter."""
    listing = _git(["ls-tree", "-r", "-z", "--full-tree", commit], root, timeout=300)
    if listing.returncode != 0:
        raise UsageError(f"--against {ref}: git ls-tree failed: {listing.stderr.decode(errors='replace').strip()[:200]}")
    entries = []
    for record in listing.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, kind, oid = meta.decode().split()
        path = PurePosixPath(os.fsdecode(name))
        if path.is_absolute() or any(part in ("", ".", "..", ".git") for part in path.parts):
            continue  # a crafted tree may name paths out of the folder
        entries.append((mode, kind, oid, path))
    tree.mkdir(parents=True)
    links = []
    argv, env = command(root, "cat-file", "--batch")
    with subprocess.Popen(argv, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, env=env) as batch:
        assert batch.stdin is not None and batch.stdout is not None
        for mode, kind, oid, path in entries:
            target = tree.joinpath(*path.parts)
            if kind == "commit":  # a submodule: an empty folder, as git archive leaves it
                target.mkdir(parents=True, exist_ok=True)
                continue
            batch.stdin.write(oid.encode() + b"\n")
            batch.stdin.flush()
            header = batch.stdout.readline().split()
            if len(header) != 3:
                raise UsageError(f"--against {ref}: git cat-file could not read {path}")
            data = batch.stdout.read(int(header[2]))
            batch.stdout.read(1)
            if mode == "120000":
                links.append((target, os.fsdecode(data)))
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                         0o755 if mode == "100755" else 0o644)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
        batch.stdin.close()
    # Links last, and only those that stay inside the tree: no file is written through one.
    for target, pointee in links:
        inside = (target.parent / pointee).resolve()
        if not os.path.isabs(pointee) and inside.is_relative_to(tree.resolve()):
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(pointee, target)


def variants(ref: str, root: Path, tree: Path, inherited: str = "",
             commit: str | None = None) -> dict[str, dict[str, str]]:
    """The two environments of ``--against ref``: ``ref``'s code first on the path (``src/`` too), its
    workload files read from ``tree``, its commit recorded; the work tree's as it is."""
    paths = [str(tree)] + ([str(tree / "src")] if (tree / "src").is_dir() else []) + ([inherited] if inherited else [])
    ref_env = {"PYTHONPATH": os.pathsep.join(paths), SOURCE_MAP: f"{root}{os.pathsep}{tree}"}
    ref_env[COMMIT] = commit or _COMMIT_OF.get(tree) or resolve(ref, root)
    return {label_for(ref): ref_env, HERE: {}}


def reexport(ref: str, recorded: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, str]]:
    """A resumed ``--against ref`` run's environments: the recorded commit exported afresh (the old tree
    went with its process); ``UsageError`` where no commit was recorded or it is gone."""
    what = "--resume" if from_command_line() else "resume()"
    label = label_for(ref)
    saved = recorded.get(label, {})
    commit, mapping = saved.get(COMMIT), saved.get(SOURCE_MAP, "")
    if not commit or os.pathsep not in mapping:
        raise UsageError(f"{what}: this run --against {ref} recorded no commit to measure {ref} at again "
                         "(an older arraybench wrote it); start it afresh")
    root, old = mapping.split(os.pathsep, 1)
    if _git(["cat-file", "-e", f"{commit}^{{commit}}"], Path(root)).returncode != 0:
        raise UsageError(f"{what}: this run measured --against {ref} at commit {commit[:12]} of {root}, "
                         "which is no longer there; start the run afresh")
    _, tree = export(commit, Path(root), label=label)
    inherited = [p for p in saved.get("PYTHONPATH", "").split(os.pathsep)
                 if p and p != old and not p.startswith(old + os.sep)]
    return variants(ref, Path(root), tree, os.pathsep.join(inherited), commit=commit)


def lacking(root: Path, tree: Path) -> list[str]:
    """The ignored files of the work tree that may be imported with its code (a generated
    ``_version.py``, an extension) and that ``tree``, a commit's tracked files, lacks."""
    listed = _git(["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"], root)
    if listed.returncode != 0:
        return []
    found = []
    for name in sorted(os.fsdecode(n) for n in listed.stdout.split(b"\0") if n):
        path = PurePosixPath(name.rstrip("/"))
        if any(part.endswith(_HARMLESS) for part in path.parts):
            continue
        in_package = root.joinpath(*path.parent.parts, "__init__.py").is_file()
        if name.endswith("/"):  # an ignored package, or a folder inside one (not .venv/, build/)
            matters = in_package or root.joinpath(*path.parts, "__init__.py").is_file()
        else:
            matters = path.suffix in _IMPORTED and (in_package or str(path.parent) in (".", "src"))
        if matters and not tree.joinpath(*path.parts).exists():
            found.append(name)
    return found


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
