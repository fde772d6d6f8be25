"""``run --compare REF --fail-above N``: the finished run judged against a stored one in the same
command (as ``asv continuous``), by the gate ``compare --fail-above`` uses."""

from __future__ import annotations

import argparse
import sys

from .. import api
from ..model.results import Results
from ..units import format_ratio
from ..errors import UsageError
from ..render.terminal import console as safe_console
from ..options import store_location


def gate_reference(args: argparse.Namespace) -> str | None:
    """``--compare REF``, checked before anything is measured: a run id must name a stored run."""
    reference = getattr(args, "compare", None)
    against = getattr(args, "against", None)
    if against is not None and reference is not None:
        raise UsageError("--against REF measures its own baseline beside this code; --compare names a stored "
                         "one: give one of them")
    if getattr(args, "fail_above", None) is not None and reference is None and against is None:
        raise UsageError("--fail-above gates against a baseline: add --against REF (measured beside this code, "
                         "in this run) or --compare last (a stored run)")
    if reference is None:
        return None
    from ..store import open_store
    from ..store.baseline import check_choice, check_named

    try:
        check_choice(reference)
    except UsageError:
        raise UsageError(f"--compare {reference!r} is not last, last~N or a run id "
                         "(arraybench store list shows them)") from None
    with open_store(store_location(args)) as opened:
        try:
            check_named(opened, reference)
        except UsageError as exc:
            raise UsageError(str(exc).replace("--arraybench-compare=", "--compare ")) from None
    return reference


def against_gate(args: argparse.Namespace, results: Results) -> int:
    """``run --against REF --fail-above N``: 1 (with a line per reason) where the work tree's code
    is slower than REF's by more than N with 95% confidence, from the pairs measured side by side."""
    from ..analysis.pairs import against_regressions
    from ..host.against import HERE

    if args.fail_above is None:
        return 0
    slower, undecided = against_regressions(results.pairs, HERE, args.fail_above)
    for p in undecided:
        # Where the pair was not judged (loaded rounds the quiet ones do not bear out), more
        # processes on the same busy machine need not decide it: its reason is the line's.
        why = f"not judged: {p.not_judged}" if p.not_judged else "more processes (--processes) would decide it"
        print(f"arraybench: {p.a_label} against {p.b_label}: undecided ({p.ratio:.2f}x, 95% interval "
              f"{p.ci_low:.2f}-{p.ci_high:.2f}); {why}", file=sys.stderr)
    for p in slower:
        print(f"arraybench: {p.a_label} is {format_ratio(p.ratio)} the time of {p.b_label} (95% interval "
              f"{p.ci_low:.2f}-{p.ci_high:.2f}), above --fail-above {args.fail_above:.0%}", file=sys.stderr)
    compared = sum(1 for p in results.pairs if (p.a.environment == HERE) != (p.b.environment == HERE))
    if not compared:
        print("arraybench: --fail-above: no cell was measured on both sides of --against", file=sys.stderr)
        return 1
    return 1 if slower else 0


def run_gate(args: argparse.Namespace, results: Results, reference: str) -> int:
    """The finished run against ``reference``: the comparison printed, then ``--fail-above``'s
    verdict (0: passes or no gate)."""
    from ..store import open_store
    from ..store.baseline import find
    from ..store.refs import run_line
    from ..render.comparison import print_comparison
    from .compare import gate

    with open_store(store_location(args)) as opened:
        base, line = find(opened, reference, results)
    line = line.replace("--arraybench-compare=", "--compare ").replace(
        " (--arraybench-save stores this one)", "; the next run compares with this one")
    quiet = args.quiet or args.json
    if base is None:
        print(f"arraybench: {line}", file=sys.stderr)
        return 1 if args.fail_above is not None else 0
    comparison = api.compare(base, results)
    _name_the_runs(args, base, results)
    if not quiet:
        console = safe_console()
        console.print(line, markup=False, highlight=False)
        for named in (run_line("base", base, console.width), run_line("new", results, console.width)):
            console.print(named, markup=False, highlight=False, soft_wrap=True)
        print_comparison(comparison, console, [])
    return gate(comparison, args.fail_above) if args.fail_above is not None else 0


def _name_the_runs(args: argparse.Namespace, base: Results, new: Results) -> None:
    """With ``--json``, which two runs were compared, as one JSON line after the records: a script
    gating on the comparison can tell which stored run ``last`` was."""
    if not getattr(args, "json", False):
        return
    import json

    from ..store.refs import run_fields

    print(json.dumps({"compared": {"base": run_fields(base), "new": run_fields(new)}}), flush=True)
