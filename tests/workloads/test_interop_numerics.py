"""Construction, conversion and transfer workloads; reductions; the numerical agreement table."""

from __future__ import annotations

import numpy as np
import pytest

from arraybench.model.record import Summary
from arraybench.render.files import numerics_markdown, numerics_table
from arraybench.workloads import GROUPS, REGISTRY, expand

from ..conftest import backend_or_skip
from .test_workloads import run


@pytest.mark.parametrize("backend_name", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("workload", GROUPS["interop"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_interop_workloads_give_the_exact_values_in_the_run_dtype(backend_name, workload, dtype):
    backend = backend_or_skip(backend_name)
    shard = run(backend, workload, dtype)
    assert shard.status == "ok", shard.reason
    assert shard.max_rel_error == 0.0
    assert shard.bytes > 0 and shard.flops == 0  # read as GB/s


def test_torch_from_numpy_shares_memory_on_the_cpu_and_copy_does_not():
    backend = backend_or_skip("torch")
    host = np.arange(5.0)
    shared = backend.from_numpy(host)
    copied = backend.copy_from_numpy(host)
    host[0] = 42.0
    assert float(shared[0]) == 42.0
    assert float(copied[0]) == 0.0


def test_from_list_builds_the_requested_dtype():
    for name in ("numpy", "torch", "jax"):
        backend = backend_or_skip(name)
        x = backend.from_list([0.5, 1.5], "float32")
        assert backend.dtype_name(x) == "float32"


@pytest.mark.parametrize("backend_name", ["numpy", "torch", "jax"])
def test_stats_matches_numpy_semantics(backend_name):
    backend = backend_or_skip(backend_name)
    shard = run(backend, "stats", "float64")
    assert shard.status == "ok", shard.reason
    assert shard.output_names == ["mean", "std"]
    assert all(e < 1e-12 for e in shard.output_errors)


def test_torch_std_default_would_be_caught():
    backend = backend_or_skip("torch")
    from arraybench.worker.prepare import ReferenceCache
    from ..measuring import measure_cell
    from arraybench.model.cell import Cell
    from arraybench.workloads import Workload

    from .test_workloads import QUICK

    stats = REGISTRY["stats"]
    naive = Workload(name="naive_stats", fn=stats.fn, inputs=stats.inputs, sizes={"small": 100},
                     reference=stats.reference, check=stats.check, namespace="native")
    cell = Cell("naive_stats", "small", 100, "torch", "cpu", "float64", "latency")
    shard = measure_cell(backend, naive, cell, QUICK, ReferenceCache())
    # torch.std's default is ddof=1: std is off by a factor sqrt(n/(n-1)), a relative 0.5%.
    assert shard.status == "wrong"
    assert shard.output_errors[1] == pytest.approx(np.sqrt(100 / 99) - 1, rel=1e-3)


def test_groups_expand_in_order_without_repeats():
    assert expand(["seed"]) == list(GROUPS["seed"])
    assert expand(["transfer", "interop"]) == ["from_numpy", "to_numpy", "from_list", "copy_from_numpy"]
    assert expand(["matmul", "seed"])[0] == "matmul"


def _rec(backend, err, status="ok", method="eager", tol=1e-15, outputs=None, dtype="float64"):
    r = Summary("gradient", "small", 100, backend, "cpu", dtype, "latency", status,
               max_rel_error=err, tolerance=tol, method=method)
    if outputs:
        r.output_names, r.output_errors = list(outputs), [err] * len(outputs)
    return r


def test_numerics_table_puts_each_error_in_its_library_column():
    records = [
        _rec("numpy", 6e-8, method="finite differences (forward)", tol=1.5e-6),
        _rec("torch", 0.0),
        _rec("jax", 3e-13, status="wrong"),
    ]
    md = numerics_markdown(records)
    header, _sep, row = md.splitlines()[:3]
    cols = [c.strip() for c in header.strip("|").split("|")]
    vals = [c.strip() for c in row.strip("|").split("|")]
    table = dict(zip(cols, vals))
    assert table["NumPy CPU"] == "6.0e-08†"  # its own, looser tolerance, marked
    assert table["PyTorch CPU"] == "0.0e+00"
    assert table["JAX CPU"] == "3.0e-13 ✗"
    assert table["tolerance"] == "1.0e-15"
    assert numerics_table(records).row_count == 1


def test_numerics_table_has_a_row_per_named_output():
    md = numerics_markdown([_rec("numpy", 1e-16, outputs=("mean", "std"))])
    assert "| mean |" in md and "| std |" in md
