"""First contact: a results table that fits its terminal, notes said once, "vs NumPy"
with its direction, one form for the interval, and an ``arraybench list`` that a workload with
many settings does not squeeze.

The widths are set here, never read from the terminal that runs the tests.
"""

from __future__ import annotations

import re
import shutil

import pytest
from rich.cells import cell_len
from rich.console import Console

from arraybench import load_results
from arraybench.render.tables import print_catalog
from arraybench.render.report import markdown_table
from arraybench.render.notes import speedup_text
from arraybench.render.tables import table_text

from ..conftest import ROOT, run_cli, run_here
from ..synthetic import record, results, spread

EXAMPLE = ROOT / "docs" / "example-cpu"  # a real default run's results (30 rows measured, 2 cores)
# Characters that draw the table, not words.
_BOX = re.compile(r"[\u2500-\u257f│┃]+")


def words(text: str) -> set[str]:
    return {w for line in text.splitlines() for w in _BOX.sub(" ", line).split()}


def table_part(text: str) -> str:
    """The rows of the table: from its top border to its bottom border."""
    lines = text.splitlines()
    top = next(i for i, ln in enumerate(lines) if ln.startswith("┏"))
    bottom = next(i for i, ln in enumerate(lines) if ln.startswith("└"))
    return "\n".join(lines[top:bottom + 1])


def column(text: str, name: str) -> list[str]:
    """The cells of one column of the table (its rows, not its header)."""
    lines = table_part(text).splitlines()
    header = [c.strip() for c in re.split(r"[┃│]", lines[1])]
    at = header.index(name)
    return [re.split(r"[│]", ln)[at].strip() for ln in lines[3:] if ln.startswith("│")]


@pytest.fixture(scope="module")
def example():
    return load_results(EXAMPLE / "results.json")


def header_text(table: str) -> str:
    """The header's lines, joined: a narrow table may wrap a header ("library /" over "device")."""
    lines = table.splitlines()
    end = next(i for i, ln in enumerate(lines) if ln.startswith("┡"))
    return " ".join(lines[1:end])


def test_at_80_columns_no_line_is_wider_and_no_word_is_split(example):
    narrow = table_text(example.records, width=80)
    wide = table_text(example.records, width=200)
    assert max(cell_len(ln) for ln in narrow.splitlines()) <= 80
    # Every word in the narrow table is a whole word of the wide one: "PyTor ch", "statu s" or
    # "skipp ed" would be two words the wide table does not have.
    assert words(table_part(narrow)) <= words(table_part(wide)), words(table_part(narrow)) - words(table_part(wide))
    assert "…" not in table_part(narrow)
    for name in ("NumPy CPU", "PyTorch CPU", "JAX CPU", "elementwise", "n = 1,000,000", "status"):
        assert name in narrow
    # Columns went by priority (the lowest first: peak memory, first call, relative error, then the
    # interval), the case, median, verdict and status never; a line says which and how to see them.
    header = header_text(table_part(narrow))
    for kept in ("case", "median", "vs NumPy", "status"):
        assert kept in header
    assert "first call" not in header and "rel. error" not in header
    hidden = re.search(r"Hidden to fit 80 columns: (.*?)\. A terminal (\d+) columns", " ".join(narrow.split()))
    order = ["peak mem", "first call", "rel. error", "95% CI"]
    assert hidden and hidden.group(1) in [", ".join(order[:k]) for k in range(3, 5)]
    assert ("95% CI" in header) == ("95% CI" not in hidden.group(1))
    # The width it names shows every column.
    at_that = table_text(example.records, width=int(hidden.group(2)))
    assert "Hidden" not in at_that and "first call" in at_that and "rel. error" in at_that


def test_a_wide_terminal_gets_the_full_table(example):
    wide = table_text(example.records, width=160)
    header = table_part(wide).splitlines()[1]
    for name in ("case", "library / device", "median", "95% CI", "vs NumPy", "first call", "rel. error", "status"):
        assert name in header
    assert "Hidden" not in wide
    assert max(cell_len(ln) for ln in wide.splitlines()) <= 160


@pytest.mark.slow
def test_the_report_command_fits_the_columns_it_is_given(tmp_path):
    # The real command on a real run's results: $COLUMNS sets the width (in this process), and
    # through a pipe with no $COLUMNS (a fresh interpreter: pytest's terminal stays out) it is 80.
    folder = tmp_path / "run"
    shutil.copytree(EXAMPLE, folder)
    done = run_here("report", str(folder), "--no-plots", "--no-store", cwd=tmp_path, env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    # A path is one word: whole on its line (to copy or click), never split, wherever it ends.
    lines = [ln for ln in done.stdout.splitlines() if not ln.startswith(("open /", "wrote "))]
    assert max(cell_len(ln) for ln in lines) <= 80, [ln for ln in lines if cell_len(ln) > 80]
    assert "Hidden to fit 80 columns" in done.stdout
    piped = run_cli("report", str(folder), "--no-plots", "--no-store", cwd=tmp_path, env={"COLUMNS": None})
    assert max(cell_len(ln) for ln in piped.stdout.splitlines()
               if not ln.startswith(("open /", "wrote "))) <= 80  # a pipe, as in CI: 80 columns
    wide = run_here("report", str(folder), "--no-plots", "--no-store", cwd=tmp_path, env={"COLUMNS": "200"})
    assert "first call" in wide.stdout and "Hidden" not in wide.stdout


def test_vs_numpy_says_which_way():
    base = record("matmul", "numpy", samples=spread(1e-3))
    assert speedup_text(base, base) == "baseline"
    assert speedup_text(record("matmul", "torch", samples=spread(1e-3 / 3.8)), base) == "3.8× faster"
    assert speedup_text(record("matmul", "jax", samples=spread(16e-3)), base) == "16× slower"
    assert speedup_text(record("matmul", "jax", samples=spread(1.28e-3)), base) == "1.28× slower"
    assert speedup_text(record("matmul", "torch", samples=spread(1e-3 / 1258)), base) == "1,258× faster"
    assert speedup_text(record("matmul", "torch", status="failed", reason="x"), base) == "—"


def test_the_interval_column_has_one_form_and_says_which(example):
    text = table_text(example.records, width=160)
    cis = column(text, "95% CI")
    # One form each: ± for a symmetric interval, both ends for a lopsided one, or undecided for
    # one wider than a factor of 2 either way.
    assert cis and all(re.fullmatch(r"±\d+\.\d%|-\d+/\+\d+%|undecided", c) for c in cis), cis
    assert "95% CI: ± half the width" in " ".join(text.split())


def _busy_run():
    """30 rows, as a default run on a busy machine writes them: the machine busy in every row,
    one process each, intervals over the target for different reasons, some bimodal."""
    recs = []
    for w, workload in enumerate(("elementwise", "matmul", "gradient", "fft", "sort")):
        for s, (label, n) in enumerate((("small", 1000), ("large", 1_000_000))):
            for b, backend in enumerate(("numpy", "torch", "jax")):
                i = w * 6 + s * 3 + b
                warnings = []
                if i % 4 == 0:
                    warnings.append(f"bimodal: samples cluster at {1 + i / 10:.3g} ms and {2 + i / 7:.3g} ms "
                                    f"(minor page faults per call: {100 * i + 7:,} in the slow processes, "
                                    f"{i + 3} in the fast ones)")
                if i % 5 == 1:
                    warnings.append(f"processes disagree: their medians span {10 + i}% (2.{i} ms to 3.{i} ms)")
                warnings.append(f"measured while the machine was busy: other processes used {0.5 + i / 20:.1f} "
                                f"of 2 cores, load average {2 + i / 10:.1f}")
                why = (f"too few samples ({9 + i % 3}) in the time budget, each call takes {100 + i} ms; "
                       "raise --max-time for a tighter interval" if s else
                       f"{3 + i % 4} processes on a noisy machine; no more processes because its time "
                       "budget (--max-time) was spent")
                warnings.append(f"95% CI of the median is ±{2.5 + i / 3:.1f}%, above the ±2% target: {why}")
                warnings.append("one process: the interval cannot include the variation between processes")
                if i == 29:
                    recs.append(record(workload, backend, size_label=label, size=n, status="failed",
                                       reason="worker crashed: SIGSEGV"))
                    continue
                recs.append(record(workload, backend, size_label=label, size=n,
                                   samples=spread(1e-3 * (1 + b), width=0.05), warnings=warnings))
    return results(recs)


def test_a_busy_default_run_prints_at_most_12_notes_each_said_once():
    res = _busy_run()
    assert len(res.records) == 30 and sum(len(r.warnings) for r in res.records) > 100
    text = table_text(res.records, width=120)
    notes = [ln for ln in text.splitlines() if re.match(r"\[\d+\] |• ", ln)]
    assert 0 < len(notes) <= 12, notes
    # The machine-wide conditions are said once, above the others, with no mark on any row.
    flat = " ".join(text.split())
    assert flat.count("measured while the machine was busy") == 1
    assert flat.count("one process: the interval cannot include") == 1
    assert re.search(r"All measured rows: • measured while the machine was busy: other processes used "
                     r"0\.5–1\.9 of 2 cores, load average 2\.0–4\.8 •", flat), flat[-3000:]
    # A note for many rows names them; the crashed row has its own reason.
    assert "worker crashed: SIGSEGV (sort large: JAX CPU)" in flat
    assert re.search(r"raise --max-time for a tighter interval \(elementwise large \(all\); matmul large \(all\)", flat)
    # Every mark a row carries is a note under the table.
    marks = {int(n) for refs in re.findall(r"\b(?:ok|failed) \[([\d,]+)\]", table_part(text))
             for n in refs.split(",")}
    numbered = {int(n) for n in re.findall(r"^\[(\d+)\] ", text, re.M)}
    assert marks and marks == numbered
    # The Markdown says the same notes.
    md = "\n".join(markdown_table(res.records))
    md_notes = [ln for ln in md.splitlines() if re.match(r"\d+\. |- All (measured )?rows: ", ln)]
    assert len(md_notes) == len(notes)


def test_a_case_with_two_libraries_shows_its_n_and_its_settings():
    recs = [record("stencil", b, size_label="small", size=200, samples=spread(1e-3),
                   params={"tsteps": 20}) for b in ("numpy", "torch")]
    text = table_text(recs, width=120)
    rows = table_part(text).splitlines()[3:5]
    assert rows[0].split("│")[1].strip() == "stencil"
    assert "small" in rows[1] and "n = 200, tsteps = 20" in text
    one = table_text(recs[:1], width=120)
    assert "stencil" in one and "small" in one and "n = 200, tsteps = 20" in one


WORKLOAD_FILE = '''
import arraybench

@arraybench.workload(
    sizes={"small": 64, "large": 256},
    inputs=lambda n, rng: (rng.standard_normal((n, n)),),
    params={"tsteps": 20, "alpha": 1.5, "beta": 1.2, "gamma": 0.75, "relaxation": 0.125,
            "boundary": "periodic", "scheme": "red-black"},
    description="a stencil with many settings",
)
def heat_stencil_with_settings(xp, A, *, tsteps, alpha, beta, gamma, relaxation, boundary, scheme):
    return A * alpha
'''


@pytest.fixture(scope="module")
def many_settings(tmp_path_factory):
    """The catalog with a workload of seven settings (loaded once: a name is defined once)."""
    from arraybench.commands.info import catalog

    source = tmp_path_factory.mktemp("many") / "many.py"
    source.write_text(WORKLOAD_FILE)
    entries, errors = catalog([str(source)])
    assert errors == []
    return entries


@pytest.mark.parametrize("width", [80, 120])
def test_list_with_a_workload_of_many_settings_keeps_every_column_readable(many_settings, tmp_path, width):
    console = Console(width=width, record=True, color_system=None, file=open(tmp_path / "out", "w"))
    print_catalog(many_settings, console)
    text = console.export_text()
    lines = text.splitlines()
    assert max(cell_len(ln) for ln in lines) <= width
    bottom = next(ln for ln in lines if ln.startswith("└"))
    assert bottom.endswith("┘")  # the last column is whole, not cut at the edge
    widths = [len(part) for part in bottom[1:-1].split("┴")]
    assert min(widths) >= 10, widths  # no column squeezed to nothing
    # The names are whole; the settings wrap in their own column, under each size.
    for e in many_settings:
        assert e["name"] in text
    assert text.count("tsteps=20,") == 2
    header = " ".join(ln for ln in lines[:lines.index(next(ln for ln in lines if ln.startswith("┡")))])
    assert ("work per call" in header) == (width >= 100)
    if width < 100:
        assert "The work per call (FLOP and bytes) shows at 100 columns" in " ".join(text.split())
    matmul = next(ln for ln in lines if ln.startswith("│matmul"))
    assert "C = A @ B" in matmul


def test_the_html_tables_say_the_same_notes_once():
    from arraybench.render.html import render_html

    page = render_html(_busy_run())
    # Each workload's table: the conditions of every measured row in one paragraph, unnumbered.
    assert page.count("<p class='notes all'>All measured rows: measured while the machine was busy") == 1
    assert page.count("<p class='notes all'>All rows: measured while the machine was busy") == 4
    first = page[page.index("id='workload-0'"):page.index("id='workload-1'")]
    refs = re.findall(r"href='#workload-0-note-(\d+)'", first)
    notes = re.findall(r"<li value='(\d+)' id='workload-0-note-\1'", first)
    assert refs and set(refs) == set(notes) and len(notes) <= 3
    assert "(large (all))" in first  # the rows a note covers, by size within the workload's table


def test_numbers_that_differ_become_ranges_and_other_texts_stay_apart():
    from arraybench.render.notes import NoteBook, Row, merge_numbers, note_texts

    assert merge_numbers(["used 0.9 of 2 cores", "used 1.9 of 2 cores", "used 1.2 of 2 cores"]) \
        == "used 0.9–1.9 of 2 cores"
    assert merge_numbers(["1,365 faults", "124 faults"]) == "124–1,365 faults"
    book = NoteBook()
    rows = [Row("sort small", lib) for lib in ("NumPy CPU", "PyTorch CPU", "JAX CPU")]
    book.add(1, rows[0], ["bimodal: samples cluster at 1 ms and 2 ms", "compiled on first call"])
    book.add(2, rows[1], ["bimodal: samples cluster at 3 ms and 5 ms"])
    book.add(3, rows[2], [])
    texts = note_texts(book)
    assert [(t.number, t.text) for t in texts] == [
        (1, "bimodal: samples cluster at 1–3 ms and 2–5 ms (sort small: NumPy CPU, PyTorch CPU)"),
        (2, "compiled on first call (sort small: NumPy CPU)")]
    assert book.refs(1) == [1, 2] and book.refs(2) == [1] and book.refs(3) == [] and book.ranged


def test_the_interval_legend_names_the_target_the_run_was_measured_to():
    # A pytest session's cells are measured to ±5%, a run's to ±2% unless told: the legend under
    # every table says the run's own, and no number where the records come without their run.
    from arraybench.render.html import results_table_html
    from arraybench.render.report import markdown_report, table

    res = results([record(samples=spread(1e-3), replicates=3), record(backend="torch", samples=spread(2e-3),
                                                                       replicates=3)])
    res.settings["rel_ci"] = 0.05
    assert "(the same measure as the ±5% target)" in table(res, width=160)
    assert "(the same measure as the ±5% target)" in markdown_report(res)
    assert "(the same measure as the ±5% target)" in results_table_html(res)
    res.settings["rel_ci"] = 0.02
    assert "(the same measure as the ±2% target)" in table(res, width=160)
    assert "(the same measure as the run's interval target)" in table_text(res.records, width=160)
