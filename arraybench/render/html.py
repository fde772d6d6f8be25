"""The HTML report: one self-contained page (plots inlined, no network) per run, its environment
section, and the notebook's results fragment, as values for ``templates/`` (autoescaped); a
Content-Security-Policy lets the page load nothing and run only its own sorting script, allowed by its hash.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from markupsafe import Markup

from .comparison import HTML_TEMPLATES, history_section
from .terminal import machine_rows
from .files import plot_file_name, run_plot_name
from .findings import self_check_lines
from .notes import (RANGES_LEGEND, ci_legend, interval_target, achieved_text, ci_text, error_text, everywhere_mark, library_kernels,
                    note_texts, notebook, speedup, speedup_text, unavailable)
from .tables import (energy_absent, energy_measured, energy_why, format_energy, histogram_cell, peak_sub,
                     peak_text)
from ..analysis.grouping import baselines, decided_winner, grouped, is_valid, library_label, size_text
from ..analysis.history import History
from ..analysis.roofline import Ceiling, achieved, ceilings as ceilings_of_run, share as share_of_ceiling
from ..model.runs import describe
from ..model.results import Pairs, Results
from ..model.record import Record
from ..model.replicate import RATES, Usage
from ..units import format_seconds, format_share


REPORT_NAME = "report.html"

# The page's one script, allowed by its hash in the Content-Security-Policy: no other can run.
_SORT_SCRIPT = HTML_TEMPLATES.loader.get_source(HTML_TEMPLATES, "sort.js")[0]
_SORT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(_SORT_SCRIPT.encode("utf-8")).digest()).decode("ascii")


def render_html(results: Results, *, plots: Sequence[Path] = (),
                findings: Sequence[str] | None = None, history: "History | None" = None) -> str:
    """The report as one HTML document."""
    findings = list(findings or [])
    svgs = _read_plots(plots)  # each section takes its own plots out; "More plots" shows what is left
    not_run, shown = unavailable(results.records)
    ceilings = ceilings_of_run(results.records)
    columns = _columns(shown, ceilings)

    sections: list[dict[str, Any]] = []
    if findings:
        sections.append(_section("findings", "Findings", "findings", findings=findings))
    summary_names = [run_plot_name("summary", label) for label in dict.fromkeys(r.size_label for r in shown)]
    summary = [(n, svgs.pop(n)) for n in summary_names if n in svgs]
    if summary:
        sections.append(_section("summary", "Summary", "figures", figures=summary, wide=True))
    for i, (workload, sizes) in enumerate(_by_workload(shown).items()):
        anchor = f"workload-{i}"
        figures = [(n, svgs.pop(n)) for n in (plot_file_name(workload, label) for label, _ in sizes) if n in svgs]
        sections.append(_section(anchor, workload, "workload", figures=figures,
                                 table=_records_table(anchor, sizes, ceilings, columns, results)))
    if history is not None:
        names = [run_plot_name("history", w) for w in dict.fromkeys(s.workload for s in history.series)]
        sections.append(_section("history", "History", "history",
                                 **history_section(history, [(n, svgs.pop(n)) for n in names if n in svgs])))
    if svgs:
        sections.append(_section("more-plots", "More plots", "figures", figures=list(svgs.items()), wide=False))
    sections.append(_section(
        "not-measured", "Not measured, failed or wrong", "not-measured", toc="Not measured", unavailable=not_run,
        bad=[{"key": r.key, "case": f"{r.workload} {size_text(r)}", "library": r.config_label,
              "status": r.status, "reason": r.reason} for r in shown if r.status != "ok"]))
    sections.append(_section("environment", "Environment and settings", "environment",
                             toc="Environment", **environment_section(results)))
    return HTML_TEMPLATES.get_template("report.html").render(
        script=Markup(_SORT_SCRIPT), script_hash=_SORT_HASH,
        title=f"arraybench — {results.environment.get('cpu_model', '')}",
        subtitle=_subtitle(results), complete=results.complete, sections=sections,
        version=results.environment.get("arraybench", ""))


def results_table_html(results: Results) -> str:
    """The results tables as an HTML fragment, for Jupyter (``Results._repr_html_``)."""
    not_run, shown = unavailable(results.records)
    ceilings = ceilings_of_run(results.records)
    columns = _columns(shown, ceilings, machine=False)
    workloads = [{"name": workload, "table": _records_table(f"nb-{id(results)}-{i}", sizes, ceilings, columns, results)}
                 for i, (workload, sizes) in enumerate(_by_workload(shown).items())]
    return HTML_TEMPLATES.get_template("results.html").render(
        complete=results.complete, workloads=workloads, unavailable=not_run)


def environment_section(results: Results) -> dict[str, Any]:
    """The report's Environment section: each machine's environment, settings and workers' reports."""
    machines = results.environment.get("machines")
    if machines:  # each an environment, its shape checked as the results were read
        per_run = results.settings.get("machines") or {}
        return {"merged_from": ", ".join(results.settings.get("merged_from") or []),
                "machines": [{"heading": f"{label}: {describe(env)}",
                              **_machine_environment(env, per_run.get(label.split("/")[0]) or {})}
                             for label, env in machines.items()]}
    return {"merged_from": "",
            "machines": [{"heading": "", **_machine_environment(results.environment, results.settings)}]}


def _machine_environment(env: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """One machine's environment and the run's settings as (name, text) rows, and its workers' reports."""
    workers = env.get("backends") or {}
    blas = ([f"NumPy: {env['blas']}"] if env.get("blas") else []) + [
        f"PyTorch ({config}): {info['torch_blas']}" for config, info in workers.items() if info.get("torch_blas")]
    threads = [str(settings.get("threads_applied") or settings.get("threads") or "all cores")]
    if env.get("thread_env"):
        threads.append(", ".join(f"{k}={v}" for k, v in env["thread_env"].items()))
    rows = [("when", env.get("timestamp")), ("context", env.get("context") or None),
            ("arraybench", env.get("arraybench")), *machine_rows(env, threads="; ".join(threads)),
            ("BLAS", "; ".join(blas) or None)]
    rows += [(f"kernels ({config})", text) for config, info in workers.items() if (text := library_kernels(info))]
    measure = [(k, settings.get(k)) for k in ("dtype", "modes", "processes", "max_processes", "max_time",
                                             "min_samples", "rel_ci", "cold", "allow_tf32", "seed")
               if k in settings]
    pairs = [(k, v) for k, v in rows if v not in (None, "")] + [(f"setting: {k}", v) for k, v in measure]
    reported = [(str(config), [(str(k), _plain(v)) for k, v in info.items()]) for config, info in workers.items()]
    return {"rows": [(str(k), _plain(v)) for k, v in pairs], "workers": reported}


def _plain(value: Any) -> str:
    """Nested JSON values as one line of text."""
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_plain(v)}" for k, v in value.items() if v not in (None, ""))
    if isinstance(value, (list, tuple)):
        return "; ".join(_plain(v) for v in value) if value else "—"
    if value is None:
        return "—"
    return str(value)


def _count(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:.2g}"


def usage_lines(r: Record) -> list[str]:
    """The record's usage in a few short lines; empty when nothing was counted."""
    u = r.usage
    if u is None:
        return []
    lines = []
    if u.cores is not None:
        kernel = f", {u.kernel_share:.0%} in kernel" if u.kernel_share is not None else ""
        lines.append(f"{u.cores:.1f} cores{kernel}")
    if u.minor_faults_per_call is not None:
        major = f" ({_count(u.major_faults_per_call)} major)" if u.major_faults_per_call else ""
        lines.append(f"{_count(u.minor_faults_per_call)} faults/call{major}")
    if u.involuntary_switches_per_call is not None:
        lines.append(f"{_count(u.involuntary_switches_per_call)} preempted/call")
    if u.ipc is not None:
        lines.append(f"IPC {u.ipc:.2f}")
    if r.busy:
        lines.append(f"busy: others {u.others_cores:.1f} cores" if u.others_cores is not None else "busy")
    return lines


def usage_title(u: Usage | None) -> str:
    """Every rate, for a tooltip."""
    if u is None:
        return ""
    parts = [f"{name} {getattr(u, name):.4g}" for name in RATES if getattr(u, name) is not None]
    if u.hardware_absent:
        parts.append(f"hardware counters: {u.hardware_absent}")
    return "; ".join(parts)


def _section(anchor: str, title: str, kind: str, *, toc: str | None = None, **content: Any) -> dict[str, Any]:
    return {"anchor": anchor, "title": title, "toc": toc or title, "kind": kind, **content}


def _columns(shown: Sequence[Record], ceilings: Mapping[tuple[str, str], Ceiling],
             machine: bool | None = None) -> dict[str, bool]:
    """Which optional columns the tables have: only those the data can fill."""
    return {"achieved": any(achieved(r) != (None, None) for r in shown),
            "share": any(share_of_ceiling(r, ceilings) is not None for r in shown),
            "peak": any(r.peak_bytes is not None for r in shown),
            # without one figure, a line under each table says why instead of a column of dashes
            "energy": energy_measured(shown),
            # results of several machines (merge, a cluster run); the notebook leaves it out
            "machine": any(r.machine for r in shown) if machine is None else machine}


def _by_workload(shown: Sequence[Record]) -> dict[str, list[tuple[str, list[Record]]]]:
    out: dict[str, list[tuple[str, list[Record]]]] = {}
    for (workload, label), group in grouped(shown).items():
        out.setdefault(workload, []).append((label, group))
    return out


def _subtitle(results: Results) -> str:
    env = results.environment
    status = ", ".join(f"{n} {s}" for s, n in Counter(r.status for r in results.records).items())
    return " · ".join(str(x) for x in (
        env.get("timestamp", ""), env.get("cpu_model", ""), results.settings.get("dtype"),
        f"{len(results.records)} cells: {status}" if results.records else "no records",
        *self_check_lines(results),
    ) if x)


def _records_table(anchor: str, sizes: list[tuple[str, list[Record]]], ceilings: Mapping[tuple[str, str], Ceiling],
                   columns: Mapping[str, bool], results: Results) -> dict[str, Any]:
    """One workload's table of ``results``: its columns, a group of rows per size, and the numbered notes."""
    pairs = Pairs(results.pairs)
    device_time = any(r.device_median_s is not None for _, group in sizes for r in group)
    head = [name for name, shown in (
        ("size", True), ("library / device", True), ("machine", columns["machine"]), ("median", True),
        ("device time", device_time), ("95% CI", True), ("vs NumPy", True), ("achieved", columns["achieved"]),
        ("share of ceiling", columns["share"]), ("first call", True), ("peak memory", columns["peak"]),
        ("energy", columns["energy"]), ("error / tolerance", True), ("samples", True), ("used", True),
        ("status", True)) if shown]
    book = notebook({(g[0].workload, label): g for label, g in sizes}, workload=False)
    groups = []
    for _label, group in sizes:
        best = decided_winner(group, pairs) if sum(1 for r in group if is_valid(r)) > 1 else None
        bases = baselines(group)
        groups.append({"size": size_text(group[0]), "rows": [
            _row(r, is_best=r is best, base=bases.get(r.machine), ceilings=ceilings, machine=columns["machine"],
                 refs=book.refs(r.key), pairs=pairs) for r in group]})
    return {"anchor": anchor, "head": head, "text_columns": ("size", "library / device", "machine", "status"),
            **columns, "device_time": device_time, "groups": groups, "notes": note_texts(book),
            "energy_absent": [] if columns["energy"] else energy_absent(r for _, g in sizes for r in g),
            "legend": ci_legend(interval_target(results)) + (f". {RANGES_LEGEND}" if book.ranged else ""),
            "everywhere": everywhere_mark(book).capitalize()}


def _row(r: Record, *, is_best: bool, base: Record | None, ceilings: Mapping[tuple[str, str], Ceiling],
         machine: bool, refs: list[int], pairs: Pairs) -> dict[str, Any]:
    valid = is_valid(r)
    share = share_of_ceiling(r, ceilings)
    ratio = speedup(r, base)
    return {
        "key": r.key, "best": is_best, "status": r.status,
        "library": library_label(r) if machine else r.config_label, "machine": r.machine,
        "method": r.method if r.method and r.method != "eager" else "",
        "median": format_seconds(r.median_s) if valid else "—",
        # CUDA events: the GPU's own time per call, without the host's
        "device": format_seconds(r.device_median_s) if valid else "—",
        "ci": ({"text": ci_text(r), "low": format_seconds(r.ci_low_s), "high": format_seconds(r.ci_high_s)}
               if valid and r.ci_low_s is not None and r.ci_high_s is not None else None),
        "speedup": speedup_text(r, base, pairs),
        "achieved": achieved_text(r).split(" · "),
        "share": format_share(share),
        "first_call": format_seconds(r.first_call_s),
        # beside the output's own size, a caching allocator's reserve apart; how it was measured on hover
        "peak": {"text": peak_text(r), "sub": peak_sub(r), "title": r.peak_note},
        "energy": {"text": format_energy(r.energy_j) if valid else "—",
                   "sub": energy_why(r) if valid else "", "title": r.energy_note},
        "error": (None if r.max_rel_error is None else
                  {"text": error_text(r), "tolerance": f"{r.tolerance:.1e}" if r.tolerance is not None else "",
                   "bad": r.tolerance is not None and r.max_rel_error > r.tolerance}),
        "samples": ({"n": r.n_samples,
                     "processes": f"{r.n_replicates} process{'es' if r.n_replicates != 1 else ''}"}
                    if r.n_samples else None),
        # each process's samples in shared bins, a colour each: a process that ran slow shows apart
        "hist": histogram_cell(r),
        # What sorting by a column compares ("" sorts last): seconds, shares, a speed-up.
        "v": {"median": _v(r.median_s if valid else None), "device": _v(r.device_median_s if valid else None),
              "ci": _v((r.ci_high_s - r.ci_low_s) / (2 * r.median_s)
                       if valid and r.ci_low_s is not None and r.ci_high_s is not None else None),
              # the time against NumPy's: ascending reads fastest first, as the times do
              "speedup": _v(1 / ratio if ratio else None), "share": _v(share),
              "first_call": _v(r.first_call_s), "error": _v(r.max_rel_error),
              "peak": _v(r.peak_bytes if valid else None), "energy": _v(r.energy_j if valid else None)},
        "used": usage_lines(r), "used_title": usage_title(r.usage),
        "refs": refs,
    }


def _v(value: float | None) -> str:
    """A number as sorting reads it, exactly; "" for none."""
    return "" if value is None else repr(float(value))


_PROLOGUE = re.compile(r"\A\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?", re.IGNORECASE)


def _read_plots(paths: Sequence[Path]) -> dict[str, Markup]:
    """File name -> inlinable SVG markup, in the order given."""
    out: dict[str, Markup] = {}
    for i, path in enumerate(map(Path, paths)):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        # Our own plots, written by matplotlib (which escapes the text it draws): markup to keep.
        out[path.name] = Markup(inline_svg(text, f"p{i}-"))
    return out


def inline_svg(text: str, prefix: str) -> str:
    """An SVG file's markup, ready to sit inside HTML next to other SVGs: every id gets ``prefix``, since
    matplotlib names clip paths by content and two plots in one page could clip each other."""
    # Each id where it is named (id="…") and where it is used (url(#…), href="#…").
    return re.sub(r'(\bid="|url\(#|href="#)(?=[^")]+[")])', lambda m: m[1] + prefix,
                  _PROLOGUE.sub("", text, count=1))
