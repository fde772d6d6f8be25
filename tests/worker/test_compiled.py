"""Compiled mode: every compiled record is compiled code, with its own compile time."""

from __future__ import annotations

import pytest

import arraybench
from arraybench import backends

#: One more cell than Dynamo's recompile limit (8 per code object): with one code object for all
#: cells, the ninth and later ran eager under the name "compiled".
SIZES = [8 + i for i in range(9)]


def test_every_cell_of_one_torch_worker_is_compiled():
    """One worker (one process) compiles nine cells; each is torch.compile's, none is eager.

    An eager elementwise call of ~10 elements takes microseconds, and that is what the cells past the
    limit showed as their compile time (0.0-0.3 ms); Dynamo tracing and Inductor's code take far more
    even when Inductor's on-disk cache has the kernel.
    """
    if backends.SPECS["torch"].preflight("cpu"):
        pytest.skip("torch is not installed")
    res = arraybench.run("elementwise", backends="torch", devices="cpu", sizes=SIZES, modes="compiled",
                         processes=1, max_time=0.05, min_samples=3, store=False, plots=False)
    records = res.select(backend="torch", mode="compiled")
    assert sorted(r.size for r in records) == SIZES
    for r in records:
        assert r.status == "ok", (r.size, r.reason)
        assert r.method == "torch.compile"
        assert r.compile_s is not None and r.compile_s > 5e-3, (r.size, r.compile_s, r.first_call_s)

