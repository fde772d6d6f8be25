"""A run's plots: one per case, the summary per size, the sweeps and the roofline. Valid times are bars
with their 95% CI; a wrong or failed cell gets an empty slot labelled with its status, never a bar that
could be read as a time (a skipped cell is left out: the table gives its reason).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Sequence

from .files import plot_file_name, run_plot_name
from .mpl import MARKERS, PALETTE, Axes, Figure, drawn, log_axis, plain, show_in_notebooks, styled
from ..analysis.crossover import crossovers
from ..analysis.grouping import (baselines, comparison, config_sort_key, grouped, is_valid, size_text,
                                 swept_workloads)
from ..analysis.roofline import ceiling_key, ceilings
from ..errors import unknown_name
from ..files import write_atomic
from ..model.results import Pairs
from ..model.record import Record
from ..units import format_seconds, format_speedup, time_unit, format_rate


def _colour(r: Record) -> str:
    return PALETTE.get(r.backend, "#8172b2")


def _hatch(r: Record) -> str | None:
    return "//" if r.device == "gpu" else None


def _shown(records: Sequence[Record]) -> list[Record]:
    """What a plot shows: all but the skipped cells (the table lists those, with their reasons)."""
    return [r for r in records if r.status != "skipped"]


def _note(ax: Axes, text: str) -> None:
    ax.set_xlabel(text, fontsize=7, color="#555555", labelpad=8)


def _is_baseline(r: Record) -> bool:
    return r.backend == "numpy" and r.device == "cpu" and r.mode == "latency" and not r.transfer


@styled
def case_figure(records: Sequence[Record], pairs: Pairs = Pairs()) -> Figure:
    """Bars of time per call for one case, each against NumPy by the verdict of their pair."""
    records = sorted(_shown(records), key=config_sort_key)
    first = records[0]
    valid = [r for r in records if is_valid(r)]
    scale, unit = time_unit(min((r.median_s for r in valid), default=1.0))
    fig = Figure(figsize=(max(5.5, 1.2 * len(records) + 2.5), 4.2))
    ax = fig.subplots()
    xs = list(range(len(records)))
    bases = baselines(records)  # each machine's bars against its own NumPy
    top = max(((r.ci_high_s or r.median_s) for r in valid), default=scale) / scale
    log = bool(valid) and (max(r.median_s for r in valid) / min(r.median_s for r in valid) > 30)
    floor = min((r.median_s for r in valid), default=scale) / scale
    for x, r in zip(xs, records):
        if is_valid(r):
            height = r.median_s / scale
            ci_lo = (r.ci_low_s or r.median_s) / scale
            ci_hi = (r.ci_high_s or r.median_s) / scale
            ax.bar(x, height, color=_colour(r), hatch=_hatch(r), edgecolor="white", linewidth=0.5)
            ax.errorbar(x, height, yerr=[[max(height - ci_lo, 0)], [max(ci_hi - height, 0)]],
                        color="#333333", capsize=3, lw=1)
            text = format_seconds(r.median_s)  # each bar in its own unit: log axes span decades
            base = bases.get(r.machine)
            if base is not None and r is not base:
                said, factor = comparison(r, base, pairs)  # the table's verdict of their pair
                text += (f"\n{format_speedup(factor)} than NumPy" if said in ("faster", "slower")
                         else f"\n{said} against NumPy")
            ax.annotate(text, (x, max(height, ci_hi)), xytext=(0, 3), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8)
        else:
            mark = "wrong result" if r.status == "wrong" else r.status  # failed (a plot shows no skipped cell)
            y = floor if log else top * 0.04
            ax.annotate(mark, (x, y), ha="center", va="bottom", fontsize=8, color="#b22222",
                        rotation=90)
    ax.set_xticks(xs)
    ax.set_xticklabels([plain(r.config_label) for r in records], rotation=20, ha="right")
    if log:
        log_axis(ax, "y", "seconds", scale=scale)
        # Room above the tallest bar for its two-line label, which would otherwise hit the title.
        ax.set_ylim(top=top * 4)
    else:
        ax.set_ylim(0, top * 1.3 if top > 0 else 1)
    ax.set_ylabel(f"time per call ({'log' if log else unit}), lower is better")
    ax.set_title(plain(f"{first.workload} — {size_text(first)}, {first.dtype}"))
    _note(ax, "bar: median · whisker: 95% CI of the median · hatched: GPU")
    return fig


@styled
def summary_figure(records: Sequence[Record], size_label: str) -> Figure | None:
    """Speed relative to NumPy for every workload at one size label (log scale, higher is faster)."""
    groups = {k: _shown(v) for k, v in grouped(records).items() if k[1] == size_label}
    groups = {k: v for k, v in groups.items() if v}
    if not any(is_valid(r) for g in groups.values() for r in g):
        return None  # nothing at this size has a time: a log axis would have nothing to show
    configs: dict[tuple, Record] = {}
    for group in groups.values():
        for r in group:
            configs.setdefault(config_sort_key(r), r)
    ordered = sorted(configs.values(), key=config_sort_key)
    relative = all(b is not None for g in groups.values() for b in baselines(g).values())
    fig = Figure(figsize=(max(7.0, 1.7 * len(groups) + 3), 4.6))
    ax = fig.subplots()
    width = 0.8 / max(len(ordered), 1)
    for i, cfg in enumerate(ordered):
        key = config_sort_key(cfg)
        xs, ys = [], []
        for gx, group in enumerate(groups.values()):
            match = next((r for r in group if config_sort_key(r) == key), None)
            x = gx - 0.4 + width * (i + 0.5)
            if match is None:
                continue
            if not is_valid(match):
                ax.annotate("×", (x, 1.0 if relative else 1e-6), ha="center", va="center",
                            color="#b22222", fontsize=10)
                continue
            base = baselines(group).get(match.machine)
            y = base.median_s / match.median_s if relative and base else match.median_s
            xs.append(x)
            ys.append(y)
            if relative and match is not base:
                ax.annotate(format_speedup(y), (x, y), xytext=(0, 2 if y >= 1 else -2),
                            textcoords="offset points", ha="center",
                            va="bottom" if y >= 1 else "top", fontsize=7)
        # Relative bars grow from 1 (as fast as NumPy): up when faster, down when slower.
        bottom = 1.0 if relative else 0.0
        ax.bar(xs, [y - bottom for y in ys], bottom=bottom, width=width * 0.95, color=_colour(cfg),
               hatch=_hatch(cfg), edgecolor="white", linewidth=0.5,
               label=plain(cfg.config_label) + (" (the baseline, 1×)" if relative and _is_baseline(cfg) else ""))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([plain(w) for (w, _) in groups])
    log_axis(ax, "y", "ratio" if relative else "seconds")
    if relative:
        ax.axhline(1.0, color="#333333", lw=0.8)
    ax.set_ylabel("speed vs NumPy CPU (×, log), higher is faster" if relative
                  else "time per call (log), lower is better")
    ax.set_title(plain(f"Summary — {size_label} sizes, {next(iter(groups.values()))[0].dtype}"))
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _note(ax, "× : failed or wrong result (see the table) · hatched: GPU")
    return fig


def write_plots(records: Iterable[Record], out_dir: Path, pairs: Pairs = Pairs()) -> list[Path]:
    """Every case plot, the summaries, the sweeps (three sizes or more) and the roofline; the files written."""
    records = list(records)
    swept = set(swept_workloads(records))
    plots: list[tuple[Callable[[], Figure | None], str]] = []
    for (workload, label), group in grouped(records).items():
        if not _shown(group) or (workload in swept and not label.isidentifier()):
            continue  # a sweep's numbered sizes are drawn together, in its sweep plot
        plots.append((lambda group=group: case_figure(group, pairs), plot_file_name(workload, label)))
    plots += [(lambda w=workload: sweep_figure(records, w), run_plot_name("sweep", workload))
              for workload in swept]
    plots.append((lambda: roofline_figure(records), "roofline.svg"))
    for label in ("small", "large"):  # a size nothing was measured at draws no summary (None)
        measured = [r for r in records if r.size_label == label]
        plots.append((lambda m=measured, s=label: summary_figure(m, s), run_plot_name("summary", label)))
    # A file that cannot be written is not a drawing problem: it raises.
    return [write_atomic(out_dir / name, svg) for draw, name in plots if (svg := drawn(draw, name)) is not None]


KINDS = ("summary", "case", "sweep", "roofline")


def figure(records: Sequence[Record], kind: str = "summary", *, workload: str | None = None,
           size: str | None = None, pairs: Pairs = Pairs()) -> Figure:
    """One plot as a matplotlib figure, for notebooks (``Results.plot``)."""
    if kind not in KINDS:
        raise ValueError(unknown_name("plot", kind, list(KINDS)))
    records = list(records)
    workloads = list(dict.fromkeys(r.workload for r in records))
    if kind in ("case", "sweep"):
        workload = workload or (workloads[0] if len(workloads) == 1 else None)
        if workload not in workloads:
            raise ValueError(f"plot({kind!r}) needs workload=, one of: {', '.join(workloads)}")
    fig: Figure | None
    if kind == "summary":
        labels = list(dict.fromkeys(r.size_label for r in records))
        size = size or (labels[0] if labels else None)
        fig = summary_figure([r for r in records if r.size_label == size], size or "")
    elif kind == "case":
        labels = list(dict.fromkeys(r.size_label for r in records if r.workload == workload))
        size = size or (labels[0] if len(labels) == 1 else None)
        if size not in labels:
            raise ValueError(f"plot('case') needs size=, one of: {', '.join(labels)}")
        fig = case_figure([r for r in records if r.workload == workload and r.size_label == size], pairs)
    elif kind == "sweep":
        fig = sweep_figure(records, workload or "")
    else:
        fig = roofline_figure(records)
    show_in_notebooks()
    if fig is None:
        raise ValueError(f"nothing to draw for plot({kind!r}): "
                         + {"summary": "no valid result at that size",
                            "sweep": "fewer than three sizes measured",
                            "roofline": "no ceilings measured (run with roofline=True)"}.get(kind, ""))
    return fig


@styled
def roofline_figure(records: Sequence[Record]) -> Figure | None:
    """Records against the ceilings, one panel per device and dtype that has them."""
    table = ceilings(records)
    panels = [k for k, c in table.items() if c.peak_flops and c.bandwidth]
    if not panels:
        return None
    fig = Figure(figsize=(7.0 * len(panels), 5.0))
    axes = fig.subplots(1, len(panels), squeeze=False)
    for ax, key in zip(axes[0], panels):
        c = table[key]
        points = [r for r in records if is_valid(r) and ceiling_key(r) == key
                  and r.flops and r.bytes and not r.workload.startswith("ceiling_")]
        intensities = [r.flops / r.bytes for r in points] + [c.ridge]
        lo, hi = min(intensities) / 4, max(intensities) * 4
        xs = [lo * (hi / lo) ** (i / 100) for i in range(101)]
        ax.plot(xs, [min(c.peak_flops, x * c.bandwidth) / 1e9 for x in xs], color="#333333", lw=1.5)
        ax.annotate(plain(f"peak {format_rate(c.peak_flops, 'FLOP/s')} ({c.peak_by})"), (c.ridge, c.peak_flops / 1e9),
                    xytext=(-4, 6), textcoords="offset points", ha="right", va="bottom", fontsize=8)
        ax.annotate(plain(f"bandwidth {format_rate(c.bandwidth, 'B/s')} ({c.bandwidth_by})"),
                    (lo * 1.2, lo * 1.2 * c.bandwidth / 1e9), rotation=0, fontsize=8, va="bottom")
        seen: set[str] = set()
        for r in sorted(points, key=config_sort_key):
            label = plain(r.config_label) if r.config_label not in seen else None
            seen.add(r.config_label)
            ax.scatter(r.flops / r.bytes, r.flops / r.median_s / 1e9, color=PALETTE.get(r.backend, "#8172b2"),
                       marker="s" if r.device == "gpu" else "o", s=22, label=label, zorder=3)
            ax.annotate(plain(f"{r.workload} {r.size_label}"), (r.flops / r.bytes, r.flops / r.median_s / 1e9),
                        xytext=(3, 2), textcoords="offset points", fontsize=6, color="#555555")
        log_axis(ax, "x")
        log_axis(ax, "y")
        ax.set_xlabel("arithmetic intensity (FLOP per byte moved, log)")
        ax.set_ylabel("achieved GFLOP/s (log)")
        ax.set_title(f"Roofline — {key[1].upper()}, {key[2]}" + (f" @ {key[0]}" if key[0] else ""))
        ax.legend(fontsize=8, frameon=False, loc="lower right")
        ax.grid(True, which="major", alpha=0.25)
    return fig


def size_axis_label(workload: str) -> str:
    """The size axis in the workload's own words (``size n: the side of each n x n matrix``), or ``size n``."""
    from ..workloads.registry import REGISTRY

    known = REGISTRY.get(workload)
    means = getattr(known, "size_means", "") if known is not None else ""
    return f"size n: {means}" if means else "size n"


@styled
def sweep_figure(records: Sequence[Record], workload: str) -> Figure | None:
    """One workload across sizes; returns None if fewer than three sizes were measured."""
    mine = [r for r in records if r.workload == workload and is_valid(r)]
    if len({r.size for r in mine}) < 3:
        return None
    rate = all(r.flops == 0 and (r.bytes or 0) > 0 for r in mine)  # a transfer: its rate, not its time
    by_config: dict[tuple, list[Record]] = {}
    for r in sorted(mine, key=lambda r: r.size):
        by_config.setdefault(config_sort_key(r), []).append(r)
    fig = Figure(figsize=(7.5, 4.6))
    ax = fig.subplots()
    for i, key in enumerate(sorted(by_config)):
        rs = by_config[key]
        xs = [r.size for r in rs]
        # A rate is bytes over time: the interval's slow end is its low one.
        shown = (lambda r, s: r.bytes / s / 1e9) if rate else (lambda r, s: s)
        ys = [shown(r, r.median_s) for r in rs]
        ends = [sorted((shown(r, r.ci_low_s or r.median_s), shown(r, r.ci_high_s or r.median_s))) for r in rs]
        colour = PALETTE.get(rs[0].backend, "#8172b2")
        style = "--" if rs[0].device == "gpu" else (":" if rs[0].mode != "latency" else "-")
        ax.plot(xs, ys, style, marker=MARKERS[i % len(MARKERS)], ms=4, color=colour, label=plain(rs[0].config_label))
        ax.fill_between(xs, *zip(*ends), color=colour, alpha=0.15, linewidth=0)
    log_axis(ax, "x")
    log_axis(ax, "y", "number" if rate else "seconds")
    ax.set_xlabel(size_axis_label(workload))
    ax.set_ylabel("GB/s moved (log), higher is better" if rate else "time per call (log), lower is better")
    ax.set_title(plain(f"{workload} across sizes, {mine[0].dtype}"))
    for c in crossovers(mine):
        if c.kind == "from" and c.b.startswith("NumPy CPU") and c.size:
            ax.axvline(c.size, color="#777777", lw=0.8, ls=":")
            ax.annotate(plain(f"{c.a} ahead\nfrom n≈{c.size:,.0f}"), (c.size, ax.get_ylim()[1]), xytext=(3, -3),
                        textcoords="offset points", fontsize=7, va="top", color="#444444")
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(True, which="major", alpha=0.25)
    return fig
