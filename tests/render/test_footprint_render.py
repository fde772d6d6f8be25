"""Peak memory and energy per call in the HTML report, the Markdown, the CSV and the DataFrame:
each row shows its peak (beside the output, a caching allocator's reserve apart) and every record
without an energy figure has its reason said, never a blank."""

from __future__ import annotations

import csv
import html
import io
import re

import pandas as pd
import pytest

from arraybench.analysis.aggregate import aggregate
from arraybench.render.findings import findings
from arraybench.model.cell import Cell
from arraybench.render.files import csv_text
from arraybench.render.html import render_html
from arraybench.render.report import markdown_report
from arraybench.worker import footprint

from ..analysis.test_memory import MB, peaked
from ..conftest import backend_or_skip
from ..synthetic import results

RESERVE_NOTE = ("PyTorch's caching allocator: max_memory_allocated over one call less what was "
                "allocated before; 67108864 bytes reserved at most")


def _row_text(page: str, key: str) -> str:
    """The visible text of the table row of record ``key``."""
    row = re.search(rf"<tr[^>]*data-key='{re.escape(html.escape(key, quote=True))}'>(.*?)</tr>", page, re.S)
    assert row is not None, key
    return html.unescape(re.sub(r"<[^>]+>", " ", row.group(1)))


def _two_libraries():
    torch = peaked("torch", [21 * MB] * 2, output=10 * MB, note=RESERVE_NOTE)
    jax = peaked("jax", [48 * MB] * 2)
    return torch, jax


def test_html_rows_show_peak_memory_beside_the_output_and_the_reserve_apart():
    torch, jax = _two_libraries()
    page = render_html(results([torch, jax]))
    assert ">peak memory</th>" in page
    row = " ".join(_row_text(page, torch.key).split())
    assert "21 MB 2.1× the output 67.1 MB reserved by the caching allocator" in row
    assert "48 MB" in _row_text(page, jax.key)
    # no record measured energy: no column of dashes, but why, for every library
    assert ">energy</th>" not in page
    assert "Energy per call not measured for PyTorch CPU, JAX CPU: RAPL not readable: no intel-rapl zone." in page
    # the finding is in the page when findings are given
    assert "JAX CPU needs 2.3× the memory of PyTorch CPU" in render_html(
        results([torch, jax]), findings=findings([torch, jax]))


def test_html_energy_column_gives_each_missing_figure_its_reason():
    torch, jax = _two_libraries()
    torch.energy_j, torch.energy_note = 0.0123, "CPU package energy from RAPL, the machine's idle draw included"
    jax.energy_note = ""  # a record written before energy was measured keeps no reason of its own
    page = render_html(results([torch, jax]))
    assert ">energy</th>" in page
    assert "12.3 mJ" in _row_text(page, torch.key)
    assert "energy not measured (results written before arraybench measured it)" in _row_text(page, jax.key)


def test_markdown_has_a_peak_memory_column_and_says_why_energy_is_missing():
    torch, jax = _two_libraries()
    text = markdown_report(results([torch, jax]))
    head = next(line for line in text.splitlines() if line.startswith("| case"))
    assert "| peak mem |" in head and "energy" not in head
    row = next(line for line in text.splitlines() if "PyTorch CPU" in line and line.startswith("|"))
    assert "21 MB (2.1× the output) (67.1 MB reserved by the caching allocator)" in row
    assert "- Energy per call not measured for PyTorch CPU, JAX CPU: RAPL not readable: no intel-rapl zone." in text


_MEASURE_IN_A_FRESH_PROCESS = """
import json, sys
sys.path.insert(0, {tests!r})
from arraybench import workload
from arraybench.backends import load
from arraybench.model.cell import Cell
from arraybench.model.replicate import TimerSettings
from arraybench.worker.prepare import ReferenceCache
from measuring import measure_cell
wl = workload(name="peak_export_16mb", sizes={{"small": 8}})(
    lambda xp, x: x + xp.ones(2 * 10**6)[: x.shape[0]] - 1)
cell = Cell(wl.name, "small", 8, "numpy", "cpu", "float64", "latency")
settings = TimerSettings(min_samples=1, max_samples=2, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)
print(json.dumps(measure_cell(load("numpy")("cpu"), wl, cell, settings, ReferenceCache()).to_dict()))
"""


def test_csv_and_dataframe_carry_a_real_peak():
    """A real NumPy call holding a 16 MB temporary: its record's peak reaches the CSV and the DataFrame.
    Measured in a fresh process, as a worker measures it: a test process's heap holds whatever
    earlier tests left free in it, which a call may reuse without touching a new page."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from arraybench.model.replicate import Replicate

    if footprint.host_peak(lambda: None).value is None:
        pytest.skip("the host's resident high-water mark cannot be reset here")
    backend_or_skip("numpy")
    code = _MEASURE_IN_A_FRESH_PROCESS.format(tests=str(Path(__file__).parent.parent))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rep = Replicate.from_dict(json.loads(done.stdout.strip().splitlines()[-1]))
    assert rep.status == "ok", rep.reason
    cell = Cell("peak_export_16mb", "small", 8, "numpy", "cpu", "float64", "latency")
    rec = aggregate(cell, [rep], 1, rel_ci=1.0)
    assert rec.peak_bytes is not None and rec.peak_bytes >= 16 * MB - 2**20, rec.peak_note
    res = results([rec])
    (row,) = csv.DictReader(io.StringIO(csv_text(res)))
    assert int(row["peak_bytes"]) == rec.peak_bytes and row["peak_note"] == rec.peak_note
    assert int(row["output_bytes"]) == rec.output_bytes == 64  # 8 float64
    assert row["energy_note"] == rec.energy_note != ""  # measured, or why not: never blank
    df = res.to_dataframe()
    assert df.loc[0, "peak_bytes"] == rec.peak_bytes
    assert df.loc[0, "output_bytes"] == 64
    energy = df.loc[0, "energy_j"]
    assert pd.isna(energy) if rec.energy_j is None else energy == pytest.approx(rec.energy_j)
