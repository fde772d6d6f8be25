"""``arraybench info``: the machine, the libraries, and which backends work here and why not."""

from __future__ import annotations

import argparse
import json

from rich.console import Console


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="Python, libraries, BLAS, threads, CPU, GPUs, and which backends work")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from ..probe import probe_backends
    from .. import environment

    env = environment.collect()
    backends_state = probe_backends()
    if args.json:
        print(json.dumps({"environment": env, "backends": backends_state}, indent=1))
        return 0
    console = Console()
    console.print(f"[bold]arraybench {env['arraybench']}[/] on Python {env['python']} ({env['platform']})")
    console.print(f"CPU: {env['cpu_model']}, {env['cpu_count']} logical cores "
                  f"({env['cpus_available']} available), {env['memory_gib']} GiB")
    console.print("GPUs: " + (", ".join(g["name"] for g in env["gpus"]) or "none found (no nvidia-smi)"))
    for name, state in backends_state.items():
        usable = state["usable"]
        mark = "[green]usable[/]" if usable else "[dim]not usable[/]"
        console.print(f"[bold]{name}[/] {state.get('version') or ''}: {mark}")
        for dev, reason in state["devices"].items():
            console.print(f"   {dev}: " + ("[green]ok[/]" if reason is None else f"[dim]{reason}[/]"))
        for key in ("blas", "torch_blas", "torch_threads", "affinity_cpus", "device_name"):
            if state.get("info", {}).get(key) is not None:
                console.print(f"   {key}: {state['info'][key]}")
    return 0
