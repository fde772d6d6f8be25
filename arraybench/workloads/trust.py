"""The code a run's folder carries, and what ``--resume`` checks before it runs it: that it may, and
that it is the same.

A workload defined in a notebook or a script has no file to import: it travels to the workers by
``cloudpickle`` (code, closures, defaults), written into the run's output folder so that
``--resume`` can send it again after the kernel is gone; the source lines of every function go
along too, into the worker's ``linecache``, so that an error names the user's own line.

A results folder is data, perhaps from someone else, and its journal names workload files to import
and a ``workloads.pickle`` that loading would run. Either runs only when the user names it
(``--workload-files``), trusts the folder (``--trust-folder``), or the folder is their own: its
header carries an HMAC-SHA256 seal made with a key only this user's arraybench holds. The pickle
loads only if its SHA-256 is the one its run recorded. And a workload whose code changed since the
run began (its ``fingerprint``) is refused: its cells would pool replicates of the old code and the new.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import linecache
import os
import pickle
import secrets
import shlex
import sys
import tempfile
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..errors import UsageError
from .registry import register

if TYPE_CHECKING:
    from .definition import Workload

#: The workloads a run defined in Python, pickled (``pack``) into its output folder.
SHIPPED_NAME = "workloads.pickle"
KEY_NAME = "folder.key"
_KEY_BYTES = 32


def key_path() -> Path:
    import platformdirs  # the store's data folder (``store.database``), named without importing it

    return Path(platformdirs.user_data_dir("arraybench", appauthor=False)) / KEY_NAME


def _read_key(path: Path) -> bytes | None:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        with open(os.open(path, flags), "rb") as f:
            st = os.fstat(f.fileno())
            # Another user's (or a world-writable) key vouches for nothing.
            if st.st_uid != os.getuid() or st.st_mode & 0o077:
                return None
            data = f.read(_KEY_BYTES + 1)
    except OSError:
        return None
    return data if len(data) == _KEY_BYTES else None


def _key(create: bool) -> bytes | None:
    """This user's sealing key, made on first use when ``create``; None where there is no private
    data folder to keep it in (then nothing is sealed)."""
    try:
        path = key_path()
    except (RuntimeError, OSError):  # no home folder
        return None
    key = _read_key(path)
    if key is not None or not create:
        return key
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".folder.key.", dir=path.parent)  # 0600
        try:
            os.write(fd, secrets.token_bytes(_KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:  # never replaces: of runs starting together, the first key wins
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
    except OSError:
        return None
    return _read_key(path)


def _canonical(header: dict[str, Any]) -> bytes:
    body = {k: v for k, v in header.items() if k != "seal"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def seal(header: dict[str, Any]) -> str | None:
    """The seal of a journal header written by this user's arraybench (None: no key here)."""
    key = _key(create=True)
    return None if key is None else hmac.new(key, _canonical(header), hashlib.sha256).hexdigest()


def sealed(header: dict[str, Any]) -> bool:
    """Whether ``header`` was written, as it is, by this user's arraybench."""
    given = header.get("seal")
    key = _key(create=False)
    if not isinstance(given, str) or key is None:
        return False
    try:
        return hmac.compare_digest(given, hmac.new(key, _canonical(header), hashlib.sha256).hexdigest())
    except (TypeError, ValueError):  # a header no JSON can hold: not ours
        return False


def digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a regular file's bytes, in hex (``OSError`` if it cannot be read as one)."""
    import errno
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    with open(os.open(path, flags), "rb") as f:  # O_NONBLOCK: a named pipe is refused, not waited on
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(errno.EINVAL, "is not a regular file", str(path))
        return hashlib.file_digest(f, "sha256").hexdigest()


def check_resume(out: Path, *, files: list[str], shipped: bool, shipped_sha256: str | None,
                 sealed: bool, named: list[str], trust_folder: bool, environments: bool = False) -> None:
    """``UsageError`` (one line, nothing run) unless every piece of code the run in ``out`` needs
    may run: each workload file sealed, named or trusted; the pickle sealed or trusted, and the
    very file its run recorded."""
    if not (sealed or trust_folder):
        alien = "this folder was not written by your arraybench (or its journal was changed)"
        trust = "add --trust-folder (trust_folder=True) only if you trust where the folder came from"
        if environments:
            # Interpreters (--python) and variables (--variant: LD_PRELOAD, PYTHONSTARTUP...) run code.
            raise UsageError(f"{out}: its journal names other interpreters or environment variables "
                             f"(--python, --variant) to run workers with, and {alien}, so none is run; {trust}")
        unnamed = [f for f in files if str(Path(f)) not in {str(Path(n)) for n in named}]
        if unnamed:
            flags = " ".join(f"--workload-files {shlex.quote(f)}" for f in unnamed)
            raise UsageError(f"{out}: its journal names the workload file {unnamed[0]}, and {alien}, so "
                             f"nothing in it is run unless you name it: arraybench run --resume "
                             f"{shlex.quote(str(out))} {flags} (or add --trust-folder if you trust where "
                             "the folder came from)")
        if shipped:
            raise UsageError(f"{out}: its run's workloads were defined in Python and are pickled in "
                             f"{out / SHIPPED_NAME}, which loading would run, and {alien}; {trust}")
    if shipped:
        path = out / SHIPPED_NAME
        try:
            found = digest(path)
        except FileNotFoundError:
            raise UsageError(f"{path}: the workloads defined in Python are missing") from None
        except OSError as exc:
            raise UsageError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        if shipped_sha256 is None and not trust_folder:
            raise UsageError(f"{path}: its run recorded no SHA-256 of it, so it is not loaded; add "
                             "--trust-folder if you trust where the folder came from")
        if shipped_sha256 is not None and not hmac.compare_digest(found, shipped_sha256):
            raise UsageError(f"{path}: is not the file its run wrote (its SHA-256 differs from the "
                             "one in the journal); it is not loaded")


# -- the code's fingerprint ------------------------------------------------------------------------
# It hashes what decides what a call does: the bytecode, constants, names, defaults and closures of
# every function the workload holds, the same module's functions they call, and its settings. Not
# file names or line numbers, nor module data (which may differ per import by design). Another
# Python's bytecode differs, so a resume there is refused too.

#: How deep nested values are followed, and how many items of a list or tuple.
_DEPTH = 8
_ITEMS = 1000


def fingerprint(wl: Workload) -> str:
    """A hex digest of ``wl``'s code and settings (see the module's docstring)."""
    h = hashlib.sha256()
    seen: set[int] = set()
    parts = [wl.fn, wl.inputs, wl.reference, wl.work, wl.params, wl.grad, wl.namespace,
             wl.placement, wl.mutates, sorted(wl.overrides.items()), sorted(wl.gradients.items()),
             sorted(wl.override_namespaces.items()), sorted(wl.gradient_namespaces.items())]
    for part in parts:
        _feed(h, part, seen, _DEPTH)
    return h.hexdigest()[:24]


def _feed(h: Any, value: Any, seen: set[int], depth: int) -> None:
    if depth <= 0:
        h.update(b"<deep>")
        return
    if isinstance(value, (str, bytes)):  # hashed as they are: a long one costs no repr
        h.update(f"{type(value).__name__}:{len(value)}:".encode())
        h.update(value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value)
    elif value is None or isinstance(value, (bool, int, float, complex)):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, types.CodeType):
        _code(h, value, seen, depth)
    elif isinstance(value, types.FunctionType):
        _function(h, value, seen, depth)
    elif isinstance(value, functools.partial):
        h.update(b"partial(")
        _feed(h, value.func, seen, depth - 1)
        _feed(h, value.args, seen, depth - 1)
        _feed(h, sorted(value.keywords.items()), seen, depth - 1)
        h.update(b")")
    elif isinstance(value, (tuple, list)):
        h.update(f"{type(value).__name__}{len(value)}[".encode())
        for v in value[:_ITEMS]:  # a closure over a long list is data, not code
            _feed(h, v, seen, depth - 1)
        h.update(b"]")
    elif isinstance(value, (set, frozenset)):  # iteration order varies with hash randomisation
        items = sorted(repr(v) for v in value if isinstance(v, (int, float, str, bytes)))
        h.update(f"set[{''.join(items)}]".encode())
    elif isinstance(value, dict):
        h.update(b"dict[")
        for k in sorted(value, key=repr):
            _feed(h, k, seen, depth - 1)
            _feed(h, value[k], seen, depth - 1)
        h.update(b"]")
    elif hasattr(value, "dtype") and hasattr(value, "item") and getattr(value, "shape", None) == ():
        h.update(f"{value.dtype}:{value.item()!r};".encode())  # a NumPy scalar
    else:  # an object: its type (its repr may hold a memory address)
        h.update(f"<{type(value).__module__}.{type(value).__qualname__}>".encode())


def _code(h: Any, code: types.CodeType, seen: set[int], depth: int) -> None:
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_argcount,
                   code.co_kwonlyargcount, code.co_flags)).encode())
    for const in code.co_consts:
        _feed(h, const, seen, depth - 1)


def _function(h: Any, fn: types.FunctionType, seen: set[int], depth: int) -> None:
    if id(fn) in seen:  # recursion, or a helper two functions share
        h.update(f"<seen {fn.__qualname__}>".encode())
        return
    seen.add(id(fn))
    h.update(f"def {fn.__qualname__}".encode())
    _code(h, fn.__code__, seen, depth)
    _feed(h, fn.__defaults__, seen, depth - 1)
    _feed(h, fn.__kwdefaults__, seen, depth - 1)
    for cell in fn.__closure__ or ():
        try:
            _feed(h, cell.cell_contents, seen, depth - 1)
        except ValueError:  # an empty cell
            h.update(b"<empty>")
    # The module's own functions it calls by name: an edited helper changes what a call does.
    for name in dict.fromkeys(name for c in nested_codes(fn.__code__) for name in c.co_names):
        value = fn.__globals__.get(name)
        if isinstance(value, types.FunctionType) and value.__module__ == fn.__module__:
            h.update(f"global {name}".encode())
            _function(h, value, seen, depth - 1)


def nested_codes(code: types.CodeType | None) -> list[types.CodeType]:
    """``code`` and every code object nested in it (its lambdas, comprehensions, inner functions)."""
    if code is None:
        return []
    return [code, *(c for const in code.co_consts if isinstance(const, types.CodeType)
                    for c in nested_codes(const))]


def code_of(cells: Iterable[Any], workloads: Mapping[str, Workload]) -> dict[str, str]:
    """The fingerprint of each workload the cells measure, by name."""
    names = dict.fromkeys(c.workload for c in cells)
    return {n: fingerprint(workloads[n]) for n in names if n in workloads}


def check_code(code: Mapping[str, str], unfinished: Iterable[str], out: Path,
               workloads: Mapping[str, Workload]) -> None:
    """Refuse (``UsageError``) to resume the run in ``out`` where the code of a workload it has still
    to measure is not what it was when the run began (``code``; empty from an older arraybench)."""
    changed = [n for n in dict.fromkeys(unfinished)
               if n in code and n in workloads and fingerprint(workloads[n]) != code[n]]
    if not changed:
        return
    names = ", ".join(map(repr, changed))
    source = workloads[changed[0]].source
    where = "arraybench itself" if source == "builtin" else source
    raise UsageError(
        f"--resume {out}: the code of workload {names} changed since the run began (in {where}); "
        "resuming would pool measurements of the old code and the new in one cell. Put the code "
        f"back as it was to resume, or measure the new code afresh in another folder (or with "
        f"--overwrite, which discards what {out} holds)")


# -- shipping by value -----------------------------------------------------------------------------

def needs_shipping(wl: Workload, files: Iterable[str]) -> bool:
    """Whether a worker can get ``wl`` only by value: not built in, not from a workload file."""
    return wl.source != "builtin" and wl.source not in {str(Path(f).resolve()) for f in files}


def pack(workloads: list[Workload]) -> bytes:
    """The workloads, by value, with their source lines; ``UsageError`` names a workload and
    what of it could not be pickled (a lock, an open file), before anything is written."""
    import cloudpickle

    for wl in workloads:
        for fn in wl.functions():
            _by_value(fn)
        try:
            cloudpickle.dumps(wl)
        except Exception as exc:  # pickling calls arbitrary __reduce__ code: anything can fail
            first = (str(exc).strip().splitlines() or [""])[0]
            raise UsageError(
                f"workload {wl.name!r} cannot be sent to the worker processes ({type(exc).__name__}: "
                f"{first}): what its functions refer to must be picklable; create such an object "
                "inside the function, or define the workload in a file and pass it with "
                "--workload-files (workload_files=)") from None
    payload = {"workloads": workloads, "sources": _sources(workloads),
               "filenames": [[c.co_filename if isinstance(c := getattr(fn, "__code__", None), types.CodeType)
                              else None for fn in wl.functions()] for wl in workloads]}
    return cloudpickle.dumps(payload)


def receive(path: str | os.PathLike[str]) -> None:
    """Load shipped workloads into this process's registry (``UsageError`` where the file cannot be
    read or unpickled here)."""
    try:
        with open(path, "rb") as f:
            payload = pickle.load(f)
    except FileNotFoundError:
        raise UsageError(f"{path}: the workloads defined in Python are missing") from None
    except Exception as exc:  # unpickling runs arbitrary reconstruction code: anything can fail
        first = (str(exc).strip().splitlines() or [""])[0]
        raise UsageError(f"{path}: the workloads defined in Python cannot be loaded here "
                         f"({type(exc).__name__}: {first})") from None
    for filename, lines in payload.get("sources", {}).items():
        # mtime None: linecache.checkcache leaves the entry alone.
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    shipped = payload.get("workloads", [])
    for wl, filenames in zip(shipped, payload.get("filenames") or [[]] * len(shipped)):
        for fn, filename in zip(wl.functions(), filenames):
            # Its file given back: cloudpickle (>= 3.1.3) ships code as ``<dynamic-code>``.
            if isinstance(fn, types.FunctionType) and filename:
                fn.__code__ = _with_filename(fn.__code__, filename)
        register(wl)


def _by_value(fn: Any) -> None:
    """Make cloudpickle copy the code of ``fn``'s module where it is the user's own."""
    import cloudpickle

    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    if module is None or module.__name__ == "__main__" or module.__name__.startswith("arraybench"):
        return
    path = getattr(module, "__file__", None) or ""
    if "site-packages" in path or "dist-packages" in path or not path:
        return
    with contextlib.suppress(ValueError):  # one cloudpickle refuses (a package's submodule): by reference
        cloudpickle.register_pickle_by_value(module)


def _with_filename(code: types.CodeType, filename: str) -> types.CodeType:
    consts = tuple(_with_filename(c, filename) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _sources(workloads: list[Workload]) -> dict[str, list[str]]:
    """Source lines of every file the workloads' code comes from, as ``linecache`` holds them."""
    names = dict.fromkeys(code.co_filename for wl in workloads for fn in wl.functions()
                          for code in nested_codes(getattr(fn, "__code__", None)))
    return {name: lines for name in names if (lines := linecache.getlines(name))}
