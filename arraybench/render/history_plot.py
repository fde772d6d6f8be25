"""History plots: one workload's medians over the stored runs, one panel per size.

Each series (a configuration on a machine) is a line through its medians with the 95% CI as a
whisker; runs are evenly spaced in time order (dates under the axis), a change of library
versions on a machine is a dotted vertical line labelled with what changed, and each step called
in the history is a triangle: up and red for slower, down and green for faster.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .mpl import PALETTE, Figure, log_axis, save, styled
from .naming import history_file_name

if TYPE_CHECKING:
    from ..analysis.history import History


def _short_date(started_at: str) -> str:
    return started_at[:16].replace("T", " ")


@styled
def history_figure(history: "History", workload: str) -> Figure | None:
    """The history of one workload, or None when no series of it has a valid point."""
    series = [s for s in history.for_workload(workload) if any(p.valid for p in s.points)]
    if not series:
        return None
    sizes = list(dict.fromkeys(s.size_label for s in sorted(series, key=lambda s: s.size)))
    x_of = {run.run_id: i for i, run in enumerate(history.runs)}
    used = sorted({x_of[p.run.run_id] for s in series for p in s.points})
    machines = {s.machine_id for s in series}
    fig = Figure(figsize=(max(7.0, 0.5 * len(used) + 4), 3.0 * len(sizes) + 1.0))
    axes = fig.subplots(len(sizes), 1, squeeze=False, sharex=True)[:, 0]
    steps = {(id(st.series), st.after.run.run_id): st for st in history.steps}
    markers = "osD^v<>p"
    for ax, label in zip(axes, sizes):
        mine = [s for s in series if s.size_label == label]
        for i, s in enumerate(mine):
            pts = [p for p in s.points if p.valid]
            xs = [x_of[p.run.run_id] for p in pts]
            ys = [p.median_s for p in pts]
            err = [[max(p.median_s - p.low, 0) for p in pts], [max(p.high - p.median_s, 0) for p in pts]]
            colour = PALETTE.get(pts[0].entry.backend, "#8172b2") if pts else "#8172b2"
            name = s.label + (f" @ {s.machine_id[:6]}" if len(machines) > 1 else "")
            ax.errorbar(xs, ys, yerr=err, fmt="-", marker=markers[i % len(markers)], ms=4, capsize=2,
                        color=colour, lw=1, label=name)
            for p in pts:
                step = steps.get((id(s), p.run.run_id))
                if step is not None:
                    ax.scatter([x_of[p.run.run_id]], [p.median_s], marker="^" if step.slower else "v",
                               s=90, color="#cf222e" if step.slower else "#1a7f37", zorder=4)
        log_axis(ax, "y", "seconds")
        ax.set_ylabel("time per call (log)")
        ax.set_title(f"{workload} {mine[0].case}" if mine else workload, fontsize=10)
        ax.grid(True, axis="y", which="major", alpha=0.25)
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    for change in history.version_changes:
        if change.machine_id not in machines or change.run.run_id not in x_of:
            continue
        x = x_of[change.run.run_id] - 0.5
        for ax in axes:
            ax.axvline(x, color="#777777", lw=0.8, ls=":")
        axes[0].annotate(change.text, (x, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -2),
                         textcoords="offset points", fontsize=6, color="#444444", va="top",
                         rotation=90)
    axes[-1].set_xticks(used)
    axes[-1].set_xticklabels([_short_date(history.runs[i].started_at) for i in used], rotation=30,
                             ha="right", fontsize=7)
    axes[-1].set_xlabel("run (time order) · dotted: library versions changed · ▲ slower, ▼ faster: "
                        "a step called", fontsize=7, color="#555555")
    return fig


def write_history_plots(history: "History", out_dir: Path) -> list[Path]:
    """``history_<workload>.svg`` for every workload in the history; returns the files written."""
    written = []
    for workload in dict.fromkeys(s.workload for s in history.series):
        fig = history_figure(history, workload)
        if fig is not None:
            written.append(save(fig, Path(out_dir) / history_file_name(workload)))
    return written
