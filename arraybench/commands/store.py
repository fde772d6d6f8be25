"""``arraybench store``: ``import`` adds earlier runs' folders, ``list`` shows what the store holds.
Importing is idempotent, each run whole or not at all; a folder that cannot be read, or a copy that
lacks measurements the stored run holds, is one line (status 2 at the end), the others imported."""

from __future__ import annotations

import argparse
import sys

from . import add, store_location


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("store", help="the results store: import earlier runs, list what it holds",
                       description="The results store every run is appended to (SQLite in your data "
                                   "folder by default, or a postgresql:// URL).")
    actions = p.add_subparsers(dest="store_action", metavar="ACTION", parser_class=type(p))
    actions.required = True
    imp = actions.add_parser("import", help="add runs' folders (or results.json files) to the store",
                             description="Add earlier runs to the store. Idempotent: a run already "
                                         "stored is left as it is.")
    imp.add_argument("runs", nargs="+", metavar="DIR", help="a run's output folder or its results.json")
    add(imp, "store", what="to add to")
    imp.set_defaults(handler=import_main)
    lst = actions.add_parser("list", help="the runs in the store, oldest first",
                             description="List the runs in the store, oldest first.")
    add(lst, "store", what="to read")
    lst.add_argument("--machine", default=None, metavar="ID", help="only this machine (an id prefix)")
    lst.add_argument("--json", action="store_true", help="one JSON object per run, one a line")
    lst.set_defaults(handler=list_main)


def import_main(args: argparse.Namespace) -> int:
    from ..errors import UsageError, one_line
    from ..model.results import load, resolve
    from ..store import open_store

    failed = refused = 0
    counts: dict[str, int] = {}
    with open_store(store_location(args)) as store:
        for given in args.runs:
            path = resolve(given)
            try:
                results = load(path)
            except UsageError as exc:
                print(f"arraybench: error: {exc}", file=sys.stderr)
                failed += 1
                continue
            added = store.add(results, source=str(path.parent.resolve()))
            counts[added.outcome] = counts.get(added.outcome, 0) + 1
            detail = f", {added.records} records" if added.records else ""
            note = {"not a run": "; a merge of runs: import the runs themselves",
                    "kept": "; the store holds it complete, this copy is not",
                    "refused": "; the store holds another run with this id, with measurements this "
                               "copy lacks: it is left as it is"}.get(added.outcome, "")
            refused += added.outcome == "refused"
            print(one_line(f"{given}: {added.outcome} (run {added.run_id}{detail}{note})"),
                  file=sys.stderr if added.outcome == "refused" else sys.stdout)
        total = ", ".join(f"{n} {what}" for what, n in counts.items()) or "nothing imported"
        print(f"store {store.describe()}: {total}" + (f"; {failed} could not be read" if failed else ""))
    return 2 if failed or refused else 0


def list_main(args: argparse.Namespace) -> int:
    from ..render.terminal import runs_table
    from ..store import open_store
    from ..render.terminal import stdout_console

    with open_store(store_location(args), create=False) as store:
        runs = store.runs(machine=args.machine)
        where = store.describe()
        for note in store.notes:  # rows of the wrong shape: skipped, said
            print(f"arraybench: warning: {note}", file=sys.stderr)
    if args.json:
        import dataclasses
        import json

        for run in runs:
            print(json.dumps(dataclasses.asdict(run)))
        return 0
    console = stdout_console()
    console.print(runs_table(runs, where, console.width))
    return 0
