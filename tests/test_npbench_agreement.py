"""benchmarks/npbench_agreement.py reads NPBench from a checkout the user names: without one it says
in one line how to get one and exits non-zero; with one (a tiny folder in NPBench's layout here) its
loader finds the settings, the data and the kernels."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "npbench_agreement.py"


@pytest.fixture
def agreement(monkeypatch) -> ModuleType:
    """The script as a module, with a loader of its own (its state is per process)."""
    monkeypatch.delenv("ARRAYBENCH_NPBENCH", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "loader", raising=False)
    spec = importlib.util.spec_from_file_location("npbench_agreement", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("loader", None)


def _checkout(root: Path) -> Path:
    """Two benchmarks in NPBench's layout: ``scale`` with a JAX kernel, ``nojax`` without one."""
    for short, module, jax in (("scale", "scale_it", True), ("nojax", "plain_only", False)):
        bench = {"short_name": short, "relative_path": f"micro/{module}", "module_name": module,
                 "func_name": "kernel", "parameters": {"S": {"N": 4}},
                 "init": {"func_name": "initialize", "input_args": ["N"], "output_args": ["alpha", "A"]},
                 "input_args": ["alpha", "A"], "array_args": ["A"], "output_args": ["A"]}
        (root / "bench_info").mkdir(parents=True, exist_ok=True)
        (root / "bench_info" / f"{module}.json").write_text(json.dumps({"benchmark": bench}))
        code = root / "npbench" / "benchmarks" / "micro" / module
        code.mkdir(parents=True)
        (code / f"{module}.py").write_text(
            "import numpy as np\n\ndef initialize(N):\n    return 2.0, np.arange(N, dtype=np.float64)\n")
        (code / f"{module}_numpy.py").write_text("def kernel(alpha, A):\n    A *= alpha\n")
        if jax:
            (code / f"{module}_jax.py").write_text("def kernel(alpha, A):\n    return A * alpha\n")
    return root


@pytest.mark.parametrize("named", [None, "not-a-checkout"])
def test_without_a_checkout_it_says_how_to_get_one_in_one_line(agreement, named, tmp_path, capsys):
    argv = [] if named is None else ["--npbench", str(tmp_path / named)]
    assert agreement.main(argv) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1
    assert "git clone https://github.com/spcl/npbench" in out.err and "--npbench DIR" in out.err


def test_the_loader_reads_a_checkout_in_npbench_layout(agreement, tmp_path, monkeypatch):
    loader = agreement.loader
    root = _checkout(tmp_path / "npbench")
    monkeypatch.setenv("ARRAYBENCH_NPBENCH", str(root))
    assert loader.locate() == root.resolve()  # the variable, where no folder is given
    loader.use(root)
    assert loader.names() == ["scale"]  # only benchmarks with a JAX kernel
    data = loader.data("scale")
    assert data["N"] == 4 and data["alpha"] == 2.0
    assert loader.scalar_args("scale") == ["alpha"]
    assert np.array_equal(loader.implementation("scale", "jax")(data["alpha"], data["A"]), [0, 2, 4, 6])
    assert agreement.changed_by_numpy("scale", "S") == ("A",)
    source = agreement.workload_source(["scale"], "S", root)
    compile(source, "npbench_workloads.py", "exec")
    assert f"loader.use({str(root)!r})" in source  # workers read the same checkout
    with pytest.raises(KeyError, match="no benchmark"):
        loader.info("absent")
