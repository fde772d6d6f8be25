"""The results table in the terminal (rich), coloured by winner, with reasons as numbered notes."""

from __future__ import annotations

from typing import Iterable

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..analysis.grouping import baselines, grouped, is_valid, library_label, size_detail, size_text, winner
from ..analysis.rates import achieved
from ..analysis.roofline import ceilings, share
from ..errors import printable
from ..model.record import Record, config_label
from ..units import format_interval, format_rate, format_seconds
from .terminal import console as safe_console, plain

_STATUS_STYLE = {"ok": "green", "wrong": "bold red", "failed": "red", "skipped": "dim"}


def ci_text(r: Record) -> str:
    """The 95% CI of the median as ± percent of the median (×/÷ a factor where it is wide)."""
    return format_interval(r.ci_low_s, r.median_s, r.ci_high_s)


def speedup(r: Record, base: Record | None) -> float | None:
    """How many times faster than NumPy on the CPU (below 1: slower)."""
    if base is None or not is_valid(r):
        return None
    return base.median_s / r.median_s


def speedup_text(r: Record, base: Record | None) -> str:
    ratio = speedup(r, base)
    if ratio is None:
        return "—"
    return f"{ratio:.3g}×" if ratio < 1000 else f"{ratio:,.0f}×"


def _share_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def achieved_text(r: Record) -> str:
    """``"12.3 GFLOP/s · 1.2 GB/s"``, or ``"—"``."""
    flops, moved = achieved(r)
    parts = []
    if flops is not None:
        parts.append(format_rate(flops, "FLOP/s"))
    if moved is not None:
        parts.append(format_rate(moved, "B/s"))
    return " · ".join(parts) or "—"


def error_text(r: Record) -> str:
    return "—" if r.max_rel_error is None else f"{r.max_rel_error:.1e}"


class Notes:
    """Numbered footnotes, each text once."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def ref(self, text: str) -> int:
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text) + 1


def results_table(records: Iterable[Record]) -> Group:
    """One row per record, grouped by workload and size; the winner of each group in bold green."""
    records = list(records)
    roof = ceilings(records)
    device_time = any(r.device_median_s is not None for r in records)
    several = any(r.machine for r in records)  # results of several machines: a machine column
    table = Table(title="arraybench: time per call (median; lower is better)", header_style="bold",
                  pad_edge=False, title_justify="left")
    # Numbers never wrap or truncate; names wrap when the terminal is narrow.
    for name, justify, numeric in (("case", "left", False), ("library / device", "left", False),
                                   ("machine", "left", False),
                                   ("median", "right", True), ("device", "right", True),
                                   ("95% CI", "right", True),
                                   ("vs NumPy", "right", True), ("first call", "right", True),
                                   ("rel. error", "right", True), ("of peak", "right", True),
                                   ("status", "left", False)):
        if (name == "of peak" and not roof) or (name == "machine" and not several):
            continue  # no ceilings measured (--roofline) in this run; one machine
        if name == "device" and not device_time:
            continue  # no device-event timer (CUDA events) in this run
        if numeric:
            table.add_column(name, justify=justify, no_wrap=True, min_width=len(name))
        else:
            table.add_column(name, justify=justify, overflow="fold")
    notes = Notes()
    unavailable = unavailable_configs(records)
    records = [r for r in records if (r.backend, r.device) not in unavailable]
    groups = grouped(records)
    # The size goes on the row below the workload's name, to keep the first column narrow.
    for n, ((workload, _label), group) in enumerate(groups.items()):
        best = winner(group)
        bases = baselines(group)
        contenders = sum(1 for g in group if is_valid(g))
        for i, r in enumerate(group):
            style = "bold green" if (r is best and contenders > 1) else None
            status = Text(r.status, style=_STATUS_STYLE.get(r.status, ""))
            if r.status != "ok" and r.reason:
                status.append(f" [{notes.ref(r.reason)}]")
            elif r.warnings:
                status.append(" " + " ".join(f"[{notes.ref(w)}]" for w in r.warnings), style="yellow")
            case = workload if i == 0 else (r.size_label if i == 1 else "")
            if i == 2 and size_detail(r):
                case = size_detail(r)
            if len(group) == 1:
                case = f"{workload} {size_text(r)}"
            table.add_row(
                plain(case),  # names from a results file: shown, never read as markup
                *map(plain, [library_label(r), r.machine] if several else [r.config_label]),
                format_seconds(r.median_s),
                *([format_seconds(r.device_median_s)] if device_time else []),
                ci_text(r),
                speedup_text(r, bases.get(r.machine)),
                format_seconds(r.first_call_s),
                error_text(r),
                *([_share_text(share(r, roof))] if roof else []),
                status,
                style=style,
                end_section=(i == len(group) - 1 and n < len(groups) - 1),
            )
    footer = [Text.from_markup(f"[dim][{i}] {escape(printable(t))}[/]") for i, t in enumerate(notes.texts, 1)]
    for (backend, device), reason in unavailable.items():
        footer.append(Text.from_markup(f"[dim]not run: {escape(config_label(backend, device))}: {escape(reason)}[/]"))
    return Group(table, *footer)


def unavailable_configs(records: Iterable[Record]) -> dict[tuple[str, str], str]:
    """Library/device pairs skipped in every cell for one reason: unavailable here, said once."""
    by_config: dict[tuple[str, str], list[Record]] = {}
    for r in records:
        by_config.setdefault((r.backend, r.device), []).append(r)
    out = {}
    for config, recs in by_config.items():
        reasons = {r.reason for r in recs}
        if all(r.status == "skipped" for r in recs) and len(reasons) == 1:
            out[config] = reasons.pop()
    return out


def print_table(records: Iterable[Record], console: Console | None = None) -> None:
    """Print the table; wide enough for its numbers even when stdout is a file or a pipe."""
    console = console or safe_console()
    if not console.is_terminal and console.width < 120:
        console = safe_console(width=120, file=console.file, color_system=None)
    console.print(results_table(records))


def print_findings(findings: Iterable[str], console: Console) -> None:
    """The findings under the table, one plain sentence a line (no markup read from them)."""
    found = list(findings)
    if found:
        console.print("\n[bold]Findings[/]")
        for f in found:
            console.print(f"- {f}", markup=False, highlight=False)


def table_text(records: Iterable[Record], width: int = 120) -> str:
    """The table as plain text (no colour), ``width`` characters wide."""
    console = safe_console(width=width, color_system=None, record=True, file=_Discard(), force_jupyter=False)
    console.print(results_table(records))
    return console.export_text().rstrip("\n")


class _Discard:
    """A file that keeps nothing: ``table_text`` reads what was printed from the console."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass
