"""The machine and its software in words: ``arraybench info``, and the environment section of a
report.

This machine and its libraries, as ``arraybench info`` prints them: the machine, which backends
work on which device (or why not), how each library sees its BLAS and threads, and the project's
defaults.

A run's machine, libraries and settings as text: one line under a Markdown heading, or the rows
of the HTML report's Environment section.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, TYPE_CHECKING, Iterable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .notes import knobs_text, library_kernels, kernel_rows
from ..backends import DEVICES, SPECS
from ..model.machines import describe

if TYPE_CHECKING:
    from ..model.results import Results


def print_info(env: Mapping[str, Any], state: Mapping[str, Any], defaults: Mapping[str, Any],
               console: Console) -> None:
    """The machine, the backends, what each library reported, and the project defaults."""
    console.print(machine_table(env, state))
    console.print(backends_table(state))
    console.print(details_table(state))
    console.print(defaults_text(defaults), soft_wrap=True, markup=False, highlight=False)


def defaults_text(defaults: Mapping[str, Any]) -> str:
    """Each option default [tool.arraybench] changes, and the file, or that there are none."""
    if not defaults["options"]:
        where = f" in {defaults['file']}" if defaults["file"] else ""
        return f"project defaults: none ([tool.arraybench]{where} sets no option)"
    lines = [f"project defaults from {defaults['file']} [tool.arraybench] (the command line wins):"]
    lines += [f"  {k} = {v!r}" for k, v in defaults["options"].items()]
    return "\n".join(lines)


def machine_table(env: Mapping[str, Any], state: Mapping[str, Any]) -> Table:
    """Python, platform, CPU, memory, GPUs, threads and library versions."""
    t = Table(title=f"arraybench {env.get('arraybench')}", title_justify="left", show_header=False,
              pad_edge=False, box=None)
    t.add_column(style="bold", no_wrap=True)
    t.add_column(overflow="fold")
    t.add_row("Python", f"{env['python']} ({env['python_implementation']})")
    t.add_row("platform", env["platform"])
    cores = f"{env['cpu_count']} logical"
    if env.get("cpu_physical_cores"):
        cores += f", {env['cpu_physical_cores']} physical"
    cores += f"; {env['cpus_available']} available to arraybench"
    t.add_row("CPU", f"{env['cpu_model']} ({cores})")
    if env.get("memory_gib"):
        t.add_row("memory", f"{env['memory_gib']} GiB")
    t.add_row("GPUs", gpu_text(env, state))
    if env.get("machine_id"):
        t.add_row("machine id", f"{env['machine_id']} (history and compare tell machines apart by it)")
    t.add_row("threads", threads_text(env))
    t.add_row("kernel variables", knobs_text(env.get("kernel_env")))
    fp = env.get("fingerprint") or {}
    if fp.get("cpu_isa"):
        t.add_row("CPU features", " ".join(fp["cpu_isa"]))
    libs = env.get("libraries") or {}
    t.add_row("libraries", ", ".join(f"{k} {v}" for k, v in libs.items() if v) or "none")
    missing = [k for k, v in libs.items() if not v]
    if missing:
        t.add_row("not installed", ", ".join(missing))
    return t


def gpu_text(env: Mapping[str, Any], state: Mapping[str, Any]) -> str:
    """The GPUs nvidia-smi lists, or those a backend opened, or why none were found."""
    found = [", ".join(str(g[k]) for k in ("name", "memory", "driver") if g.get(k))
             for g in env.get("gpus") or []]
    if found:
        return "; ".join(found)
    opened = {s["info"].get("device_name") for s in state.values()
              if s.get("devices", {}).get("gpu") is None and "gpu" in s.get("devices", {})
              and s.get("info", {}).get("device_name") not in (None, "cpu")}
    if opened:
        return ", ".join(sorted(opened))
    return "none found (no nvidia-smi, or it lists no GPU)"


def threads_text(env: Mapping[str, Any]) -> str:
    """The thread-limiting environment variables, or that there are none."""
    set_vars = env.get("thread_env") or {}
    if set_vars:
        return "set: " + ", ".join(f"{k}={v}" for k, v in set_vars.items())
    return ("no limit set (OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS unset): "
            "every library uses the available cores; `arraybench run --threads N` limits them all alike")


def linalg_text(info: Mapping[str, Any]) -> str:
    """BLAS and LAPACK as a library reports them ("" where it does not)."""
    if info.get("library") == "torch":
        parts = [f"{k} {info[f]}" for k, f in (("BLAS", "torch_blas"), ("LAPACK", "torch_lapack"))
                 if info.get(f)]
        detail = str(info.get("torch_blas_detail") or "")
        mkl = re.search(r"Math Kernel Library Version ([\w.]+)", detail)
        if mkl:
            detail = f"Intel oneAPI MKL {mkl.group(1).split('-')[0]}"
        text = ", ".join(parts)
        if detail:
            text += f": {detail}"
        return (text + " (torch.__config__; linked into torch, so threadpoolctl cannot see it)"
                if text else "")
    if info.get("library") == "numpy":
        parts = []
        if info.get("blas"):
            parts.append(f"BLAS {info['blas']} (loaded, per threadpoolctl)")
        if info.get("lapack"):
            parts.append(f"LAPACK {info['lapack']} (NumPy's build)")
        return "; ".join(parts)
    return ""


def pools_text(info: Mapping[str, Any]) -> str:
    """Thread pools in the library's process: its own settings and threadpoolctl's view."""
    parts = []
    if info.get("torch_threads") is not None:
        parts.append(f"torch {info['torch_threads']} intra-op, {info.get('torch_interop_threads')} inter-op")
    for p in info.get("threadpools") or []:
        parts.append(f"{p.get('internal_api')} ({p.get('prefix')}) {p.get('num_threads')}")
    if info.get("xla_flags"):
        parts.append(f"XLA_FLAGS={info['xla_flags']}")
    if info.get("affinity_cpus") is not None:
        parts.append(f"may run on {info['affinity_cpus']} CPUs")
    return " · ".join(parts)


def backends_table(state: Mapping[str, Any]) -> Table:
    """One row per backend: version, and each device usable or why not."""
    t = Table(title="backends (each asked in its own worker process)", title_justify="left",
              header_style="bold", pad_edge=False)
    t.add_column("library", no_wrap=True)
    t.add_column("version", no_wrap=True)
    for dev in DEVICES:
        t.add_column(dev.upper(), overflow="fold")
    for name, s in state.items():
        cells = []
        for dev in DEVICES:
            if dev not in s["devices"]:
                cells.append("[dim]—[/]")
            elif s["devices"][dev] is None:
                cells.append("[green]usable[/]")
            else:
                cells.append(f"[yellow]{escape(s['devices'][dev])}[/]")
        t.add_row(SPECS[name].label if name in SPECS else name, s.get("version") or "not installed", *cells)
    return t


def details_table(state: Mapping[str, Any]) -> Table:
    """BLAS/LAPACK and thread pools of every usable backend, as its worker reported them."""
    t = Table(show_header=False, box=None, pad_edge=False, title="as each library sees itself",
              title_justify="left")
    t.add_column(style="bold", no_wrap=True)
    t.add_column(no_wrap=True, style="dim")
    t.add_column(overflow="fold")
    for name, s in state.items():
        info = s.get("info") or {}
        if not info:
            continue
        label = SPECS[name].label if name in SPECS else name
        rows = [("BLAS/LAPACK", linalg_text(info)), ("kernels", library_kernels(info)),
                ("threads", pools_text(info))]
        if info.get("device_name") and info.get("device_name") != "cpu":
            rows.append(("device", str(info["device_name"])))
        for key in ("platform", "x64", "matmul_precision", "allow_tf32", "reduced_precision_float32",
                    "cuda", "gpu_monitor", "numba", "metal_available", "gpu_dtypes_missing",
                    "mps_dtypes_missing"):
            if info.get(key) not in (None, ""):
                rows.append((key, str(info[key])))
        first = True
        for key, text in rows:
            if text:
                t.add_row(label if first else "", key, escape(text))
                first = False
    return t


def environment_line(environment: Mapping[str, Any], settings: Mapping[str, Any] | None = None,
                     backends: Iterable[str] | None = None) -> str:
    """One line naming the machine and libraries: ``CPU (2 cores) · Python 3.11 · NumPy 2.4 …``.

    ``backends`` limits the library versions to those the results used."""
    env = environment
    parts = []
    if env.get("cpu_model"):
        parts.append(f"{env['cpu_model']} ({env.get('cpu_count', '?')} cores)")
    gpus = [g.get("name") for g in env.get("gpus") or [] if isinstance(g, Mapping) and g.get("name")]
    if gpus:
        parts.append(", ".join(gpus))
    if env.get("python"):
        parts.append(f"Python {env['python']}")
    libs = env.get("libraries") or {}
    wanted = set(SPECS if backends is None else backends)
    versions = [f"{SPECS[n].label} {libs[n]}" for n in SPECS
                if n in wanted and isinstance(libs, Mapping) and libs.get(n)]
    if versions:
        parts.append(", ".join(versions))
    if env.get("blas"):
        parts.append(f"BLAS {env['blas']}")
    if settings and settings.get("dtype"):
        parts.append(str(settings["dtype"]))
    if env.get("timestamp"):
        parts.append(str(env["timestamp"])[:10])
    return " · ".join(parts)


def environment_section(results: Results) -> dict[str, Any]:
    """The report's Environment section: each machine's environment and settings as rows (and
    what each worker reported); for merged results, a heading per machine and where they came from."""
    machines = results.environment.get("machines")
    if isinstance(machines, Mapping) and machines:
        per_run = results.settings.get("machines") or {}
        return {"merged_from": ", ".join(results.settings.get("merged_from") or []),
                "machines": [{"heading": f"{label}: {describe(env)}",
                              **_machine_environment(env, per_run.get(label.split("/")[0]) or {})}
                             for label, env in machines.items() if isinstance(env, Mapping)]}
    return {"merged_from": "",
            "machines": [{"heading": "", **_machine_environment(results.environment, results.settings)}]}


def _machine_environment(env: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """One machine's environment and the run's settings as (name, text) rows, and what each
    worker reported."""
    gpus = env.get("gpus") or []
    gpu_text = "; ".join(
        ", ".join(str(g.get(k)) for k in ("name", "driver", "memory") if g.get(k))
        for g in gpus if isinstance(g, Mapping)) or "none found"
    libraries = env.get("libraries") or {}
    lib_text = ", ".join(f"{k} {v}" for k, v in libraries.items() if v) if isinstance(libraries, Mapping) else ""
    workers = env.get("backends") or {}
    blas = [f"NumPy: {env['blas']}"] if env.get("blas") else []
    if isinstance(workers, Mapping):
        for config, info in workers.items():
            if isinstance(info, Mapping) and info.get("torch_blas"):
                blas.append(f"PyTorch ({config}): {info['torch_blas']}")
    threads = [str(settings.get("threads_applied") or settings.get("threads") or "all cores")]
    if env.get("thread_env"):
        threads.append(", ".join(f"{k}={v}" for k, v in env["thread_env"].items()))
    rows = [
        ("when", env.get("timestamp")),
        ("machine id", env.get("machine_id")),
        ("context", env.get("context") or None),
        ("arraybench", env.get("arraybench")),
        ("Python", f"{env.get('python', '')} ({env.get('python_implementation', '')})"),
        ("platform", env.get("platform")),
        ("CPU", f"{env.get('cpu_model', '')}: {env.get('cpu_count', '?')} logical cores, "
                f"{env.get('cpus_available', '?')} available"),
        ("memory", f"{env.get('memory_gib')} GiB" if env.get("memory_gib") else None),
        ("GPUs", gpu_text),
        ("libraries", lib_text),
        ("BLAS", "; ".join(blas) or None),
        ("threads", "; ".join(threads)),
        *kernel_rows(env),
    ]
    measure = [(k, settings.get(k)) for k in ("dtype", "modes", "processes", "max_processes", "max_time",
                                             "min_samples", "rel_ci", "cold", "allow_tf32", "seed")
               if k in settings]
    pairs = [(k, v) for k, v in rows if v not in (None, "")] + [(f"setting: {k}", v) for k, v in measure]
    reported = [(str(config), [(str(k), _plain(v)) for k, v in info.items()])
                for config, info in workers.items() if isinstance(info, Mapping)] if isinstance(workers, Mapping) else []
    return {"rows": [(str(k), _plain(v)) for k, v in pairs], "workers": reported}


def _plain(value: Any) -> str:
    """Nested JSON values as one line of text."""
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_plain(v)}" for k, v in value.items() if v not in (None, ""))
    if isinstance(value, (list, tuple)):
        return "; ".join(_plain(v) for v in value) if value else "—"
    if value is None:
        return "—"
    return str(value)
