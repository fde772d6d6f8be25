"""Compiled mode: every compiled record is compiled code, with its own compile time."""

from __future__ import annotations

import pytest

import arraybench
from arraybench import backends

#: Two more cells than Dynamo's recompile limit (8 per code object). With one code object for all
#: cells, the ninth ran eager after Dynamo's 7-14 ms of hitting the limit, and the tenth ran eager
#: at once: a "compile time" of 0.1-0.2 ms.
SIZES = [8 + i for i in range(10)]


# torch.compile in a real worker.
pytestmark = pytest.mark.slow


def test_every_cell_of_one_torch_worker_is_compiled():
    """One worker (one process) compiles ten cells; each is torch.compile's, none is eager.

    Today a cell that compiled nothing is skipped and one that hits the recompile limit fails; the
    compile time catches the old silent fall back too: Dynamo's tracing takes milliseconds even
    when Inductor's on-disk cache has the kernel, an eager call of ~10 elements microseconds.
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



def test_inductor_cache_hits_are_named_in_the_compile_notes():
    """Torch's own counters, as a compile served by Inductor's FX graph cache leaves them (a real
    cold-then-cached compile takes 10-20 s on this machine: too slow for the suite)."""
    if backends.SPECS["torch"].preflight("cpu"):
        pytest.skip("torch is not installed")
    from torch._dynamo.utils import counters

    backend = backends.load("torch")("cpu")
    counters.clear()
    counters["stats"]["unique_graphs"] += 1
    assert backend.compile_notes() == []  # compiled, no cache: nothing to say
    counters["inductor"]["fxgraph_cache_hit"] += 1
    counters["aot_autograd"]["autograd_cache_hit"] += 1
    (note,) = backend.compile_notes()
    assert "first call was served from a disk cache (2 hit(s)" in note
    counters["inductor"]["fxgraph_cache_miss"] += 1
    (note,) = backend.compile_notes()
    assert "partly served from a disk cache" in note and "1 graph(s) compiled" in note
    counters.clear()
