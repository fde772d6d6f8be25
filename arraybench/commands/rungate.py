"""``run --compare REF --fail-above N``: the finished run judged against a stored one in the same
command (as ``asv continuous``), by the gate ``compare --fail-above`` uses."""

from __future__ import annotations

import argparse
import sys

from .. import api
from ..errors import UsageError
from ..model.results import Results
from ..render.terminal import console as safe_console
from .storeargs import store_location


def gate_reference(args: argparse.Namespace) -> str | None:
    """``--compare REF``, checked before anything is measured: a run id must name a stored run."""
    reference = getattr(args, "compare", None)
    if getattr(args, "fail_above", None) is not None and reference is None:
        raise UsageError("--fail-above gates against a stored run: add --compare last (or a run id)")
    if reference is None:
        return None
    from ..pytest.baseline import check_choice, check_named
    from ..store import open_store

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


def run_gate(args: argparse.Namespace, results: Results, reference: str) -> int:
    """The finished run against ``reference``: the comparison printed, then ``--fail-above``'s
    verdict (0: passes or no gate)."""
    from ..pytest.baseline import find
    from ..render.comparison import print_comparison
    from ..store import open_store
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
    if not quiet:
        console = safe_console()
        console.print(line, markup=False, highlight=False)
        print_comparison(comparison, console, [])
    return gate(comparison, args.fail_above) if args.fail_above is not None else 0
