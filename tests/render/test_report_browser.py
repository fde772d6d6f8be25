"""report.html in a real headless Chromium: it loads cleanly, loads nothing else, every plot renders.

Uses Debian's ``chromium`` (``apt-get install chromium``; .ci/run installs it) or the executable in
$ARRAYBENCH_CHROMIUM. Set $ARRAYBENCH_SCREENSHOT_DIR to keep the screenshots.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from arraybench import load_results
from arraybench.render.html import render_html
from arraybench.render.plots import write_plots
from arraybench.render.notes import unavailable

from ..chromium import Chromium, find_chromium
from ..synthetic import record, results, spread

EXE = find_chromium()
pytestmark = pytest.mark.skipif(
    EXE is None, reason="Chromium not found (Debian: apt-get install chromium; or set ARRAYBENCH_CHROMIUM)")

PLOTS_JS = """JSON.stringify([...document.querySelectorAll('figure.plot svg')].map(s => {
  const box = s.getBoundingClientRect();
  const inner = s.querySelector('g').getBBox();
  return {name: s.closest('figure').dataset.plot, width: box.width, height: box.height,
          innerWidth: inner.width, innerHeight: inner.height,
          texts: s.querySelectorAll('text').length, bars: s.querySelectorAll('path').length};
}))"""


@pytest.fixture(scope="module")
def browser():
    with Chromium(EXE) as b:
        yield b


def keep(path: Path) -> None:
    target = os.environ.get("ARRAYBENCH_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)


def test_the_report_of_a_real_run_loads_cleanly_and_every_plot_renders(real_run, browser, tmp_path):
    import json

    page = browser.open(real_run.out / "report.html")
    assert page.errors() == []
    # Nothing but the page itself was requested: it works offline and leaks nothing.
    assert page.requests() == [(real_run.out / "report.html").resolve().as_uri()]
    assert page.evaluate("performance.getEntriesByType('resource').length") == 0
    plots = json.loads(page.evaluate(PLOTS_JS))
    on_disk = sorted(p.name for p in real_run.out.glob("*.svg"))
    assert sorted(p["name"] for p in plots) == on_disk and len(on_disk) == 3
    for p in plots:
        assert p["width"] > 300 and p["height"] > 150, p
        assert p["innerWidth"] > 100 and p["innerHeight"] > 100, p
        assert p["texts"] > 5 and p["bars"] > 5, p
    res = load_results(real_run.out / "results.json")
    expected_rows = len(unavailable(res.records)[1])
    assert page.evaluate("document.querySelectorAll('table.records tr[data-key]').length") == expected_rows
    assert page.evaluate("document.title").startswith("arraybench")

    shot = page.screenshot(tmp_path / "report.png")
    keep(shot)
    from PIL import Image

    with Image.open(shot) as im:
        assert im.width == 1280 and im.height > 1500
        colours = {c for _, c in im.convert("RGB").getcolors(maxcolors=1 << 20)}
    # The bars' colours are on screen: NumPy's blue, and PyTorch's orange where it ran.
    assert (0x4C, 0x72, 0xB0) in colours
    if any(r.backend == "torch" and r.status == "ok" for r in res.records):
        assert (0xDD, 0x84, 0x52) in colours


def test_hostile_strings_stay_text_in_the_browser(browser, tmp_path):
    evil = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    res = results([record(evil, "numpy", samples=spread(1e-3), warnings=[evil]),
                   record(evil, "torch", status="failed", reason=evil)], cpu_model=evil)
    path = tmp_path / "report.html"
    path.write_text(render_html(res, plots=write_plots(res.records, tmp_path), findings=[evil]))
    page = browser.open(path)
    assert page.errors() == []
    # One script: the page's own sorting, allowed by its hash (it ran: the headers are buttons).
    assert page.evaluate("document.scripts.length") == 1
    assert "sortBy" in page.evaluate("document.scripts[0].textContent")
    assert page.evaluate("document.querySelectorAll('th button.sort').length") > 0
    assert page.evaluate("document.images.length") == 0
    assert page.evaluate("document.body.innerText").count(evil) >= 4


def test_a_load_the_policy_blocks_is_reported_as_an_error(browser, tmp_path):
    # The negative control: the page's policy refuses network loads, and the test would see one.
    page_text = render_html(results([record("matmul", "numpy", samples=spread(1e-3))]))
    path = tmp_path / "tampered.html"
    path.write_text(page_text.replace("</main>", "<img src='http://127.0.0.1:9/x.png'></main>"))
    page = browser.open(path)
    errors = page.errors()
    assert errors and any("Content Security Policy" in e or "127.0.0.1" in e for e in errors), errors


def test_a_report_with_history_and_machines_loads_cleanly_with_every_plot(browser, tmp_path):
    """A merged report (two machines) with a History section: no errors, every plot drawn."""
    import copy

    from arraybench.analysis.history import history
    from arraybench.model.runs import merge
    from arraybench.render.report import write_report
    from arraybench.store import open_store

    from ..synthetic import timed_run

    with open_store(tmp_path / "s.sqlite") as store:
        for day, torch_s in ((1, 2e-3), (2, 2.01e-3), (3, 2.5e-3)):
            store.add(timed_run(day, torch_s=torch_s, torch="2.5.0" if day < 3 else "2.6.0"))
        entries, runs = store.entries()
    found = history(entries, runs)
    assert len(found.steps) == 1
    merged = merge([timed_run(3), copy.deepcopy(timed_run(3, host="host-b", numpy_s=5e-4))], ["a", "b"])
    out = tmp_path / "report"
    written = write_report(merged, out, history=found)
    page = browser.open(out / "report.html")
    assert page.errors() == []
    plots = json.loads(page.evaluate(PLOTS_JS))
    names = sorted(p["name"] for p in plots)
    assert "history_matmul.svg" in names and names == sorted(p.name for p in written if p.suffix == ".svg")
    assert all(p["width"] > 300 and p["innerHeight"] > 100 for p in plots), plots
    text = page.evaluate("document.body.innerText")
    assert "History" in text and "torch 2.5.0 → 2.6.0" in text and "machine" in text
    keep(page.screenshot(tmp_path / "history-report.png"))


# -- tables that fit, a page for phones, dark mode, sorting ---------------------------------
FIT_JS = """JSON.stringify([...document.querySelectorAll('table.records')].map(t => ({
  table: t.scrollWidth, box: t.parentElement.clientWidth, boxScroll: t.parentElement.scrollWidth,
  right: Math.max(...[...t.tHead.rows[0].cells].map(c => c.getBoundingClientRect().right)),
  columns: t.tHead.rows[0].cells.length})))"""


@pytest.fixture(scope="module")
def example_report(tmp_path_factory):
    """report.html of a real default run's results (docs/example-cpu: 30 rows, every column)."""
    from arraybench.render.report import write_report

    from ..conftest import ROOT

    out = tmp_path_factory.mktemp("example")
    write_report(load_results(ROOT / "docs" / "example-cpu" / "results.json"), out)
    return out / "report.html"


def test_at_1400_px_every_table_fits_its_box(browser, example_report, tmp_path):
    page = browser.open(example_report, width=1400)
    assert page.errors() == []
    tables = json.loads(page.evaluate(FIT_JS))
    assert len(tables) == 5
    for t in tables:
        # Nothing is cut or hidden in a scrolled-away part: every column is in view.
        assert t["table"] <= t["box"] and t["boxScroll"] <= t["box"], t
        assert t["right"] <= 1400, t
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    keep(page.screenshot(tmp_path / "report-1400.png"))


def test_on_a_phone_tables_scroll_in_their_own_box_and_the_page_does_not(browser, example_report, tmp_path):
    page = browser.open(example_report, width=390, height=844)
    assert page.errors() == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    tables = json.loads(page.evaluate(FIT_JS))
    for t in tables:
        assert t["box"] <= 390 and t["boxScroll"] > t["box"], t  # wider than a phone: it scrolls inside
        box = page.evaluate("getComputedStyle(document.querySelector('.scroll')).overflowX")
        assert box == "auto"
    keep(page.screenshot(tmp_path / "report-390.png"))


def test_dark_mode_follows_the_reader_system(browser, example_report, tmp_path):
    page = browser.open(example_report, width=1400)
    light = page.evaluate("getComputedStyle(document.body).backgroundColor")
    browser.send("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
                 session=page.session)
    dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
    text = page.evaluate("getComputedStyle(document.body).color")
    assert light == "rgb(255, 255, 255)"
    r, g, b = map(int, re.findall(r"\d+", dark)[:3])
    tr, tg, tb = map(int, re.findall(r"\d+", text)[:3])
    assert max(r, g, b) < 40 and min(tr, tg, tb) > 180, (dark, text)
    # The plots keep the white they were drawn on.
    assert page.evaluate("getComputedStyle(document.querySelector('figure.plot')).backgroundColor") == light
    keep(page.screenshot(tmp_path / "report-dark.png"))


ORDER_JS = """JSON.stringify([...document.querySelectorAll('#workload-0 tbody')].map(body =>
  [...body.rows].map(r => [r.dataset.key, r.cells[0].tagName, Number(r.querySelector('td.num').dataset.v)])))"""


def test_a_table_sorts_by_a_column_within_each_size_and_back(browser, example_report):
    page = browser.open(example_report, width=1400)
    before = json.loads(page.evaluate(ORDER_JS))
    click = "document.querySelector('#workload-0 thead th:nth-child(3) button.sort').click()"
    assert page.evaluate("document.querySelector('#workload-0 thead th:nth-child(3)').textContent") == "median"
    page.evaluate(click)
    up = json.loads(page.evaluate(ORDER_JS))
    page.evaluate(click)
    down = json.loads(page.evaluate(ORDER_JS))
    assert page.errors() == []
    for b, u, d in zip(before, up, down):
        rows = sorted((x[0], x[2]) for x in b)
        assert rows == sorted((x[0], x[2]) for x in u) == sorted((x[0], x[2]) for x in d)  # rows kept
        assert [x[2] for x in u] == sorted(x[2] for x in b)
        assert [x[2] for x in d] == sorted((x[2] for x in b), reverse=True)
        # The size's header cell moves with the group: always the first row's first cell.
        assert [x[1] for x in u][0] == "TH" and all(x[1] == "TD" for x in u[1:])
    assert before != up or before != down
    assert page.evaluate("document.querySelector('#workload-0 thead th:nth-child(3)').getAttribute('aria-sort')") \
        == "descending"
