"""``arraybench merge RUN... -o DIR``: several runs (machines) as one report, the machine a dimension,
each run labelled by its folder's name or ``LABEL=DIR``; each machine's settings stay with its records."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("merge", help="one report for several runs (machines), the machine a dimension",
                       description="Merge runs from several machines into one results.json and report, "
                                   "with the machine as a dimension and findings across machines.")
    p.add_argument("runs", nargs="+", metavar="[LABEL=]DIR",
                   help="a run's output folder (or results.json); LABEL names its machine (default: "
                        "the folder's name)")
    p.add_argument("--output-dir", "-o", default="merged", metavar="DIR",
                   help="where the merged results and report go (default: merged)")
    p.add_argument("--no-plots", action="store_true", help="skip the SVG plots")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.set_defaults(handler=main)


def split_label(text: str) -> tuple[str | None, str]:
    """``laptop=runs/a`` -> ("laptop", "runs/a"); a plain path has no label."""
    label, sep, path = text.partition("=")
    if sep and label and "/" not in label and not Path(text).exists():
        return label, path
    return None, text


def main(args: argparse.Namespace) -> int:
    from .. import api
    from ..errors import one_line
    from ..model.runs import same_machine_notes
    from ..model.results import load, resolve
    from ..render import report
    from ..render.terminal import stdout_console

    pairs = [split_label(t) for t in args.runs]
    runs = [load(resolve(path)) for _, path in pairs]
    merged = api.merge(runs, labels=[label for label, _ in pairs], output_dir=args.output_dir,
                       plots=not args.no_plots)
    labels = list(merged.settings["machines"])  # one per run, in order
    for note in same_machine_notes(runs, labels):
        print(f"arraybench: note: {one_line(note)}", file=sys.stderr)  # labels are the user's, shown escaped
    if not args.quiet:
        console = stdout_console()
        report.show(merged, console)
        out = merged.output_dir
        console.print(f"merged {len(runs)} runs ({', '.join(labels)}) into {out / 'results.json'}; "
                      f"report: {out / 'report.html'}", soft_wrap=True, markup=False, highlight=False)
    return 0
