"""The architecture, checked: no import cycle, analysis apart from rendering, libraries in workers only.

The import graph is read from the source: every ``import`` of an arraybench module, at module level,
inside a function or under ``if TYPE_CHECKING:``; ``from package import name`` counts as importing
the package too (its ``__init__`` runs first). A cycle hidden behind any of them fails here.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections import Counter
from pathlib import Path

import arraybench

PACKAGE = Path(arraybench.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The arraybench modules (and the outside top-level packages) ``name`` imports."""
    tree = _parsed(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in modules:
                    found.add(sub)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: {m for m in imports(path, name, modules) if m in modules and m != name}
            for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_another_that_imports_it_back():
    assert cycles(import_graph()) == []


def test_a_type_checking_import_counts():
    modules = {"arraybench.a": Path("a.py"), "arraybench.b": Path("b.py")}
    tree = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from arraybench.b import B\n"
    path = Path(__file__).parent / "_typing_probe.py"
    path.write_text(tree, encoding="utf-8")
    try:
        assert "arraybench.b" in imports(path, "arraybench.a", modules)
    finally:
        path.unlink()


#: The package's top holds the public surface and little else: every other module lives in the
#: folder of the process (worker/, executors/) or the concept (model/, analysis/, render/...) it
#: belongs to.
MAX_TOP_LEVEL_MODULES = 15


def test_few_modules_lie_loose_at_the_top_of_the_package():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= MAX_TOP_LEVEL_MODULES, loose


def test_the_model_never_imports_analysis_or_rendering():
    modules = _modules()
    for name, path in modules.items():
        if name.startswith("arraybench.model"):
            bad = {m for m in imports(path, name, modules)
                   if m.startswith(("arraybench.analysis", "arraybench.render"))}
            assert not bad, f"{name} imports {sorted(bad)}"


#: The array libraries and compilers only ``arraybench/backends`` may import (Numba and its
#: llvmlite: NumPy's compiled mode; MLX: Apple's array library).
ARRAY_LIBRARIES = ("torch", "jax", "cupy", "mlx", "numba", "llvmlite")


def test_analysis_never_imports_rendering_plotting_or_an_array_library():
    modules = _modules()
    for name, path in modules.items():
        if not name.startswith("arraybench.analysis"):
            continue
        bad = {m for m in imports(path, name, modules)
               if m.split(".")[0] in ("matplotlib", "rich", *ARRAY_LIBRARIES)
               or m.startswith("arraybench.render")}
        assert not bad, f"{name} imports {sorted(bad)}"


def test_only_backends_import_an_array_library():
    modules = _modules()
    for name, path in modules.items():
        if name.startswith("arraybench.backends"):
            continue
        bad = {m for m in imports(path, name, modules) if m.split(".")[0] in ARRAY_LIBRARIES}
        assert not bad, f"{name} imports {sorted(bad)}"


def test_numba_and_mlx_are_imported_by_their_own_backend_modules_alone():
    modules = _modules()
    users = {lib: sorted(name for name, path in modules.items()
                         if any(m.split(".")[0] == lib for m in imports(path, name, modules)))
             for lib in ("numba", "mlx")}
    assert users == {"numba": ["arraybench.backends.numba_jit"],
                     "mlx": ["arraybench.backends.mlx"]}


#: Ray is an optional extra: only the cluster executor and its node agent may import it.
RAY_MODULES = {"arraybench.executors.ray", "arraybench.executors.ray_nodes", "arraybench.executors.ray_agent"}


def test_only_the_cluster_executor_and_its_node_agent_import_ray():
    modules = _modules()
    assert RAY_MODULES <= set(modules)
    for name, path in modules.items():
        uses = any(m.split(".")[0] == "ray" for m in imports(path, name, modules))
        assert uses == (name in RAY_MODULES), f"{name} {'imports' if uses else 'does not import'} ray"


def _python(code: str) -> subprocess.CompletedProcess:
    """``code`` run in a fresh interpreter, which must succeed: its imports are its own."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_a_plain_run_never_imports_ray():
    code = ("import sys; from arraybench.commands.main import build_parser; "
            "from arraybench.commands.run import options_from_args; "
            "import arraybench.api, arraybench.executors, arraybench.executors.cluster; "
            "arraybench.api.plan(options_from_args(build_parser().parse_args(['run']))); "
            "print('ray' in sys.modules)")
    done = _python(code)
    assert done.stdout.strip() == "False"


_NO_MATPLOTLIB = """
import sys, tempfile
from pathlib import Path
sys.path.insert(0, {tests!r})
from synthetic import record, results, spread
from arraybench.render.report import write_report
res = results([record(samples=spread(1e-3)), record(backend="torch", samples=spread(2e-3))])
out = Path(tempfile.mkdtemp())
text = res.table()
assert "NumPy CPU" in text and "PyTorch CPU" in text, text
write_report(res, out, plots=False)
res._repr_html_(); repr(res); res.findings()
assert (out / "report.html").stat().st_size > 1000
loaded = [m for m in ("matplotlib", "torch", "jax", "cupy", "mlx", "numba") if m in sys.modules]
print("loaded:", loaded)
"""


def test_a_table_and_the_html_report_never_import_matplotlib():
    code = _NO_MATPLOTLIB.format(tests=str(Path(__file__).parent))
    done = _python(code)
    assert done.stdout.strip() == "loaded: []"


def test_planning_a_run_from_the_command_line_imports_no_array_library_but_numpy():
    code = ("import sys; from arraybench.commands.main import build_parser; "
            "from arraybench.api import plan; from arraybench.commands.run import options_from_args; "
            "p = plan(options_from_args(build_parser().parse_args(['run']))); "
            "print(len(p.cells), [m for m in ('torch', 'jax', 'cupy', 'mlx', 'numba', 'matplotlib') "
            "if m in sys.modules])")
    done = _python(code)
    cells, loaded = done.stdout.split(" ", 1)
    assert int(cells) >= 10 and loaded.strip() == "[]"


#: What the parent may take from ``worker/``: the protocol it speaks to workers in (its heartbeat
#: board included), read by ``executors/``, which starts workers.
WORKER_BOUNDARY = {"arraybench.worker.protocol"}


def test_nothing_outside_the_worker_imports_it_but_the_executors_speaking_its_protocol():
    modules = _modules()
    for name, path in modules.items():
        if name.startswith("arraybench.worker") or name == "arraybench.worker":
            continue
        used = {m for m in imports(path, name, modules) if m.startswith("arraybench.worker")}
        if name.startswith("arraybench.executors"):
            used -= WORKER_BOUNDARY | {"arraybench.worker"}
        assert not used, f"{name} imports {sorted(used)}"


def test_the_numeric_helpers_are_a_leaf_and_backends_never_reach_into_the_worker():
    modules = _modules()
    for name, path in modules.items():
        found = {m for m in imports(path, name, modules) if m.startswith("arraybench")}
        if name.startswith("arraybench.numeric"):
            assert found <= {"arraybench.numeric"} | {m for m in modules if m.startswith("arraybench.numeric")}, \
                f"{name} imports {sorted(found)}"
        if name.startswith("arraybench.backends"):
            assert not {m for m in found if m.startswith("arraybench.worker")}, f"{name} imports {sorted(found)}"


def test_one_word_per_idea():
    """The words of docs/architecture.md keep one meaning each: ``machine`` for this host's facts
    (``environment`` is a --python/--variant build), ``store`` for the results store alone."""
    modules = _modules()
    assert "arraybench.host.machine" in modules and "arraybench.host.environment" not in modules
    for name, path in modules.items():
        if name.startswith("arraybench.store"):
            continue
        tree = _parsed(path)
        defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        assert "store" not in defined, f"{name} defines store(): the word is the results store's"


def _worded_numbers(tree: ast.AST) -> list[str]:
    """The f-string pieces that word a formatted number as a ratio: ``{x:.2f}×``, ``{r:.1%} faster``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        for before, after in zip(node.values, node.values[1:]):
            if (isinstance(before, ast.FormattedValue) and before.format_spec is not None
                    and isinstance(after, ast.Constant) and isinstance(after.value, str)
                    and after.value.lstrip().startswith(("×", "faster", "slower"))):
                found.append(ast.unparse(node))
    return found


def test_the_finder_of_worded_numbers_finds_one():
    assert _worded_numbers(ast.parse('f"{ratio:.2f}× faster"'))
    assert _worded_numbers(ast.parse('f"{ratio - 1:.1%} slower"'))
    assert not _worded_numbers(ast.parse('f"{format_speedup(ratio)} than NumPy"'))


def test_one_module_turns_ratios_into_text():
    """A ratio reads the same in a table, a finding, a comparison and a plot: each words it
    through ``units`` rather than its own format."""
    for name, path in _modules().items():
        if name != "arraybench.units":
            found = _worded_numbers(_parsed(path))
            assert not found, f"{name} words a ratio itself: {found}"


#: The modules of analysis/ that may word a number, and why: the text is part of a contract. A
#: record's warnings are strings in results.json; a Comparison's ``summary()``, repr and rows'
#: "change" column are its public API (and compare's JSON and CSV); a memory change's ``text()`` is
#: quoted by the gate's reasons, which analysis/gate decides and render/comparison words.
WORDING_IN_ANALYSIS = {"arraybench.analysis.aggregate", "arraybench.analysis.compare",
                       "arraybench.analysis.memory"}


def _number_formatters() -> set[str]:
    """The functions of ``units`` that turn a number into text."""
    import arraybench.units as units

    return {n for n in vars(units) if n.startswith("format_") or n == "time_unit"}


def _formatters_imported(tree: ast.AST, name: str, formatters: set[str]) -> set[str]:
    """The formatters of ``units`` that module ``name`` imports (or ``units`` itself, whole)."""
    package = name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
        target = ".".join(base + ([node.module] if node.module else []))
        if target == "arraybench.units":
            found |= {a.name for a in node.names if a.name in formatters}
        elif target == "arraybench":
            found |= {"units"} & {a.name for a in node.names}
    return found


def test_the_finder_of_imported_formatters_finds_one():
    formatters = {"format_seconds", "format_ratio"}
    assert _formatters_imported(ast.parse("from ..units import PAGE_BYTES, format_ratio"),
                                "arraybench.analysis.x", formatters) == {"format_ratio"}
    assert _formatters_imported(ast.parse("from .. import units"), "arraybench.analysis.x", formatters) == {"units"}
    assert not _formatters_imported(ast.parse("from .units import format_ratio"), "arraybench.analysis.x", formatters)


def test_analysis_returns_data_and_rendering_words_it():
    """analysis/ computes (who wins, crossovers, history's steps); render/ turns the numbers into
    sentences. Only the modules whose text is a contract (``WORDING_IN_ANALYSIS``) word a number."""
    formatters = _number_formatters()
    assert {"format_seconds", "format_ratio", "format_speedup", "format_interval"} <= formatters
    for name, path in _modules().items():
        if name.startswith("arraybench.analysis") and name not in WORDING_IN_ANALYSIS:
            found = _formatters_imported(_parsed(path), name, formatters)
            assert not found, f"{name} words numbers ({sorted(found)}): leave the sentence to render/"


#: A module a reader takes in at one sitting: past this, it holds more than one concept.
MAX_MODULE_LINES = 400


def test_no_module_is_longer_than_a_reader_takes_in_at_one_sitting():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}, f"split these along a seam (one concept per module): {long}"


#: The package's size. The goal is 25,000 lines; the line ceiling stands where the package is, so
#: that a feature that needs lines either deletes others or raises it in a commit that says why.
MAX_PACKAGE_LINES = 25_901
MAX_PACKAGE_MODULES = 160
MAX_FOLDER_MODULES = 15


def test_the_package_stays_within_its_budget():
    modules = _modules()
    lines = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in modules.values())
    assert len(modules) <= MAX_PACKAGE_MODULES and lines <= MAX_PACKAGE_LINES, (len(modules), lines)
    per_folder = Counter(path.parent.name for path in modules.values() if path.parent != PACKAGE)
    assert {f: n for f, n in per_folder.items() if n > MAX_FOLDER_MODULES} == {}


#: What the commands and the pytest plugin may import of arraybench: the public API (``api``, and
#: the package's public names), rendering, errors, and their own modules. Everything else they
#: need, the API offers, so that a notebook, a command and a pytest session get one behaviour.
#: What a command or the pytest plugin never imports: a run is planned and made only by the API
#: (``arraybench.run``, ``resume``, ``plan``, ``execute``), and what runs in a worker is the
#: executors'. They import the rest from its home: the API is no funnel of re-exported names.
BEYOND_THE_API = ("arraybench.lifecycle", "arraybench.worker")


def _beyond_the_api(name: str, found: set[str]) -> set[str]:
    """What ``name`` imports that a command or the plugin may not; and, for any other module, the
    commands (only ``python -m arraybench`` starts them)."""
    if name.startswith(("arraybench.commands", "arraybench.pytest")):
        return {m for m in found if any(m == p or m.startswith(p + ".") for p in BEYOND_THE_API)}
    if name == "arraybench.__main__":
        return set()
    return {m for m in found if m == "arraybench.commands" or m.startswith("arraybench.commands.")}


def test_the_boundary_finder_finds_an_internal_import():
    assert _beyond_the_api("arraybench.commands.run", {"arraybench.lifecycle"}) == {"arraybench.lifecycle"}
    assert _beyond_the_api("arraybench.pytest.suite", {"arraybench.worker.timer"}) == {"arraybench.worker.timer"}
    assert _beyond_the_api("arraybench.pytest.settings", {"arraybench.commands.run"}) == set()
    assert _beyond_the_api("arraybench.options", {"arraybench.commands.run"}) == {"arraybench.commands.run"}
    assert _beyond_the_api("arraybench.commands.run", {"arraybench", "arraybench.api", "arraybench.render.report",
                                                       "arraybench.model.journal", "arraybench.options",
                                                       "arraybench.lifecycles"}) == set()


def test_the_commands_and_the_plugin_run_only_through_the_api_and_nothing_imports_them():
    modules = _modules()
    beyond = {name: sorted(_beyond_the_api(name, imports(path, name, modules))) for name, path in modules.items()}
    assert {name: found for name, found in beyond.items() if found} == {}


def test_the_api_reexports_nothing_for_the_commands():
    """Every name ``arraybench.api`` imports, it uses itself or offers in ``__all__``."""
    tree = ast.parse((PACKAGE / "api.py").read_text(encoding="utf-8"))
    imported = {a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom)
                for a in node.names} - {"annotations"}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    exported = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets))
    assert sorted(imported - used - set(exported)) == []


def test_no_comment_or_page_points_at_an_issue_number():
    """The issues are not in the repository: "since issue 23" tells a reader nothing."""
    import re

    pattern = re.compile(r"\bissue #?\d+", re.IGNORECASE)
    pages = [*PACKAGE.rglob("*.py"), *(PACKAGE.parent / "docs").glob("*.md"), PACKAGE.parent / "README.md"]
    found = [f"{p.relative_to(PACKAGE.parent)}: {m.group(0)}" for p in pages if p.exists()
             for m in pattern.finditer(p.read_text(encoding="utf-8"))]
    assert not found, found


@functools.lru_cache(maxsize=None)
def _parsed(path: Path) -> ast.Module:
    """A source file's tree, parsed once for every test of this file that reads it."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _defined(path: Path) -> set[str] | None:
    """The names a module binds at top level (None where it builds them dynamically)."""
    tree = _parsed(path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" for a in node.names):
                return None
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            return None
    if "__getattr__" in names:
        return None
    return names


def missing_names(modules: dict[str, Path]) -> list[str]:
    """``from arraybench.x import name`` where x neither binds ``name`` nor has it as a submodule."""
    found = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(_parsed(path)):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target not in modules:
                continue
            defined = _defined(modules[target])
            for a in node.names:
                if defined is not None and a.name not in defined and f"{target}.{a.name}" not in modules:
                    found.append(f"{name} imports {a.name} from {target}")
    return found


def test_every_name_imported_from_the_package_is_defined_where_it_is_imported_from():
    # Read from the source, so modules whose library is not installed here (Ray, CuPy) are checked too.
    assert missing_names(_modules()) == []


def test_the_missing_name_finder_finds_one(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("X = 1\n")
    (tmp_path / "pkg" / "b.py").write_text("from .a import X, Y\n")
    modules = {"pkg.a": tmp_path / "pkg" / "a.py", "pkg.b": tmp_path / "pkg" / "b.py"}
    assert missing_names(modules) == ["pkg.b imports Y from pkg.a"]


def test_no_import_runs_up_the_floors_and_no_two_folders_import_each_other():
    # The figures docs/architecture.md quotes ("0 and 0"), from the script that gives them: a
    # module imported from a folder above its own (the sizes' syntax read from model/ by the
    # workloads) reads as 1 here before anyone reads the doc again.
    script = PACKAGE.parent / "benchmarks" / "import_layers.py"
    out = subprocess.run([sys.executable, str(script), str(PACKAGE.parent), "-v"],
                         capture_output=True, text=True, check=True).stdout
    assert "upward imports: 0\n" in out and "two-way folder pairs: 0 []" in out, out
