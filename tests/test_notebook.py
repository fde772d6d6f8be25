"""arraybench in a real Jupyter notebook: a workload defined in a cell, run, displayed, plotted.

The notebook runs in a real IPython kernel (nbclient), as a user's would: the workload exists only
in the kernel's memory, so it reaches the worker processes by value, and an error in it is reported
at the cell's own line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook test needs nbformat (the test extra)")
nbclient = pytest.importorskip("nbclient", reason="the notebook test needs nbclient (the test extra)")
pytest.importorskip("ipykernel", reason="the notebook test needs ipykernel (the test extra)")

# A real Jupyter kernel.
pytestmark = pytest.mark.slow

CELLS = [
    "import arraybench",
    # The workload exists only in this cell: no file a worker could import.
    '''@arraybench.workload(sizes={"small": 2_000})
def cell_softplus(xp, x):
    return xp.log1p(xp.exp(x))

@arraybench.workload(sizes={"small": 16})
def cell_broken(xp, x):
    return xp.not_a_function(x)  # the user's own line''',
    '''results = arraybench.run(workloads=[cell_softplus, cell_broken], backends=["numpy", "torch"],
                         devices=["cpu"], processes=1, max_time=0.05, min_samples=3)
results''',
    "print([(r.workload, r.backend, r.status) for r in results.records])",
    "print([r.reason for r in results.records if r.status != 'ok'][0])",
    'fig = results.plot("case", workload="cell_softplus", size="small")\nfig',
    # A comparison and the findings display as a table and sentences, not a dump.
    "results.compare(results)",
    "results.findings()",
    # progress=False: nothing but the result (the run above showed its progress by default).
    'quiet = arraybench.run(workloads=[cell_softplus], backends="numpy", devices="cpu", processes=1,\n'
    '                       max_time=0.05, min_samples=3, progress=False, store=False)\n'
    "len(quiet.records)",
]


def _text(output) -> str:
    if output.output_type == "stream":
        return output.text
    return output.get("data", {}).get("text/plain", "")


def test_a_workload_defined_in_a_notebook_cell_runs_and_displays(tmp_path: Path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [cell.outputs for cell in nb.cells]
    assert all(o.output_type != "error" for cell in outputs for o in cell), outputs

    # The run showed its progress in the cell, one line updated in place, ending "done".
    progress = [o for o in outputs[2] if o.output_type == "display_data"]
    assert len(progress) == 1, outputs[2]
    assert progress[0]["data"]["text/plain"].startswith("arraybench done: ")
    assert "<progress" in progress[0]["data"]["text/html"]
    shown = next(o for o in outputs[2] if o.output_type == "execute_result")  # the HTML table
    html = shown["data"]["text/html"]
    assert "<table" in html and "cell_softplus" in html and "PyTorch CPU" in html
    assert "cell_softplus" in shown["data"]["text/plain"]  # and text where HTML cannot show

    statuses = _text(outputs[3][0])
    assert "('cell_softplus', 'numpy', 'ok')" in statuses
    assert "('cell_softplus', 'torch', 'ok')" in statuses
    assert "('cell_broken', 'numpy', 'failed')" in statuses

    reason = _text(outputs[4][0])
    # The error names the cell's own line, as it does for a workload in a file.
    assert "xp.not_a_function(x)  # the user's own line" in reason
    assert "AttributeError" in reason

    figure = outputs[5][-1]
    assert "image/png" in figure["data"] or "image/svg+xml" in figure["data"], figure["data"].keys()

    (comparison,) = outputs[6]  # a short table, and one line where HTML cannot show
    assert "<table" in comparison["data"]["text/html"] and "cell_softplus" in comparison["data"]["text/html"]
    plain = comparison["data"]["text/plain"]
    assert plain.startswith("<arraybench Comparison of ") and len(plain) < 300, plain
    (found,) = outputs[7]  # sentences: a bulleted list, and one sentence a line
    assert found["data"]["text/html"].startswith("<ul")
    assert found["data"]["text/plain"].startswith("- ")
    assert [o.output_type for o in outputs[8]] == ["execute_result"]  # progress=False: silent
    assert outputs[8][0]["data"]["text/plain"] == "1"
