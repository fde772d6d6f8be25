"""How the package's folders import each other: imports running up the layers, folders importing
each other both ways, modules and lines, modules over 400 lines (the figures of docs/architecture.md).

    python benchmarks/import_layers.py .            # this checkout
    python benchmarks/import_layers.py OTHER -v     # another checkout, listing each upward import
"""
import ast, sys
from pathlib import Path
root = Path(sys.argv[1]) / "arraybench"
# Lower layers first: a module may import its own layer or lower ones. The order is the code's
# own direction: backends never import workloads (workloads take their library's Backend), the
# model is made of workloads' params and backends' names, and analysis reads only the model, so
# the executors and the store, which run and keep a run, sit above it.
LAYERS = ["numeric", "errors", "units", "files", "backends", "workloads", "model", "host", "analysis",
          "worker", "executors", "store", "render", "TOP", "commands", "pytest"]
def folder(mod):
    # ``python -m arraybench`` is the command line: __main__ must lie at the top, but it is
    # the commands' entry point (commands/main), not a module of the run.
    if mod == "arraybench.__main__": return "commands"
    parts = mod.split(".")
    if len(parts) > 2 and (root / parts[1]).is_dir(): return parts[1]
    if len(parts) == 2 and (root / parts[1]).is_dir(): return parts[1]
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "TOP"
def mods():
    out = {}
    for p in root.rglob("*.py"):
        parts = p.relative_to(root.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out
M = mods(); edges = set()
for name, p in M.items():
    pkg = name if p.name == "__init__.py" else name.rpartition(".")[0]
    for n in ast.walk(ast.parse(p.read_text())):
        if isinstance(n, ast.ImportFrom):
            if n.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (n.level - 1)]
                t = ".".join(base + ([n.module] if n.module else []))
            else: t = n.module or ""
            subs = [f"{t}.{a.name}" for a in n.names if f"{t}.{a.name}" in M]
            # ``from .. import backends`` imports the backends package; the root package it is
            # named through imports nothing (its public names load lazily), so it is no upward edge.
            targets = subs if subs and t == root.name else [t] + subs
        elif isinstance(n, ast.Import): targets = [a.name for a in n.names]
        else: continue
        for t in targets:
            if t in M and t != name: edges.add((name, t))
pairs = set(); up = []
for a, b in edges:
    fa, fb = folder(a), folder(b)
    if fa == fb: continue
    pairs.add((fa, fb))
    ia = LAYERS.index(fa) if fa in LAYERS else LAYERS.index("TOP")
    ib = LAYERS.index(fb) if fb in LAYERS else LAYERS.index("TOP")
    if ib > ia: up.append((a, b))
two = sorted({tuple(sorted(p)) for p in pairs if (p[1], p[0]) in pairs})
n_lines = sum(len(p.read_text().splitlines()) for p in M.values())
big = sorted(((len(p.read_text().splitlines()), n) for n, p in M.items()), reverse=True)
print(f"modules {len(M)}, lines {n_lines}, over 400: {[(n, k) for k, n in big if k > 400]}")
print(f"upward imports: {len(up)}"); [print("  ", a, "->", b) for a, b in sorted(up)] if "-v" in sys.argv else None
print(f"two-way folder pairs: {len(two)} {two}")
