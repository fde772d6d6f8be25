"""A run's machine, libraries and settings as text: one line under a Markdown heading, or the rows
of the HTML report's Environment section."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..backends import SPECS
from ..model.machines import describe
from .usage_text import kernel_rows

if TYPE_CHECKING:
    from ..model.results import Results


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
