"""A workload made of one expression and its setup, as ``arraybench timeit`` takes them.

``xp.sort(a)`` with the setup ``a = randn(n)`` is a workload ``sort_a(xp, a)`` whose setup plays
``inputs=``: it runs with NumPy on the host, from the run's seeded generator, and the names the
expression reads from it are the function's arguments (arrays its inputs, scalars its settings).
The setup runs in the parent at every size before any worker starts, so that a mistake in either
is one line; the workload then travels to the workers by value.
"""

from __future__ import annotations

import ast
import builtins
import linecache
import re
import traceback
import zlib
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import UsageError, option_name
from .definition import DEFAULT_SIZES, Namespace, Workload, define, parse_size, parse_sizes
from .params import is_numpy_setting, is_setting, plain
from .registry import REGISTRY, register

#: The file names the expression's function and the setup carry in tracebacks and messages.
EXPRESSION_FILE = "<expression>"
SETUP_FILE = "<setup>"
#: What a setup may use beside its own names.
SETUP_NAMES = ("n", "rng", "np", "randn", "rand", "arange")
#: Names people reach for in an expression where ``xp`` is meant.
_LIBRARIES = ("np", "numpy", "torch", "jnp", "jax", "cupy", "cp", "mx", "mlx")
_UNSET = object()


def run_setup(setup: str, n: int | None, rng: np.random.Generator) -> dict[str, Any]:
    """The names ``setup`` binds, with their values (the names it started with, unless rebound)."""
    # It starts with randn, rand, arange (float64), NumPy, the generator, and n where it reads it.
    scope: dict[str, Any] = {
        "rng": rng, "np": np,
        "randn": lambda *shape: rng.standard_normal(shape),
        "rand": lambda *shape: rng.random(shape),
        "arange": lambda *args: np.arange(*args, dtype=np.float64),
        **({} if n is None else {"n": n}),
    }
    start = dict(scope)
    _remember(SETUP_FILE, setup)  # a traceback in a worker shows the setup's own line
    exec(compile(setup, SETUP_FILE, "exec"), scope)
    return {k: v for k, v in scope.items() if not k.startswith("__") and start.get(k, _UNSET) is not v}


def _inputs(setup: str, arrays: tuple[str, ...], reads_n: bool) -> Callable[..., dict[str, Any]]:
    """The workload's ``inputs(n, rng)``: the setup's arrays the expression reads, by name (a
    closure, so that cloudpickle sends it by value)."""
    def inputs(n: int, rng: np.random.Generator) -> dict[str, Any]:
        made = run_setup(setup, n if reads_n else None, rng)
        return {name: made[name] for name in arrays}

    return inputs


def _value_of_n(label: str) -> tuple[str, int]:
    """A size given for ``n``: ``small`` and ``large`` as a workload file's, a count named by itself."""
    if label in DEFAULT_SIZES:
        return label, DEFAULT_SIZES[label]
    if label.isidentifier():
        raise UsageError(f"size {label!r}: give values of n (1000,1e6), a range LO:HI or small,large")
    n = parse_size(label)
    return str(n), n


def expression_workload(expression: str, setup: str = "", *, sizes: Any = None, name: str | None = None,
                        namespace: Namespace = "array_api", seed: int = 0) -> Workload:
    """The workload of ``expression`` (of ``xp`` and the names ``setup`` binds), registered:
    ``arraybench.run(expression_workload("xp.sort(a)", "a = randn(n)"))``. ``sizes`` are values of
    ``n`` as ``run`` takes sizes (``"1000,1e6"``, ``[1000]``; default: small and large); a setup that
    does not read ``n`` makes one size, its largest input's elements. ``UsageError`` says what
    is wrong."""
    named = None if sizes is None else dict(map(_value_of_n, parse_sizes(sizes)))
    expr_tree = _parse(expression, "eval", "the expression")
    setup_tree = _parse(setup, "exec", option_name("setup"))
    if any(isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)) for node in ast.walk(expr_tree)):
        raise UsageError("the expression cannot yield or await: it is the body of one call")
    loaded, stored = _names(setup_tree)
    reads_n = "n" in loaded and "n" not in stored  # a setup that sets its own n has its own size
    if named and not reads_n:
        raise UsageError(f"{option_name('sizes')} gives n, which {option_name('setup')} does not "
                              "read: write, e.g., a = randn(n)")
    wl_name = name or _default_name(expression)
    taken = REGISTRY.get(wl_name)
    if taken is not None and taken.source == "builtin":
        raise UsageError(f"{option_name('name')} {wl_name}: a built-in workload has that name; "
                              "give another")

    def at(n: int | None, size: int) -> dict[str, Any]:
        rng = np.random.default_rng([seed, zlib.crc32(wl_name.encode()), size])  # as make_inputs'
        try:
            return run_setup(setup, n, rng)
        except (Exception, SystemExit) as exc:  # the user's code: anything may fail
            where = f" at n = {n}" if n is not None else ""
            raise UsageError(f"{option_name('setup')} failed{where}: {_described(exc)}") from None

    if reads_n:
        chosen = dict(named or DEFAULT_SIZES)
        made = {n: at(n, n) for n in chosen.values()}
    else:
        made = {0: at(None, 0)}
    if "xp" in made[next(iter(made))]:
        raise UsageError(f"{option_name('setup')} binds xp, which is each library's namespace in the "
                              "expression")
    arrays, settings = _arguments(expr_tree, made)
    if not reads_n:  # one size: what the inputs hold, as a table's "n" should say
        size = max([made[0][x].size for x in arrays] + [1])
        chosen, made = {str(size): size}, {size: made[0]}
    fn = _compiled(expression, arrays, list(settings))
    fn.__kwdefaults__ = dict(settings) or None
    table = {n: {k: plain(values[k]) for k in settings} for n, values in made.items()}
    varies = len({tuple(sorted(t.items())) for t in table.values()}) > 1
    try:
        wl = define(
            fn, name=wl_name, sizes=chosen, inputs=_inputs(setup, tuple(arrays), reads_n),
            description=" ".join(expression.split()), namespace=namespace,
            params=(lambda n: dict(table[n])) if varies else None,
            size_means="n, as the setup reads it" if reads_n else "elements of the largest input")
    except (TypeError, ValueError) as exc:  # a --name the cell keys cannot hold, say
        raise UsageError(str(exc)) from None
    register(wl)
    return wl


def _arguments(tree: ast.AST, made: Mapping[int, dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    """The expression's arrays (in the setup's order) and settings (their first values)."""
    first = next(iter(made.values()))
    loaded, stored = _names(tree)
    free = [x for x in loaded if x not in stored and x != "xp"]
    unknown = [x for x in free if x not in first and not hasattr(builtins, x)]
    if unknown:
        x = unknown[0]
        defined = ", ".join(first) or "nothing"
        hint = ("; write xp, each library's namespace, where you mean a library" if x in _LIBRARIES
                else f"; {x} is the setup's own: bind what the expression needs, e.g. a = randn(n)"
                if x in SETUP_NAMES else "")
        raise UsageError(f"unknown name {x!r} in the expression: it reads xp and what "
                              f"{option_name('setup')} binds ({defined}){hint}")
    arrays: list[str] = []
    settings: dict[str, Any] = {}
    for x in (k for k in first if k in free):
        kinds = {"array" if isinstance(v, np.ndarray) else "setting" if is_setting(v) or is_numpy_setting(v)
                 else "other" for v in (values[x] for values in made.values())}
        if kinds == {"array"}:
            arrays.append(x)
        elif kinds == {"setting"}:
            settings[x] = first[x]
        else:
            what = f"a {type(first[x]).__name__}" if len(kinds) == 1 else "an array at one size, not another"
            raise UsageError(f"{option_name('setup')} binds {x} to {what}: the expression's names must "
                                  "be NumPy arrays (randn(n), np.ones(n)...) or numbers")
    return arrays, settings


def _names(tree: ast.AST) -> tuple[list[str], set[str]]:
    """The names ``tree`` reads (in order, once each) and those it binds (targets, parameters)."""
    loaded: list[str] = []
    stored: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loaded.append(node.id)
            else:
                stored.add(node.id)
        elif isinstance(node, ast.arg):
            stored.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stored.add(node.name)
        elif isinstance(node, ast.alias):
            stored.add((node.asname or node.name).split(".")[0])
    return list(dict.fromkeys(loaded)), stored


def _parse(text: str, mode: str, what: str) -> ast.AST:
    if mode == "eval" and not text.strip():
        raise UsageError("the expression is empty: give one, e.g. 'xp.sort(a)'")
    try:
        return ast.parse(text.strip() if mode == "eval" else text, mode=mode)
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        where = f"line {exc.lineno}, column {exc.offset}" if "\n" in text.strip() else f"column {exc.offset}"
        raise UsageError(f"{what} is not valid Python: {exc.msg} at {where}"
                              + (f": {line}" if line else "")) from None
    except ValueError as exc:  # a NUL character
        raise UsageError(f"{what} is not valid Python: {exc}") from None


def _compiled(expression: str, arrays: list[str], settings: list[str]) -> Callable[..., Any]:
    """``def timeit(xp, a, *, k): return EXPR``: arrays positional, settings keyword-only."""
    parameters = ", ".join(["xp", *arrays, *(["*", *settings] if settings else [])])
    source = f"def timeit({parameters}):\n    return {expression.strip()}\n"
    # A module name no worker can import: cloudpickle sends it by value, and it is not a built-in.
    scope: dict[str, Any] = {"__name__": "arraybench_expression", "__builtins__": builtins}
    _remember(EXPRESSION_FILE, source)
    exec(compile(source, EXPRESSION_FILE, "exec"), scope)
    return scope["timeit"]


def _remember(filename: str, text: str) -> None:
    """Keep ``text`` where tracebacks look for ``filename``'s lines (mtime None: no file to check)."""
    lines = [line + "\n" for line in text.splitlines()]
    linecache.cache[filename] = (len(text), None, lines, filename)


def _default_name(expression: str) -> str:
    """A name for the cells from the expression: ``xp.sort(a)`` is ``sort-a``."""
    text = re.sub(r"\bxp\.", "", expression)
    slug = re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-._")[:40].strip("-._")
    return slug if slug[:1].isalnum() else "expression"


def _described(exc: BaseException) -> str:
    """``NameError: name 'b' is not defined (line 1: a = b)``, the line the setup's own."""
    text = str(exc).strip().splitlines()
    head = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == SETUP_FILE]
    if frames:
        head += f" (line {frames[-1].lineno}: {(frames[-1].line or '').strip()})"
    if isinstance(exc, NameError):
        head += f"; the setup has {', '.join(SETUP_NAMES)} (NumPy, on the host)"
    return head
