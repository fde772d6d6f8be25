"""What is here: ``arraybench info``, the machine, the libraries, and which backends work (each asked
in its own worker, ``probe``: the parent never imports torch, jax or cupy); ``arraybench doctor``,
whether timing, sync, precision and the GPU behave; ``arraybench list``, the workloads, their sizes
and what each measures."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import printable
from ..options import csv_list, positive_float
from . import add


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list workloads, their sizes and what each measures")
    add(p, "workload_files", help="also list the workloads of a Python file (repeatable)")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(handler=list_main)
    p = sub.add_parser("info", help="Python, libraries, BLAS, threads, CPU, GPUs, and which backends work")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="list the nodes of the Ray cluster at ADDRESS instead: their machines "
                        "(fingerprints) and which are free (docs/cluster.md)")
    p.set_defaults(handler=main)
    _register_doctor(sub)


def cluster_main(args: argparse.Namespace) -> int:
    """``info --cluster``: each node, asked on the node itself."""
    from ..executors import cluster_nodes
    from ..render.terminal import nodes_json, nodes_table
    from ..render.terminal import console as safe_console

    nodes = cluster_nodes(args.cluster)
    if args.json:
        print(json.dumps({"cluster": args.cluster, "nodes": nodes_json(nodes)}, indent=1, default=str))
    else:
        safe_console(width=max(safe_console().width, 120)).print(nodes_table(nodes, args.cluster))
    return 0


def project_defaults(project: Any) -> dict[str, Any]:
    """The project file and its options as ``info`` shows them, a store URL's password redacted."""
    return {"file": str(project.source) if project and project.source else None,
            "options": {k: _redacted(v) for k, v in project.spelled.items()} if project else {}}


def _redacted(value: object) -> object:
    """A project option's value as shown: passwords in it (a store URL's) replaced by ``***``."""
    from ..store.database import redact

    if isinstance(value, str):
        return redact(value, value)
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


def main(args: argparse.Namespace) -> int:
    if getattr(args, "cluster", None):
        return cluster_main(args)
    from ..executors.probe import probe_backends
    from ..host.machine import collect as collect_machine
    from ..render.terminal import print_info
    from ..render.terminal import stdout_console

    env = collect_machine()
    backends_state = probe_backends()
    defaults = project_defaults(getattr(args, "project", None))
    if args.json:
        print(json.dumps({"environment": env, "backends": backends_state,
                          "project_defaults": defaults}, indent=1, default=str))
        return 0
    console = stdout_console()
    print_info(env, backends_state, defaults, console)
    return 0


def _register_doctor(sub: argparse._SubParsersAction) -> None:
    from ..backends import DEVICES, SPECS

    p = sub.add_parser("doctor", help="check that timing (against each library's own timer), sync, precision, "
                                      "memory, clocks and transfers behave on this machine (run it first on a GPU)")
    p.add_argument("--backends", type=csv_list, default=list(SPECS), metavar="LIST",
                   help=f"libraries to check (default: all: {','.join(SPECS)})")
    p.add_argument("--devices", type=csv_list, default=list(DEVICES), metavar="LIST",
                   help=f"devices to check (default: all: {','.join(DEVICES)})")
    p.add_argument("--timeout", type=positive_float, default=120.0, metavar="SECONDS",
                   help="stop one library's checks after this long, its start included (default: 120)")
    p.add_argument("--json", action="store_true", help="one JSON object per check, one a line")
    p.set_defaults(handler=doctor)


def doctor(args: argparse.Namespace) -> int:
    """``arraybench doctor``: each check, run in the libraries' own workers."""
    from ..backends import DEVICES, SPECS
    from ..errors import UsageError
    from ..executors.probe import configs as doctor_configs, main as doctor
    from ..plan import check_choices

    backends = check_choices("backend", args.backends, SPECS)
    devices = check_choices("device", args.devices, DEVICES)
    if not doctor_configs(backends, devices):
        raise UsageError("the selection gives nothing to check (check --backends against --devices)")
    return doctor(backends, devices, args.timeout, json_lines=args.json)


def catalog(workload_files: list[str] = ()) -> tuple[list[dict[str, Any]], list[str]]:
    """Every known workload (name, sizes, what it measures, its check, its work per call), and the files that did not load."""
    from ..workloads.registry import REGISTRY
    from ..workloads.userfile import load_files

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
    from ..render.terminal import stdout_console

    entries, errors = catalog(args.workload_files)
    for error in errors:
        print(f"arraybench: {printable(error)}", file=sys.stderr)
    if args.json:
        print(json.dumps(entries, indent=1))
    else:
        print_catalog(entries, stdout_console())
    return 1 if errors else 0
