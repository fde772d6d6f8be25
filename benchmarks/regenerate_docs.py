"""Regenerate the example output the docs show, from runs made now, so that the docs match the tool.

Run from the repository root on a quiet machine (the default suite takes minutes)::

    python benchmarks/regenerate_docs.py                 # the default suite, as the docs show it
    python benchmarks/regenerate_docs.py --quick --root /tmp/docs-copy   # a small run, to try it

It makes four things, each written between markers in the docs
(``<!-- generated: NAME -->`` ... ``<!-- end: NAME -->``; text outside them is never touched):

- ``docs/example-cpu/`` and ``docs/example-cpu.md``: ``arraybench run`` of the default suite
  (``--no-store``), its findings and its table, with the machine and how long the run took;
- README.md's showcase table (three large cases of that run), its first findings and the line
  that says how long the default run takes;
- docs/pytest.md's session: a pytest session of one workload, saved, then a second one compared
  with it (``--arraybench-compare=last --arraybench-fail-above=10%``);
- docs/workloads.md's table: ``arraybench run`` of three of ``examples/``' workloads.

``--quick`` makes every run small (small sizes, NumPy only, two short processes): it checks that
the script works, not what the numbers are. ``--root`` is the folder holding README.md and docs/
(default: this repository); the runs write only there and in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The width the captured terminal output is printed at: wide enough for every column of a table.
COLUMNS = 100
#: README's showcase: these cases of the default run, in this order (those present).
SHOWCASE = ("matmul large", "gradient large", "fft large")
#: How many findings README quotes (the rest are in docs/example-cpu.md).
README_FINDINGS = 4
QUICK = ["--sizes", "small", "--backends", "numpy", "--processes", "2", "--max-time", "0.1",
         "--min-samples", "3"]
EXAMPLES = ["softmax_cross_entropy.py", "kmeans.py", "mlp.py"]

PYTEST_FILE = '''import arraybench


@arraybench.workload(sizes=[100_000])
def softplus(xp, x):
    return xp.log1p(xp.exp(x))


def test_softplus(arraybench_run):
    assert arraybench_run(softplus).clean
'''


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with what lies between the markers of ``name`` replaced by ``body``;
    ``ValueError`` when the markers are not there exactly once."""
    start, end = f"<!-- generated: {name} -->", f"<!-- end: {name} -->"
    pattern = re.compile(re.escape(start) + r"\n.*?" + re.escape(end), re.S)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"the markers of {name!r} are not in the file exactly once")
    return pattern.sub(lambda _: f"{start}\n{body.rstrip()}\n{end}", text)


def _write_block(path: Path, name: str, body: str) -> None:
    path.write_text(replace_block(path.read_text(encoding="utf-8"), name, body), encoding="utf-8")
    print(f"regenerated {name} in {path}")


def _plain(text: str) -> str:
    """Captured terminal output without the spaces rich pads its lines with."""
    return "\n".join(line.rstrip() for line in text.splitlines())


def _env() -> dict[str, str]:
    env = {**os.environ, "COLUMNS": str(COLUMNS), "NO_COLOR": "1", "ARRAYBENCH_CONFIG": ""}
    env.pop("FORCE_COLOR", None)
    return env


def _arraybench(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "arraybench", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True)
    if done.returncode not in (0, 1):  # 1: some cell failed or was wrong, which the docs show too
        sys.exit(f"arraybench {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done, time.monotonic() - started


def _machine(results: dict) -> str:
    env = results["environment"]
    libs = env.get("libraries", {})
    names = {"numpy": "NumPy", "torch": "PyTorch", "jax": "JAX", "cupy": "CuPy"}
    versions = ", ".join(f"{label} {libs[k]}" for k, label in names.items() if libs.get(k))
    gpus = "; ".join(g.get("name", "") for g in env.get("gpus", [])) or "no GPU"
    return (f"{env.get('cpu_model', 'an unknown CPU')} with {env.get('cpu_count', '?')} cores, "
            f"{gpus} (Python {env.get('python', '?')}, {versions})")


def _table_rows(markdown: str, cases: tuple[str, ...]) -> list[str]:
    """The Markdown table rows of ``cases`` (README's columns: no rel. error, no note marks)."""
    lines = [ln for ln in markdown.splitlines() if ln.startswith("|")]
    header, rule, body = lines[0], lines[1], lines[2:]
    names = [c.strip() for c in header.strip("|").split("|")]
    keep = [i for i, n in enumerate(names) if n != "rel. error"]

    def cut(line: str) -> str:
        cells = line.strip().strip("|").split("|")
        cells = [re.sub(r"\s*\\\[[\d,]+\\\]", "", cells[i]).strip() for i in keep]
        if all(re.fullmatch(r":?-+:?", c) for c in cells):  # the rule under the header
            return "|" + "|".join(cells) + "|"
        return "| " + " | ".join(cells) + " |"

    groups: dict[str, list[str]] = {}
    current = None
    for line in body:
        first = line.strip().strip("|").split("|")[0].strip()
        if first:
            current = " ".join(first.split()[:2])  # "matmul large (n = 2,000)" -> "matmul large"
        groups.setdefault(current or "", []).append(cut(line))
    chosen = [c for c in cases if c in groups] or list(groups)[:3]
    return [cut(header), cut(rule)] + [row for c in chosen for row in groups[c]]


def example_run(root: Path, quick: bool) -> float:
    """The default suite into docs/example-cpu; docs/example-cpu.md and README's blocks from it."""
    out = root / "docs" / "example-cpu"
    args = ["run", "--output-dir", str(out), "--overwrite", "--no-store", *(QUICK if quick else [])]
    done, seconds = _arraybench(*args, cwd=root)
    results = json.loads((out / "results.json").read_text())
    findings = (out / "findings.md").read_text(encoding="utf-8").strip()
    table = (out / "results.md").read_text(encoding="utf-8")
    table = table[table.index("| case"):].strip() if "| case" in table else table.strip()
    command = "python main.py --output-dir docs/example-cpu --no-store" + (" " + " ".join(QUICK) if quick else "")
    _write_block(root / "docs" / "example-cpu.md", "example-cpu", "\n".join([
        f"`{command}` on {_machine(results)}. It took {seconds:.0f} s. Every file it wrote is in "
        "[`docs/example-cpu/`](example-cpu/) (`report.html` is the whole run on one page, "
        "`journal.jsonl` every measurement as it was made).", "",
        "## What the run found, in its own words (`findings.md`)", "", findings, "",
        "## The table (`results.md`)", "", table]))
    readme = root / "README.md"
    _write_block(readme, "readme-table", "\n".join(_table_rows(table, SHOWCASE)))
    first = [ln for ln in findings.splitlines() if ln.startswith("- ")][:README_FINDINGS]
    _write_block(readme, "readme-findings", "\n".join(first))
    _write_block(readme, "readme-duration",
                 f"The default suite took {seconds / 60:.1f} minutes on that machine "
                 f"({seconds:.0f} s, every cell in 3 to 6 processes); `--fast` gives each cell two short processes.")
    return seconds


def pytest_session(root: Path, quick: bool) -> None:
    """Two pytest sessions of one workload: the first saved, the second compared and gated."""
    with tempfile.TemporaryDirectory(prefix="arraybench-docs-") as tmp:
        folder = Path(tmp)
        (folder / "test_bench.py").write_text(PYTEST_FILE)
        store = folder / "store.sqlite"
        common = ["--arraybench-backends=numpy", f"--arraybench-store={store}", "-p", "no:cacheprovider"]
        if quick:
            common += ["--arraybench-processes=2", "--arraybench-max-time=0.1"]
        shown = ["--arraybench-backends=numpy", "--arraybench-compare=last", "--arraybench-fail-above=10%"]
        for extra in (["--arraybench-save"], ["--arraybench-compare=last", "--arraybench-fail-above=10%"]):
            done = subprocess.run([sys.executable, "-m", "pytest", "test_bench.py", *common, *extra],
                                  cwd=folder, env=_env(), capture_output=True, text=True)
        text = done.stdout.replace(str(store), "results.sqlite").replace(str(folder), "tests/bench")
        lines = [ln for ln in _plain(text).splitlines() if ln.strip() and "test session starts" not in ln
                 and not ln.startswith(("platform ", "rootdir", "plugins", "collected", "cachedir"))]
        body = "\n".join([f"$ pytest tests/bench {' '.join(shown)}", *lines, "$ echo $?",
                          str(done.returncode)])
    _write_block(root / "docs" / "pytest.md", "pytest-session",
                 f"```text\n{body}\n```\n\n(Two sessions of this test on the same code, the first "
                 "stored with `--arraybench-save`: what a gate shows when nothing changed.)")


def workloads_run(root: Path, quick: bool) -> None:
    """Three of examples/' workloads, as docs/workloads.md shows them."""
    with tempfile.TemporaryDirectory(prefix="arraybench-docs-") as tmp:
        files = [a for name in EXAMPLES for a in ("--workload-file", str(REPO / "examples" / name))]
        out = Path(tmp) / "out"
        done, _ = _arraybench("run", *files, "--sizes", "small", "--devices", "cpu", "--no-store",
                              "--no-plots", "--output-dir", str(out), *(QUICK[2:] if quick else []),
                              cwd=root)
        machine = _machine(json.loads((out / "results.json").read_text()))
    table = _plain(done.stdout.split("results: ")[0]).rstrip()
    _write_block(root / "docs" / "workloads.md", "workloads-table",
                 f"```text\n{table}\n```\n\n(On {machine}, float64, default settings.)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO,
                        help="the folder holding README.md and docs/ (default: this repository)")
    parser.add_argument("--quick", action="store_true",
                        help="small runs, to check the script (the numbers mean nothing)")
    parser.add_argument("--only", choices=("example", "pytest", "workloads"), action="append",
                        help="regenerate only this part (repeatable; default: all)")
    args = parser.parse_args(argv)
    parts = args.only or ["example", "pytest", "workloads"]
    if args.root != REPO and not (args.root / "README.md").is_file():
        shutil.copytree(REPO / "docs", args.root / "docs", dirs_exist_ok=True)
        shutil.copy2(REPO / "README.md", args.root / "README.md")
    if "example" in parts:
        example_run(args.root, args.quick)
    if "pytest" in parts:
        pytest_session(args.root, args.quick)
    if "workloads" in parts:
        workloads_run(args.root, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
