"""One ratio reads the same wherever it is shown: the table, the findings, a comparison, a plot."""

from __future__ import annotations

import pytest

from arraybench.analysis.compare import compare
from arraybench.render.findings import winners
from arraybench.render.comparison import DisplayedComparison
from arraybench.render.plots import case_figure
from arraybench.render.notes import speedup_text
from arraybench.units import format_change, format_ratio, format_speedup
from tests.synthetic import record, results, spread


@pytest.mark.parametrize("factor", [1.5, 3.8, 22.0])  # from 10% on: smaller changes are a share in a comparison
def test_one_ratio_reads_the_same_in_table_findings_compare_and_plots(factor: float):
    numpy = record("matmul", "numpy", samples=spread(3e-3))
    torch = record("matmul", "torch", samples=spread(3e-3 / factor, width=0.001))
    words = format_speedup(factor)
    assert words == f"{format_ratio(factor)} faster"

    assert speedup_text(torch, numpy) == words
    (sentence,) = winners([numpy, torch])
    assert f"{words} than NumPy CPU" in sentence
    # The same cell, run again ``factor`` times faster: the comparison's change column.
    table = DisplayedComparison.of(compare(results([numpy]), results([record("matmul", "numpy",
                                                                              samples=spread(3e-3 / factor))]))).table()
    assert words in table
    figure = case_figure([numpy, torch])
    labels = [t.get_text() for ax in figure.axes for t in ax.texts]
    assert any(f"{words} than NumPy" in label for label in labels), labels


def test_a_ratio_keeps_its_hundredths_below_two_and_its_direction_below_one():
    assert format_ratio(1.5) == "1.50×" and format_ratio(1.014) == "1.01×"
    assert format_ratio(3.84) == "3.8×" and format_ratio(9.97) == "10×" and format_ratio(1258) == "1,258×"
    assert format_speedup(1 / 16) == "16× slower" and format_speedup(1.28) == "1.28× faster"
    assert format_change(1.05) == "5.0% slower" and format_change(0.95) == "5.0% faster"
    assert format_change(0.5) == "2.0× faster" and format_change(3.0) == "3.0× slower"
    assert format_change(1.0) == "same" and format_change(0.0) == "—"
