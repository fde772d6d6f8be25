"""Compiled mode: every compiled record is compiled code, with its own compile time."""

from __future__ import annotations

import pytest

from arraybench import backends
from arraybench.model.cell import Cell
from arraybench.model.replicate import TimerSettings
from arraybench.workloads import REGISTRY

from ..conftest import backend_or_skip
from ..measuring import measure_cell, shared_references

#: Two more cells than Dynamo's recompile limit (8 per code object). With one code object for all
#: cells, the ninth ran eager after Dynamo's 7-14 ms of hitting the limit, and the tenth ran eager
#: at once: a "compile time" of 0.1-0.2 ms.
SIZES = [8 + i for i in range(10)]


# torch.compile's first compile in a process imports Dynamo and Inductor (seconds).
pytestmark = pytest.mark.slow


# Torch's own deprecation inside torch.compile, which a worker used to print where pytest never saw it.
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_every_cell_of_one_torch_process_is_compiled():
    """One process compiles ten cells; each is torch.compile's, none is eager.

    Today a cell that compiled nothing is skipped and one that hits the recompile limit fails; the
    compile time catches the old silent fall back too: Dynamo's tracing takes milliseconds even
    when Inductor's on-disk cache has the kernel, an eager call of ~10 elements microseconds.
    Measured in this process as a worker measures its cells one after another (the limit is
    Dynamo's, per process and code object, and the backend's compile gives each cell its own):
    a worker's start would add an interpreter, PyTorch's import and a first compile of its own.
    """
    backend = backend_or_skip("torch")
    wl = REGISTRY["elementwise"]
    for n in SIZES:
        rep = measure_cell(backend, wl, Cell("elementwise", str(n), n, "torch", "cpu", "float64", "compiled"),
                           TimerSettings(mode="latency", min_samples=3, budget_s=0.01), shared_references())
        assert rep.status == "ok", (n, rep.reason)
        assert rep.method == "torch.compile"
        # A record's compile time: the first call over the fastest later call.
        assert rep.first_call_s - min(rep.samples_s) > 5e-3, (n, rep.first_call_s, min(rep.samples_s))


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
