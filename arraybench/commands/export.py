"""``arraybench export RESULTS --format github|bencher``: github-action-benchmark's
``customSmallerIsBetter`` JSON or Bencher Metric Format, on stdout or to ``-o FILE`` (docs/history.md)."""

from __future__ import annotations

import argparse

from . import add, store_location


def register(sub: argparse._SubParsersAction) -> None:
    from ..render.files import FORMATS

    p = sub.add_parser("export", help="results as JSON for github-action-benchmark or Bencher",
                       description="Write a run's results in a format other tools read: "
                                   "github-action-benchmark (customSmallerIsBetter) or Bencher "
                                   "Metric Format. Times are nanoseconds per call.")
    p.add_argument("results", metavar="RUN", help="a results.json or the folder holding it, or a stored "
                                                  "run's id, last or last~N")
    p.add_argument("--format", required=True, choices=FORMATS,
                   help="github: github-action-benchmark customSmallerIsBetter; bencher: Bencher Metric Format")
    p.add_argument("--output", "-o", default=None, metavar="FILE", help="write here (default: stdout)")
    add(p, "store", what="that run ids, last and last~N are looked up in")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    import sys

    from ..errors import UsageError
    from ..files import write_atomic
    from ..store.refs import load_run
    from ..render.files import export_text

    # Named as every other command names a run: a folder, a file, or one in the store.
    text = export_text(load_run(args.results, store_location(args)), args.format)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        # The user named this file: a device, pipe or link there is written through, not replaced.
        write_atomic(args.output, text, through=True)
    except OSError as exc:
        raise UsageError(f"{args.output}: cannot write there ({exc.strerror or exc})") from None
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
