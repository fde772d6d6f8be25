"""The HTML report: one self-contained page (plots inlined, no scripts, no network) per run.

``report.html`` opens from disk in any browser and can be mailed or attached as one file. It holds
the findings, a table per workload with every record, every plot, the cells that were not measured
and why, and the environment. Every string that comes from data is escaped; a Content-Security-Policy
forbids the page from loading anything, so it cannot reach the network even by accident.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ..analysis.grouping import baselines, grouped, is_valid, size_text, winner
from ..analysis.rates import achieved
from ..analysis.roofline import Ceiling
from ..analysis.roofline import ceilings as ceilings_of_run
from ..analysis.roofline import share as share_of_ceiling
from ..files import write_atomic
from ..model.record import Record
from .usage_text import kernel_rows, usage_lines, usage_title
from ..units import format_seconds
from .naming import plot_file_name, summary_file_name
from .tables import (Notes, achieved_text, ci_text, config_name, error_text, library_text,
                     speedup_text, unavailable_configs)

if TYPE_CHECKING:
    from ..analysis.history import History
    from ..model.results import Results

REPORT_NAME = "report.html"

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def e(value: Any) -> str:
    """Escape any value for HTML text or an attribute."""
    return html.escape(str(value), quote=True)


def write_html(results: Results, out_dir: Path, *, plots: Sequence[Path] = (),
               findings: Sequence[str] | None = None, history: "History | None" = None) -> Path:
    """Write ``out_dir/report.html`` and return its path (see ``render_html``)."""
    return write_atomic(Path(out_dir) / REPORT_NAME,
                        render_html(results, plots=plots, findings=findings, history=history))


def render_html(results: Results, *, plots: Sequence[Path] = (),
                findings: Sequence[str] | None = None, history: "History | None" = None) -> str:
    """The report as one HTML document.

    ``plots`` are SVG files to inline (those of ``write_plots``; each case plot goes with its
    workload, the summaries together, any other at the end). ``findings`` are plain sentences.
    """
    findings = list(findings or [])
    svgs = _read_plots(plots)
    used: set[str] = set()
    records = results.records
    unavailable = unavailable_configs(records)
    shown = [r for r in records if (r.backend, r.device) not in unavailable]
    ceilings = ceilings_of_run(results.records)
    columns = _Columns(
        achieved=any(achieved(r) != (None, None) for r in shown),
        share=any(share_of_ceiling(r, ceilings) is not None for r in shown),
        machine=any(r.machine for r in shown),
    )
    by_workload: dict[str, list[tuple[str, list[Record]]]] = {}
    for (workload, label), group in grouped(shown).items():
        by_workload.setdefault(workload, []).append((label, group))

    body: list[str] = [_header(results)]
    toc = [("findings", "Findings")] if findings else []
    sections: list[str] = []
    if findings:
        sections.append(_section("findings", "Findings",
                                 "<ul class='findings'>" + "".join(f"<li>{e(f)}</li>" for f in findings)
                                 + "</ul>"))
    summary_names = [summary_file_name(label) for label in dict.fromkeys(r.size_label for r in shown)]
    summary = [(n, svgs[n]) for n in summary_names if n in svgs]
    if summary:
        used.update(n for n, _ in summary)
        toc.append(("summary", "Summary"))
        sections.append(_section("summary", "Summary", _figures(summary, wide=True)))
    for i, (workload, sizes) in enumerate(by_workload.items()):
        anchor = f"workload-{i}"
        toc.append((anchor, workload))
        figs = []
        for label, _group in sizes:
            name = plot_file_name(workload, label)
            if name in svgs:
                used.add(name)
                figs.append((name, svgs[name]))
        content = _workload_table(anchor, sizes, ceilings, columns) + _figures(figs)
        sections.append(_section(anchor, workload, content))
    if history is not None:
        from .history import history_section_html
        from .naming import history_file_name

        used.update(history_file_name(w) for w in {s.workload for s in history.series})
        toc.append(("history", "History"))
        sections.append(_section("history", "History", history_section_html(history, svgs)))
    others = [(n, t) for n, t in svgs.items() if n not in used]
    if others:
        toc.append(("more-plots", "More plots"))
        sections.append(_section("more-plots", "More plots", _figures(others)))
    toc.append(("not-measured", "Not measured"))
    sections.append(_section("not-measured", "Not measured, failed or wrong",
                             _not_measured(records, unavailable)))
    toc.append(("environment", "Environment"))
    sections.append(_section("environment", "Environment and settings", _environment(results)))
    body.append("<nav aria-label='contents'>" + " · ".join(
        f"<a href='#{e(a)}'>{e(t)}</a>" for a, t in toc) + "</nav>")
    body.extend(sections)
    body.append(_footer(results))
    title = f"arraybench — {results.environment.get('cpu_model', '')}"
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f"<meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">\n"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        f"<title>{e(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n<main>\n"
        + "\n".join(body) + "\n</main>\n</body>\n</html>\n"
    )


def results_table_html(results: Results) -> str:
    """The results tables as an HTML fragment, for Jupyter (``Results._repr_html_``).

    Its style is scoped to the fragment so that it leaves the notebook's own look alone.
    """
    records = results.records
    unavailable = unavailable_configs(records)
    shown = [r for r in records if (r.backend, r.device) not in unavailable]
    ceilings = ceilings_of_run(records)
    columns = _Columns(
        achieved=any(achieved(r) != (None, None) for r in shown),
        share=any(share_of_ceiling(r, ceilings) is not None for r in shown),
    )
    by_workload: dict[str, list[tuple[str, list[Record]]]] = {}
    for (workload, label), group in grouped(shown).items():
        by_workload.setdefault(workload, []).append((label, group))
    parts = [f"<div class='arraybench'><style>{_FRAGMENT_STYLE}</style>"]
    if not results.complete:
        parts.append("<p><b>Interrupted run:</b> some cells were not measured.</p>")
    for i, (workload, sizes) in enumerate(by_workload.items()):
        parts.append(f"<h4>{e(workload)}</h4>"
                     + _workload_table(f"nb-{id(results)}-{i}", sizes, ceilings, columns))
    if unavailable:
        parts.append("<p class='sub2'>" + "<br>".join(
            f"not run: {e(config_name(b, d))}: {e(reason)}" for (b, d), reason in unavailable.items())
            + "</p>")
    parts.append("</div>")
    return "".join(parts)


_FRAGMENT_STYLE = """
.arraybench table { border-collapse:collapse; margin:4px 0 12px; }
.arraybench th, .arraybench td { padding:2px 8px; border-bottom:1px solid #d1d9e0; text-align:left; }
.arraybench td.num, .arraybench th.num { text-align:right; font-variant-numeric:tabular-nums; }
.arraybench tr.best td { font-weight:700; color:#1a7f37; }
.arraybench td.bad { color:#cf222e; font-weight:700; }
.arraybench .sub2, .arraybench ol.notes { font-size:11px; color:#59636e; }
.arraybench .st-wrong, .arraybench .st-failed { color:#cf222e; font-weight:600; }
"""


# -- pieces ------------------------------------------------------------------------------------
class _Columns:
    """Which optional columns the tables have: only those the data can fill."""

    def __init__(self, achieved: bool, share: bool, machine: bool = False) -> None:
        self.achieved = achieved
        self.share = share
        self.machine = machine  # results of several machines (merge, a cluster run)


def _section(anchor: str, title: str, content: str) -> str:
    return f"<section id='{e(anchor)}'>\n<h2>{e(title)}</h2>\n{content}\n</section>"


def _header(results: Results) -> str:
    env = results.environment
    counts: dict[str, int] = {}
    for r in results.records:
        counts[r.status] = counts.get(r.status, 0) + 1
    status = ", ".join(f"{n} {s}" for s, n in counts.items())
    sub = " · ".join(str(x) for x in (
        env.get("timestamp", ""), env.get("cpu_model", ""),
        f"{results.settings.get('dtype', '')}" if results.settings.get("dtype") else "",
        f"{len(results.records)} cells: {status}" if results.records else "no records",
    ) if x)
    parts = ["<header>", "<h1>arraybench report</h1>", f"<p class='sub'>{e(sub)}</p>"]
    if not results.complete:
        parts.append("<p class='banner'>This run was interrupted: some cells were not measured. "
                     "Continue it with <code>arraybench run --resume DIR</code>.</p>")
    parts.append("<p class='how'>Time per call: the median of all samples, with the 95% confidence "
                 "interval of the median. Lower is better; the fastest correct configuration of each "
                 "case is in <b>bold</b>. Every result is checked against a NumPy float64 reference; "
                 "a <span class='st st-wrong'>wrong</span> result is never shown as a time.</p>")
    parts.append("</header>")
    return "\n".join(parts)


def _figures(items: Iterable[tuple[str, str]], wide: bool = False) -> str:
    out = []
    for name, svg in items:
        out.append(f"<figure class='plot{' wide' if wide else ''}' data-plot='{e(name)}'>{svg}"
                   f"<figcaption>{e(name)}</figcaption></figure>")
    return "<div class='plots'>" + "".join(out) + "</div>" if out else ""


def _workload_table(anchor: str, sizes: list[tuple[str, list[Record]]],
                    ceilings: Mapping[tuple[str, str], Ceiling], columns: _Columns) -> str:
    device_time = any(r.device_median_s is not None for _, group in sizes for r in group)
    head = ["size", "library / device"] + (["machine"] if columns.machine else []) + [
        "median", *(["device time"] if device_time else []), "95% CI", "vs NumPy"]
    if columns.achieved:
        head.append("achieved")
    if columns.share:
        head.append("share of ceiling")
    head += ["first call", "error / tolerance", "samples", "used", "status"]
    text_columns = {"size", "library / device", "machine", "status"}
    notes = Notes()
    rows = ["<table class='records'><thead><tr>"
            + "".join(f"<th class='{'' if h in text_columns else 'num'}' scope='col'>{e(h)}</th>"
                      for h in head)
            + "</tr></thead>"]
    for label, group in sizes:
        best = winner(group)
        bases = baselines(group)
        contenders = sum(1 for r in group if is_valid(r))
        rows.append("<tbody>")
        for i, r in enumerate(group):
            is_best = r is best and contenders > 1
            cells = []
            if i == 0:
                cells.append(f"<th scope='rowgroup' rowspan='{len(group)}' class='size'>"
                             f"{e(size_text(r))}</th>")
            method = f"<div class='sub2'>{e(r.method)}</div>" if r.method and r.method != "eager" else ""
            if columns.machine:
                cells.append(f"<td>{e(library_text(r))}{method}</td><td class='machine'>{e(r.machine)}</td>")
            else:
                cells.append(f"<td>{e(r.config_label)}{method}</td>")
            cells.append(_num(format_seconds(r.median_s) if is_valid(r) else "—"))
            if device_time:  # CUDA events: the GPU's own time per call, without the host's
                cells.append(_num(format_seconds(r.device_median_s) if is_valid(r) else "—"))
            cells.append(_ci_cell(r))
            cells.append(_num(speedup_text(r, bases.get(r.machine))))
            if columns.achieved:
                cells.append("<td class='num'>" + "<br>".join(e(t) for t in achieved_text(r).split(" · "))
                             + "</td>")
            if columns.share:
                share = share_of_ceiling(r, ceilings)
                cells.append(_num("—" if share is None else f"{share:.0%}"))
            cells.append(_num(format_seconds(r.first_call_s)))
            cells.append(_error_cell(r))
            samples = (f"{r.n_samples} ({r.n_replicates} process{'es' if r.n_replicates != 1 else ''})"
                       if r.n_samples else "—")
            cells.append(_num(samples))
            used = usage_lines(r)  # issue 11: what the processes used, and whether the machine was busy
            cells.append(f"<td class='num' title='{e(usage_title(r.usage))}'>"
                         + ("<br>".join(e(t) for t in used) or "—") + "</td>")
            texts = [r.reason] if r.status != "ok" and r.reason else list(r.warnings)
            refs = "".join(f" <a class='ref' href='#{e(anchor)}-note-{notes.ref(t)}'>[{notes.ref(t)}]</a>"
                           for t in texts)
            cells.append(f"<td class='status'><span class='st st-{e(r.status)}'>{e(r.status)}</span>"
                         f"{refs}</td>")
            rows.append(f"<tr class='{'best' if is_best else ''}' data-key='{e(r.key)}'>"
                        + "".join(cells) + "</tr>")
        rows.append("</tbody>")
    rows.append("</table>")
    listing = "".join(f"<li id='{e(anchor)}-note-{i}'>{e(t)}</li>" for i, t in enumerate(notes.texts, 1))
    return ("<div class='scroll'>" + "".join(rows) + "</div>"
            + (f"<ol class='notes'>{listing}</ol>" if listing else ""))


def _num(text: str) -> str:
    return f"<td class='num'>{e(text)}</td>"


def _ci_cell(r: Record) -> str:
    if not is_valid(r) or r.ci_low_s is None or r.ci_high_s is None:
        return _num("—")
    return (f"<td class='num'>{e(ci_text(r))}<div class='sub2'>{e(format_seconds(r.ci_low_s))} – "
            f"{e(format_seconds(r.ci_high_s))}</div></td>")


def _error_cell(r: Record) -> str:
    if r.max_rel_error is None:
        return _num("—")
    tol = f" / {r.tolerance:.1e}" if r.tolerance is not None else ""
    bad = r.tolerance is not None and r.max_rel_error > r.tolerance
    return f"<td class='num{' bad' if bad else ''}'>{e(error_text(r) + tol)}</td>"


def _not_measured(records: Sequence[Record], unavailable: Mapping[tuple[str, str], str]) -> str:
    parts = []
    if unavailable:
        parts.append("<p>Not run on this machine:</p><ul class='unavailable'>" + "".join(
            f"<li><b>{e(config_name(b, d))}</b>: {e(reason)}</li>"
            for (b, d), reason in unavailable.items()) + "</ul>")
    bad = [r for r in records if r.status != "ok" and (r.backend, r.device) not in unavailable]
    if bad:
        rows = "".join(
            f"<tr data-key='{e(r.key)}'><td>{e(r.workload)} {e(size_text(r))}</td>"
            f"<td>{e(r.config_label)}</td>"
            f"<td><span class='st st-{e(r.status)}'>{e(r.status)}</span></td><td>{e(r.reason)}</td></tr>"
            for r in bad)
        parts.append("<table class='records'><thead><tr><th scope='col'>case</th>"
                     "<th scope='col'>library / device</th><th scope='col'>status</th>"
                     f"<th scope='col'>reason</th></tr></thead><tbody>{rows}</tbody></table>")
    if not parts:
        parts.append("<p>Every cell was measured, and every result was correct.</p>")
    return "\n".join(parts)


def _environment(results: Results) -> str:
    machines = results.environment.get("machines")
    if isinstance(machines, Mapping) and machines:
        from ..model.machines import describe

        rows = [("merged from", ", ".join(results.settings.get("merged_from") or []) or None)]
        parts = [_kv_table([(k, v) for k, v in rows if v])]
        per_run = results.settings.get("machines") or {}
        for label, env in machines.items():
            if isinstance(env, Mapping):
                own = per_run.get(label.split("/")[0]) or {}
                parts.append(f"<h3>{e(label)}: {e(describe(env))}</h3>" + _machine_environment(env, own))
        return "\n".join(parts)
    return _machine_environment(results.environment, results.settings)


def _machine_environment(env: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """One machine's environment and the run's settings, as a table."""
    gpus = env.get("gpus") or []
    gpu_text = "; ".join(
        ", ".join(str(g.get(k)) for k in ("name", "driver", "memory") if g.get(k))
        for g in gpus if isinstance(g, Mapping)) or "none found"
    libraries = env.get("libraries") or {}
    lib_text = ", ".join(f"{k} {v}" for k, v in libraries.items() if v) if isinstance(libraries, Mapping) else ""
    workers = env.get("backends") or {}
    blas = [f"NumPy: {env['blas']}"] if env.get("blas") else []
    if isinstance(workers, Mapping):
        for config, info in workers.items():
            if isinstance(info, Mapping) and info.get("torch_blas"):
                blas.append(f"PyTorch ({config}): {info['torch_blas']}")
    threads = [str(settings.get("threads_applied") or settings.get("threads") or "all cores")]
    if env.get("thread_env"):
        threads.append(", ".join(f"{k}={v}" for k, v in env["thread_env"].items()))
    rows = [
        ("when", env.get("timestamp")),
        ("machine id", env.get("machine_id")),
        ("context", env.get("context") or None),
        ("arraybench", env.get("arraybench")),
        ("Python", f"{env.get('python', '')} ({env.get('python_implementation', '')})"),
        ("platform", env.get("platform")),
        ("CPU", f"{env.get('cpu_model', '')}: {env.get('cpu_count', '?')} logical cores, "
                f"{env.get('cpus_available', '?')} available"),
        ("memory", f"{env.get('memory_gib')} GiB" if env.get("memory_gib") else None),
        ("GPUs", gpu_text),
        ("libraries", lib_text),
        ("BLAS", "; ".join(blas) or None),
        ("threads", "; ".join(threads)),
        *kernel_rows(env),
    ]
    measure = [(k, settings.get(k)) for k in ("dtype", "modes", "replicates", "max_replicates", "max_time",
                                             "min_samples", "rel_ci", "cold", "allow_tf32", "seed")
               if k in settings]
    table = _kv_table([(k, v) for k, v in rows if v not in (None, "")] + [(f"setting: {k}", v) for k, v in measure])
    details = []
    if isinstance(workers, Mapping):
        for config, info in workers.items():
            if isinstance(info, Mapping):
                details.append(f"<details><summary>what the {e(config)} worker reported</summary>"
                               + _kv_table(list(info.items())) + "</details>")
    return table + "".join(details)


def _kv_table(pairs: Sequence[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th scope='row'>{e(k)}</th><td>{e(_plain(v))}</td></tr>" for k, v in pairs)
    return f"<table class='kv'><tbody>{rows}</tbody></table>"


def _plain(value: Any) -> str:
    """Nested JSON values as one line of text."""
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_plain(v)}" for k, v in value.items() if v not in (None, ""))
    if isinstance(value, (list, tuple)):
        return "; ".join(_plain(v) for v in value) if value else "—"
    if value is None:
        return "—"
    return str(value)


def _footer(results: Results) -> str:
    return ("<footer>Made by arraybench "
            f"{e(results.environment.get('arraybench', ''))} from results.json, without measuring "
            "anything; rebuild it with <code>arraybench report results.json</code>.</footer>")


# -- plots -------------------------------------------------------------------------------------
_PROLOGUE = re.compile(r"\A\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?", re.IGNORECASE)


def _read_plots(paths: Sequence[Path]) -> dict[str, str]:
    """File name -> inlinable SVG markup, in the order given."""
    out: dict[str, str] = {}
    for i, path in enumerate(paths):
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        out[path.name] = inline_svg(text, f"p{i}-")
    return out


def inline_svg(text: str, prefix: str) -> str:
    """An SVG file's markup, ready to sit inside HTML next to other SVGs.

    The XML prologue goes, and every id (and each reference to it) gets ``prefix``: matplotlib
    names clip paths and glyphs by content, so two plots in one page could otherwise share an id
    and clip each other.
    """
    body = _PROLOGUE.sub("", text, count=1)
    body = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', body)
    body = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", body)
    body = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}{m.group(1)}"', body)
    return body


_STYLE = """
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#ffffff; --alt:#f6f8fa;
        --ok:#1a7f37; --bad:#cf222e; --warn:#9a6700; }
* { box-sizing: border-box; }
body { margin:0; color:var(--fg); background:var(--bg);
       font:14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width:1280px; margin:0 auto; padding:24px 28px 48px; }
h1 { font-size:26px; margin:0 0 4px; }
h2 { font-size:20px; margin:36px 0 10px; padding-bottom:4px; border-bottom:1px solid var(--line); }
.sub, .how, footer, figcaption, .sub2 { color:var(--muted); }
.sub { margin:0 0 8px; }
.how { max-width:900px; }
.banner { background:#fff8c5; border:1px solid #d4a72c; padding:8px 12px; border-radius:6px; }
nav { position:sticky; top:0; background:var(--bg); padding:8px 0; border-bottom:1px solid var(--line);
      z-index:1; }
nav a { color:#0969da; text-decoration:none; }
.findings li { margin:4px 0; }
.scroll { overflow-x:auto; }
table { border-collapse:collapse; margin:8px 0 16px; }
th, td { padding:4px 10px; border-bottom:1px solid var(--line); text-align:left; vertical-align:top; }
thead th { background:var(--alt); font-weight:600; white-space:nowrap; }
td.num, th.num { text-align:right; white-space:nowrap; font-variant-numeric:tabular-nums; }
th.size { background:var(--alt); font-weight:600; white-space:nowrap; }
tbody + tbody { border-top:2px solid var(--line); }
tr.best td { font-weight:700; color:var(--ok); }
td.bad { color:var(--bad); font-weight:700; }
.sub2 { font-size:12px; font-weight:400; }
ul.steps li.slower { color:var(--bad); } ul.steps li.faster { color:var(--ok); }
tr.step td { font-weight:700; }
ol.notes { font-size:12px; color:var(--muted); margin:0 0 12px; padding-left:24px; max-width:1000px; }
a.ref { color:#0969da; text-decoration:none; font-size:12px; }
td.status { white-space:nowrap; }
.st { display:inline-block; padding:0 8px; border-radius:10px; font-size:12px; font-weight:600;
      color:#fff; background:var(--muted); }
.st-ok { background:var(--ok); } .st-wrong, .st-failed { background:var(--bad); }
.st-skipped { background:#8c959f; }
.plots { display:flex; flex-wrap:wrap; gap:16px; }
figure.plot { margin:0; flex:0 1 640px; max-width:100%; border:1px solid var(--line); border-radius:6px;
              padding:8px; background:#fff; }
figure.plot.wide { flex-basis:960px; }
figure.plot svg { display:block; width:100%; height:auto; }
figcaption { font-size:12px; text-align:center; }
table.kv th { background:var(--alt); font-weight:600; white-space:nowrap; }
table.kv td { word-break:break-word; }
details { margin:6px 0; } summary { cursor:pointer; color:var(--muted); }
footer { margin-top:40px; font-size:12px; }
code { background:var(--alt); padding:1px 4px; border-radius:4px; }
@media print { nav { position:static; } figure.plot { break-inside:avoid; } }
"""
