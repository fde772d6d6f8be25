"""What is here: ``info`` (the machine, the libraries and which backends work, each asked in its own worker so
that the parent never imports torch, jax or cupy), ``doctor``, ``numerics`` (each library's error against the
float64 reference, each cell measured briefly: the time is not the point) and ``list`` (the workloads)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .. import api
from ..backends import DEVICES, SPECS
from ..errors import UsageError, printable
from ..executors import cluster_nodes
from ..executors.session import Interrupted
from ..files import write_atomic
from ..host.machine import collect as collect_machine
from ..options import csv_list, positive_float
from ..plan import check_choices
from ..render.files import FOOTNOTE, numerics_markdown, numerics_table
from ..render.terminal import console as safe_console, nodes_json, nodes_table, print_info, stdout_console
from ..store.database import redact
from ..workloads.registry import REGISTRY
from ..workloads.userfile import load_files
from . import SUMMARY, add
from .run import reporter_for


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("numerics", help=SUMMARY["numerics"],
                       description="Run the workloads briefly in each dtype and tabulate each library's "
                                   "error against the NumPy float64 reference.")
    add(p, "backends")
    add(p, "devices")
    p.add_argument("--workloads", type=csv_list, default=["numerics"], metavar="LIST",
                   help="workloads or groups (default: numerics = the seed's five and stats)")
    add(p, "workload_files")
    p.add_argument("--sizes", default="small,large", metavar="LIST")
    p.add_argument("--dtype", type=csv_list, dest="dtypes", default=["float64", "float32"], metavar="LIST",
                   help="dtypes to compare (default: float64,float32)")
    p.add_argument("--output-dir", "-o", default="numerics", metavar="DIR")
    add(p, "overwrite")
    add(p, "quiet")
    p.set_defaults(handler=numerics, json=False)
    p = sub.add_parser("list", help=SUMMARY["list"])
    add(p, "workload_files", help="also list the workloads of a Python file (repeatable)")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(handler=list_main)
    p = sub.add_parser("info", help=SUMMARY["info"])
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="list the nodes of the Ray cluster at ADDRESS instead: their machines "
                        "(fingerprints) and which are free (docs/cluster.md)")
    p.set_defaults(handler=main)
    p = sub.add_parser("doctor", help=SUMMARY["doctor"])
    p.add_argument("--backends", type=csv_list, default=list(SPECS), metavar="LIST",
                   help=f"libraries to check (default: all: {','.join(SPECS)})")
    p.add_argument("--devices", type=csv_list, default=list(DEVICES), metavar="LIST",
                   help=f"devices to check (default: all: {','.join(DEVICES)})")
    p.add_argument("--timeout", type=positive_float, default=120.0, metavar="SECONDS",
                   help="stop one library's checks after this long, its start included (default: 120)")
    p.add_argument("--json", action="store_true", help="one JSON object per check, one a line")
    p.set_defaults(handler=doctor)


def project_defaults(project: Any) -> dict[str, Any]:
    """The project file and its options as ``info`` shows them, a store URL's password redacted."""
    return {"file": str(project.source) if project and project.source else None,
            "options": {k: _redacted(v) for k, v in project.spelled.items()} if project else {}}


def _redacted(value: object) -> object:
    """A project option's value as shown: passwords in it (a store URL's) replaced by ``***``."""
    if isinstance(value, str):
        return redact(value, value)
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


def main(args: argparse.Namespace) -> int:
    if getattr(args, "cluster", None):  # each node, asked on the node itself
        nodes = cluster_nodes(args.cluster)
        if args.json:
            print(json.dumps({"cluster": args.cluster, "nodes": nodes_json(nodes)}, indent=1, default=str))
        else:
            safe_console(width=max(safe_console().width, 120)).print(nodes_table(nodes, args.cluster))
        return 0
    from ..executors.probe import probe_backends

    env = collect_machine()
    backends_state = probe_backends()
    defaults = project_defaults(getattr(args, "project", None))
    if args.json:
        print(json.dumps({"environment": env, "backends": backends_state,
                          "project_defaults": defaults}, indent=1, default=str))
        return 0
    print_info(env, backends_state, defaults, stdout_console())
    return 0


def doctor(args: argparse.Namespace) -> int:
    """``arraybench doctor``: each check, run in the libraries' own workers."""
    from ..executors.probe import configs as doctor_configs, main as doctor

    backends = check_choices("backend", args.backends, SPECS)
    devices = check_choices("device", args.devices, DEVICES)
    if not doctor_configs(backends, devices):
        raise UsageError("the selection gives nothing to check (check --backends against --devices)")
    return doctor(backends, devices, args.timeout, json_lines=args.json)


def catalog(workload_files: list[str] = ()) -> tuple[list[dict[str, Any]], list[str]]:
    """Every known workload (name, sizes, what it measures, its check, its work per call), and the files not loaded."""
    loaded = load_files(list(workload_files))
    out = []
    for name, wl in REGISTRY.items():
        work, settings = {}, {}
        for label, n in wl.sizes.items():
            try:  # the user's params= and work= run here; one that raises is left out of the list
                settings[label] = wl.params_for(n)
                w = wl.work_for(n, 8, settings[label])  # float64, the default dtype
            except Exception:
                continue
            if w is not None:
                work[label] = {"flops": w.flops, "bytes": w.bytes}
        out.append({
            "name": name,
            "description": wl.description,
            "sizes": dict(wl.sizes),
            "check": wl.check.kind,
            "gradient": wl.grad,
            "namespace": wl.namespace,
            "work_float64": work,
            "params": {k: v for k, v in settings.items() if v},
            "mutates": list(wl.mutates),
            "source": wl.source if wl.source == "builtin" else wl.origin(),
        })
    return out, list(loaded.errors.values())


def list_main(args: argparse.Namespace) -> int:
    """``arraybench list``: the catalog as a table, or as JSON."""
    from ..render.tables import print_catalog

    entries, errors = catalog(args.workload_files)
    for error in errors:
        print(f"arraybench: {printable(error)}", file=sys.stderr)
    if args.json:
        print(json.dumps(entries, indent=1))
    else:
        print_catalog(entries, stdout_console())
    return 1 if errors else 0


def numerics(args: argparse.Namespace) -> int:
    """``arraybench numerics``: a brief run per dtype, and the table of errors."""
    workloads = args.workloads
    if args.workload_files and workloads == ["numerics"]:
        workloads = None  # the files' own workloads, as `run --workload-files` does
    code = 0
    try:
        results = api.numerics(workloads, dtype=args.dtypes, sizes=args.sizes,
                               backends=args.backends, devices=args.devices,
                               workload_files=args.workload_files, output_dir=args.output_dir,
                               overwrite=args.overwrite, reporter=reporter_for(args))
    except Interrupted as stop:
        results, code = stop.results, stop.exit_code
        print(f"arraybench: stopped by {stop}; the table shows what was measured", file=sys.stderr)
    out = results.output_dir
    if out is not None:
        write_atomic(out / "numerics.md", numerics_markdown(results.records))
    if not args.quiet:
        console = stdout_console(160)
        console.print(numerics_table(results.records))
        console.print(f"[dim]{FOOTNOTE}[/]")  # what the table's marks mean
        if out is not None:
            console.print(f"numerics: {out / 'numerics.md'}; results per dtype in {out}/<dtype>/results.json")
    return code
