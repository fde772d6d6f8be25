"""References computed once per run: what one worker writes, the next reads, and only its own."""

from __future__ import annotations

import os

import numpy as np

from arraybench.model.cell import Cell
from arraybench.worker.references import ReferenceCache, SharedReferences, digest
from arraybench.workloads import REGISTRY
from arraybench.workloads.check import Noise
from arraybench.workloads.inputs import Inputs, make_inputs
from arraybench.workloads.reference import Reference


def test_a_reference_and_its_noise_read_back_as_written(tmp_path):
    shared = SharedReferences(str(tmp_path))
    one = Reference(np.arange(6.0).reshape(2, 3), 0.0, "", np.arange(6.0).reshape(2, 3) + 1e-16)
    shared.put("reference", "a", one)
    back = shared.load("reference", "a")[1]
    assert np.array_equal(back.value, one.value) and np.array_equal(back.plain, one.plain)
    several = Reference((np.ones(3), np.zeros(2)), 1e-9, "finite differences")
    shared.put("reference", "b", several)
    back = shared.load("reference", "b")[1]
    assert isinstance(back.value, tuple) and len(back.value) == 2 and back.error == 1e-9 and back.plain is None
    shared.put("reference", "c", Reference(2.5))
    assert shared.load("reference", "c")[1].value == 2.5
    shared.put("reference", "d", Reference(["not", "arrays"]))  # kept by no file: each worker computes its own
    assert shared.load("reference", "d") == (False, None) and not list(tmp_path.glob("d*"))
    shared.put("noise", "a", (Noise(1.0, 2.0, "inputs", 6, True, 12.5), Noise(3.0, 4.0)))
    assert shared.load("noise", "a") == (True, (Noise(1.0, 2.0, "inputs", 6, True, 12.5), Noise(3.0, 4.0)))
    shared.put("noise", "n", None)
    assert shared.load("noise", "n") == (True, None) and shared.load("noise", "missing") == (False, None)


def test_the_name_changes_with_the_inputs_not_only_the_cell():
    key = ("sum", 10, "float64", "")
    assert digest(key, (np.ones(10),)) == digest(key, (np.ones(10),))
    assert digest(key, (np.ones(10),)) != digest(key, (np.ones(10) * 2,))
    assert digest(key, (np.ones(10),)) != digest(("sum", 11, "float64", ""), (np.ones(10),))


def test_a_second_worker_reads_the_reference_the_first_computed(tmp_path):
    wl = REGISTRY["matmul"]
    cell = Cell("matmul", "small", 64, "numpy", "cpu", "float64", "latency")
    inputs = make_inputs(wl, cell.size, cell.dtype, 0, {}).arrays
    first = ReferenceCache(str(tmp_path)).reference(wl, cell.size, cell.dtype, inputs)
    assert len(list(tmp_path.glob("*.npys"))) == 1
    # The file is what the second reads: planted, it is what the second gets.
    [path] = tmp_path.glob("*.npys")
    name = path.name[:-len(".reference.npys")]
    SharedReferences(str(tmp_path)).put("reference", name, Reference(first.value * 0 + 7.0))
    second = ReferenceCache(str(tmp_path)).reference(wl, cell.size, cell.dtype, inputs)
    assert np.all(second.value == 7.0)


def test_a_killed_runs_references_go_at_the_next_start(tmp_path):
    import subprocess
    import sys

    from arraybench.executors.local import REFERENCES_PREFIX
    from arraybench.host.environments import remove_stale_folders

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"{REFERENCES_PREFIX}{gone.stdout.strip()}-abc123"
    alive = tmp_path / f"{REFERENCES_PREFIX}{os.getpid()}-def456"
    for folder in (dead, alive):
        folder.mkdir()
        (folder / "x.npys").write_bytes(b"")
    assert remove_stale_folders(str(tmp_path), prefix=REFERENCES_PREFIX) == [str(dead)]
    assert alive.is_dir() and not dead.exists()


def test_large_inputs_that_differ_anywhere_name_another_file():
    """Inputs of a megabyte or more are folded before hashing (much faster than hashing every
    byte); one word changed, two blocks swapped or a byte past the last whole word still tell."""
    key = ("matmul", 512, "float64", "")
    a = np.random.default_rng(1).standard_normal((512, 512))  # 2 MiB: 64 blocks of 4,096 words
    same = digest(key, (a, a.copy()))
    assert digest(key, (a.copy(), a.copy())) == same
    one_ulp = a.copy()
    one_ulp[-1, -1] = np.nextafter(one_ulp[-1, -1], 0)
    swapped = np.concatenate([a.reshape(-1)[4096:8192], a.reshape(-1)[:4096], a.reshape(-1)[8192:]]).reshape(a.shape)
    assert len({same, digest(key, (a, one_ulp)), digest(key, (a, swapped))}) == 3
    tail = np.zeros((1 << 20) + 3, dtype=np.uint8)
    changed = tail.copy()
    changed[-1] = 1
    assert digest(key, (tail,)) != digest(key, (changed,))


def test_a_second_worker_reads_the_inputs_the_first_built(tmp_path):
    """The file is what the second worker gets: planted, its numbers are the ones it measures."""
    wl = REGISTRY["matmul"]
    first = ReferenceCache(str(tmp_path)).inputs(wl, 64, "float64", 0, {})
    assert all(np.array_equal(a, b) for a, b in zip(first.arrays, make_inputs(wl, 64, "float64", 0, {}).arrays))
    [path] = tmp_path.glob("*.inputs.npys")
    name = path.name[:-len(".inputs.npys")]
    planted = Inputs(tuple(np.full_like(a, 3.0) for a in first.arrays), first.fixed)
    SharedReferences(str(tmp_path)).put("inputs", name, planted)
    second = ReferenceCache(str(tmp_path)).inputs(wl, 64, "float64", 0, {})
    assert all(np.all(a == 3.0) and a.flags.writeable and a.flags.c_contiguous for a in second.arrays)
    # Another seed, size or dtype is another file.
    ReferenceCache(str(tmp_path)).inputs(wl, 64, "float64", 1, {})
    ReferenceCache(str(tmp_path)).inputs(wl, 64, "float32", 0, {})
    assert len(list(tmp_path.glob("*.inputs.npys"))) == 3


def test_inputs_too_large_to_keep_are_built_in_each_worker(tmp_path, monkeypatch):
    from arraybench.worker import references

    monkeypatch.setattr(references, "SHARED_INPUT_BYTES", 1000)
    built = ReferenceCache(str(tmp_path)).inputs(REGISTRY["matmul"], 64, "float64", 0, {})
    assert built.arrays[0].nbytes > 1000 and not list(tmp_path.glob("*.inputs.npys"))
