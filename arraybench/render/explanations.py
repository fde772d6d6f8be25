"""Findings that explain: the measured reason behind a number, in a sentence, each function one kind of
reason (the counters read around the samples, the kernels each library reported, the CPU's features)."""

from __future__ import annotations

import re
from typing import Any, Collection, Iterable, Mapping

from ..analysis.aggregate import allocator_states_apart, explain, find_modes
from ..analysis.grouping import is_valid, size_text
from ..backends import SPECS
from ..analysis.oversubscription import CONTENTION_QUANTITIES, Contention, oversubscribed
from ..errors import spell
from ..model.replicate import WORDS, shell_words
from ..model.cell import worker_key
from ..model.record import BUSY_OTHERS_SHARE, BUSY_STEAL_SHARE, Record
from ..numeric import medians as stats
from ..units import format_seconds, format_speedup


#: Page faults per call worth a sentence when they also cost: this share of the CPU time in the
#: kernel, or processes that did not fault running this much faster.
FAULTS_WORTH_SAYING = 100.0
KERNEL_SHARE_WORTH_SAYING = 0.15
REUSE_SPEEDUP_WORTH_SAYING = 1.1
PAGE = 4096

#: The ISA level of OpenBLAS's kernel families (``threadpoolctl``'s ``architecture``) and of the
#: CPU flags that enable them: 1 SSE, 2 AVX, 3 AVX2, 4 AVX-512.
OPENBLAS_LEVEL = {
    "prescott": 1, "core2": 1, "penryn": 1, "dunnington": 1, "nehalem": 1, "atom": 1, "opteron": 1,
    "barcelona": 1, "bobcat": 1, "nano": 1, "sandybridge": 2, "bulldozer": 2, "piledriver": 2,
    "steamroller": 2, "excavator": 2, "haswell": 3, "zen": 3, "skylakex": 4, "cooperlake": 4,
    "sapphirerapids": 4,
}
ISA_WORDS = {1: "SSE", 2: "AVX", 3: "AVX2", 4: "AVX-512"}
#: How to give a library fewer threads in a user's own program, by backend (``{n}``: how many).
THREAD_LIMITS = {
    "torch": "torch.set_num_threads({n})",
    "numpy": "threadpoolctl.threadpool_limits({n}), or OMP_NUM_THREADS={n} before NumPy loads",
    # XLA reads no thread variable: it sizes its pool by the CPUs the process may run on.
    "jax": "os.sched_setaffinity(0, range({n})) (or taskset) before JAX starts",
}


def _label(r: Record) -> str:
    return r.config_label.replace(" (finite diff.)", "")


def _where(r: Record) -> str:
    return f"{r.workload} {size_text(r)}"


def build_text(info: Mapping[str, Any]) -> str:
    """The BLAS a worker reported, in a few words: "OpenBLAS 0.3.31 SkylakeX", "MKL"."""
    blas = info.get("blas") or info.get("torch_blas") or info.get("blas_build") or ""
    text = str(blas).replace("openblas", "OpenBLAS").replace("mkl", "MKL") if blas else ""
    if info.get("blas_architecture"):
        text = f"{text} {info['blas_architecture']}".strip()
    return text


def build_label(r: Record, environment: Mapping[str, Any] | None) -> str:
    """``NumPy 2.4.6 (OpenBLAS 0.3.31 SkylakeX) [np2]``: what ``r``'s workers ran, and their environment."""
    # The containers of an environment (machines, backends) had their shapes checked as results were read.
    environment = environment or {}
    own = (environment.get("machines") or {}).get(r.machine, environment) if r.machine else environment
    info = (own.get("backends") or {}).get(worker_key(r.backend, r.device, r.environment)) or {}
    build = build_text(info)
    text = " ".join(filter(None, [SPECS[r.backend].label if r.backend in SPECS else r.backend,
                                  str(info.get("version") or ""), r.device.upper() if r.device != "cpu" else "",
                                  f"({build})" if build else ""]))
    if not r.environment:
        return text
    # A variant's variables are what sets it apart (its build may be the same): said with it.
    described = environment.get("environments")
    own = described.get(r.environment) if isinstance(described, Mapping) else None
    variables = own.get("variables") if isinstance(own, Mapping) else None
    if isinstance(variables, Mapping) and variables:
        return f"{text} [{r.environment}: {', '.join(f'{k}={v}' for k, v in variables.items())}]"
    return f"{text} [{r.environment}]"


def page_faults(records: Iterable[Record]) -> list[str]:
    """Cells whose calls fault in fresh memory, and how much faster the processes that did not ran."""
    out = []
    for r in records:
        u = r.usage
        if not is_valid(r) or u is None or (u.minor_faults_per_call or 0) < FAULTS_WORTH_SAYING:
            continue
        megabytes = u.minor_faults_per_call * PAGE / 1024**2
        text = (f"{_label(r)} on {_where(r)} takes ~{u.minor_faults_per_call:,.0f} page faults per "
                f"call: ~{megabytes:,.{0 if megabytes >= 10 else 1}f} MB of fresh memory from the "
                "kernel, zeroed page by page, every call")
        costly = u.kernel_share is not None and u.kernel_share >= KERNEL_SHARE_WORTH_SAYING
        if costly:
            text += f"; {u.kernel_share:.0%} of its CPU time is spent in the kernel"
        timed = [rep for rep in r.replicates if rep.timed and rep.usage is not None]
        faulting = [rep for rep in timed if (rep.usage.minor_faults_per_call or 0) >= FAULTS_WORTH_SAYING / 2]
        reusing = [rep for rep in timed if (rep.usage.minor_faults_per_call or 0) < FAULTS_WORTH_SAYING / 10]
        if faulting and reusing:
            slow = stats.median([stats.median(rep.samples_s) for rep in faulting])
            fast = stats.median([stats.median(rep.samples_s) for rep in reusing])
            if fast > 0 and slow / fast >= REUSE_SPEEDUP_WORTH_SAYING:
                costly = True
                text += (f"; the {len(reusing)} of {len(timed)} processes that reused memory instead "
                         f"ran {format_speedup(slow / fast)} ({format_seconds(fast)} against "
                         f"{format_seconds(slow)})")
        if costly:
            out.append(text + ".")
    return out


#: At most this many cells are named in the allocator finding; the rest are counted.
ALLOCATOR_CELLS_NAMED = 3


def allocator_states(records: Iterable[Record]) -> list[str]:
    """Where a cell's two allocator states took times 95% intervals apart: the largest, and how to get the faster."""
    records = list(records)
    differ = [r for r in records if is_valid(r) and allocator_states_apart(r)]
    if not differ:
        return []
    differ.sort(key=lambda r: -max(r.other_median_s / r.median_s, r.median_s / r.other_median_s))
    measured = sum(1 for r in records if is_valid(r) and r.other_median_s is not None)
    parts = []
    for r in differ[:ALLOCATOR_CELLS_NAMED]:
        faults = (f", {r.other_faults_per_call:,.0f} page faults per call"
                  if r.other_faults_per_call is not None else "")
        k = r.other_n_replicates or 1
        parts.append(f"{_label(r)} on {_where(r)} {format_seconds(r.median_s)} with "
                     f"{WORDS.get(r.allocator, r.allocator)}, {format_seconds(r.other_median_s)} with "
                     f"{WORDS.get(r.other_allocator, r.other_allocator)} "
                     f"(in {k} process{'es' if k != 1 else ''}{faults})")
    more = len(differ) - ALLOCATOR_CELLS_NAMED
    headline = WORDS.get(differ[0].allocator, differ[0].allocator)
    return [
        f"The C allocator decides the time of {len(differ)} of {measured} cells with large outputs: "
        + "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
        + f". The tables show {headline} (glibc's malloc told to keep freed memory), each with the "
        "other state in a note. A program of yours gets fresh pages when glibc hands a freed output "
        "back to the kernel: it serves 128 KiB and more with mmap until an earlier free raises its "
        "threshold, so the same call lands in either state depending on what ran before it. For the "
        f"faster one: start Python with {shell_words('reused')}, write into a buffer you keep (out= "
        "in NumPy and PyTorch), or preload jemalloc or tcmalloc (LD_PRELOAD)."]


def cores_used(records: Iterable[Record]) -> list[str]:
    """How many cores each library kept busy while it was timed (CPU time over wall time)."""
    by_label: dict[str, list[tuple[float, Record]]] = {}
    for r in records:
        if is_valid(r) and r.device == "cpu" and r.usage is not None and r.usage.cores is not None:
            by_label.setdefault(_label(r), []).append((r.usage.cores, r))
    if not by_label:
        return []
    parts = []
    for label, items in sorted(by_label.items(), key=lambda kv: -stats.median([c for c, _ in kv[1]])):
        typical = stats.median([c for c, _ in items])
        most, rec = max(items, key=lambda cr: cr[0])
        parts.append(f"{label} {typical:.1f}"
                     + (f" (up to {most:.1f} on {_where(rec)})" if most - typical >= 0.3 else ""))
    return ["Cores used while timed (CPU time ÷ wall time, the median over each library's cells): "
            + "; ".join(parts) + "."]


def _cpu_level(environment: Mapping[str, Any]) -> int | None:
    isa = (environment.get("fingerprint") or {}).get("cpu_isa")  # a fingerprint's own keys are free
    if not isinstance(isa, list):
        return None
    return next((level for level, flag in ((4, "avx512f"), (3, "avx2"), (2, "avx")) if flag in isa),
                1 if isa else None)


def _workers(environment: Mapping[str, Any], backend: str) -> list[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    """(environment label, self-report, the machine's environment) of each ``backend``/cpu worker the run's
    environments started (``numpy/cpu``, ``numpy/cpu[np126]``...), in the order they reported; "" for a run
    without environments."""
    found: list[tuple[str, str, Mapping[str, Any], Mapping[str, Any]]] = []
    sources = [("", environment)] + sorted((environment.get("machines") or {}).items())
    ours = re.compile(re.escape(worker_key(backend, "cpu")) + r"(?:\[(.*)\])?", re.DOTALL)
    for machine, env in sources:
        for key, info in (env.get("backends") or {}).items():  # shapes checked as the results were read
            named = ours.fullmatch(key)
            if named is None:
                continue
            label = named[1] or ""
            if not any(lab == label and _build(i) == _build(info) for lab, _, i, _ in found):
                found.append((label, machine, info, env))
    labels = [label for label, _, _, _ in found]
    return [(f"{label} on {machine}" if labels.count(label) > 1 and machine else label, info, env)
            for label, machine, info, env in found]


def _named(name: str, label: str, info: Mapping[str, Any], apart: bool) -> str:
    """``NumPy``, or where the environments' builds differ ``NumPy 1.26.4 [np126]``."""
    if not apart:
        return name
    version = f" {info['version']}" if info.get("version") else ""
    return f"{name}{version}" + (f" [{label}]" if label else "")


def _openblas(name: str, info: Mapping[str, Any], environment: Mapping[str, Any]) -> list[str]:
    """``name``'s OpenBLAS kernels where they are below the CPU's ISA, or forced (and why)."""
    if not info.get("blas_architecture"):
        return []
    cpu_level = _cpu_level(environment)
    arch = str(info["blas_architecture"])
    level = OPENBLAS_LEVEL.get(arch.lower())
    env = info.get("kernel_env") or environment.get("kernel_env") or {}
    forced = env.get("OPENBLAS_CORETYPE") if isinstance(env, Mapping) else None
    cpu_words = ISA_WORDS.get(cpu_level or 0)
    if level is not None and cpu_level is not None and level < cpu_level:
        why = (f"because OPENBLAS_CORETYPE={forced} is set" if forced else
               "(OpenBLAS did not pick the CPU's best kernels; an OpenBLAS too old for this CPU?)")
        return [f"{name}'s OpenBLAS runs {arch} kernels ({ISA_WORDS[level]}) {why}; this CPU "
                f"supports {cpu_words}: {name}'s BLAS results (matmul above all) are slower "
                "than this machine can do."]
    if forced:
        return [f"OPENBLAS_CORETYPE={forced} is set, so {name}'s OpenBLAS runs {arch} kernels"
                + (f", which match this CPU's best ISA ({cpu_words})." if level == cpu_level
                   and cpu_words else ".")]
    return []


def _torch(name: str, info: Mapping[str, Any], environment: Mapping[str, Any]) -> list[str]:
    """The kernels ``name`` (PyTorch) runs: ATen's, MKL's code path, oneDNN's."""
    if not (info.get("mkl_isa") or info.get("cpu_capability")):
        return []
    generic = " (generic, not its AVX2 or AVX-512 path)" if info.get("mkl_isa") == "generic" else ""
    bits = [f"{words} {info[key]}{tail}" for key, words, tail in (
        ("cpu_capability", "ATen's", " kernels"), ("mkl_code_path", "MKL's code path for", generic),
        ("onednn_isa", "oneDNN's", " kernels")) if info.get(key)]
    cpu = environment.get("cpu_model") or ""
    vendor = " on an AMD CPU" if "AMD" in str(cpu).upper() and info.get("torch_blas") == "mkl" else ""
    return [f"{name} runs {', '.join(bits)}{vendor}."]


#: What sets one build of a library apart in its self-report (environments side by side).
_BUILD_KEYS = ("version", "blas", "blas_architecture", "torch_blas", "cpu_capability", "mkl_isa",
               "onednn_isa")


def _build(info: Mapping[str, Any]) -> tuple:
    env = info.get("kernel_env")
    forced = env.get("OPENBLAS_CORETYPE") if isinstance(env, Mapping) else None
    return tuple(str(info.get(k)) for k in _BUILD_KEYS) + (forced,)


def forced_kernels(environment: Mapping[str, Any] | None) -> list[str]:
    """BLAS kernels below the CPU's ISA (and why), and each library's kernels; per environment where builds differ."""
    if not environment:
        return []
    out: list[str] = []
    for backend, name, say in (("numpy", "NumPy", _openblas), ("torch", "PyTorch", _torch)):
        reports = _workers(environment, backend)
        apart = len({_build(info) for _, info, _ in reports}) > 1
        for label, info, machine in reports if apart else reports[:1]:
            out += say(_named(name, label, info, apart), info, machine)
        builds = {label: build_text(info) for label, info, _ in reports}
        if apart and len(set(builds.values())) > 1:
            each = "; ".join(f"{_named(name, label, info, True)} with {builds[label] or 'an unreported BLAS'}"
                             for label, info, _ in reports)
            out.append(f"{name} runs different BLAS builds in this run's environments: {each}. On "
                       "BLAS-bound cells (matmul above all) a difference between them is the BLAS's "
                       f"as much as {name}'s.")
    return out


def bimodal_causes(records: Iterable[Record], oversubscribed: Collection[str] = ()) -> list[str]:
    """For each cell whose times form two modes, the measured quantity that differs between them."""
    out = []
    for r in records:
        if not is_valid(r) or len(r.replicates) < 2:
            continue
        clusters = find_modes(r.replicate_medians_s, r.samples_s)
        if clusters is None:
            continue
        contrast = explain(r.timed, clusters)
        if contrast is None or (contrast.quantity.name == "minor_faults_per_call"
                                and bool(page_faults([r]))):
            continue  # said by page_faults
        if r.key in oversubscribed and contrast.quantity.name in CONTENTION_QUANTITIES:
            continue  # said by oversubscription, with its cause and its fix
        out.append(f"{_label(r)} on {_where(r)} runs in two modes, {format_seconds(clusters[0])} "
                   f"and {format_seconds(clusters[1])}: {contrast.sentence()}.")
    return out


def _costs(c: Contention) -> list[str]:
    """Each cost of competing for cores that the results measured, in words."""
    out = []
    if c.between is not None:
        competed, timed, slow, fast = c.between
        out.append(f"the {competed} of {timed} processes that competed took {format_seconds(slow)} a "
                   f"call against {format_seconds(fast)} in those that had the cores ({format_speedup(fast / slow)})")
    if c.split is not None:
        fast, slow, contrast = c.split
        out.append(f"its samples fall in two modes, {format_seconds(fast)} and {format_seconds(slow)} "
                   f"({format_speedup(fast / slow)}; {contrast.sentence()})")
    if c.fewer is not None:
        other, threads = c.fewer
        ratio = c.record.median_s / other.median_s
        # Slower with fewer threads (another node's load, say): said so, never "0.3× faster".
        out.append(f"with {threads} thread{'s' if threads != 1 else ''} ({other.machine}) the same cell "
                   f"took {format_seconds(other.median_s)} "
                   + (f"({format_speedup(ratio)})" if ratio >= 1 else "(no faster)"))
    return out


def oversubscription(found: Iterable[Contention]) -> list[str]:
    """For each library whose thread pool outnumbered its cores: its costliest cell and the fix, then the others."""
    by_label: dict[str, list[Contention]] = {}
    for c in found:
        by_label.setdefault(_label(c.record), []).append(c)
    out = []
    for label, items in by_label.items():
        items.sort(key=lambda c: -max(c.slowdowns, default=0.0))
        c, r, n = items[0], items[0].record, items[0].threads_to_use
        cores = (f"{c.cpus} CPUs" if c.threads > c.cpus else
                 f"the {c.left:.1f} of {c.cpus} cores other processes left it")
        text = f"The thread pool of {label} competed for cores on {_where(r)}: {c.threads} threads on {cores}"
        if c.switches is not None and c.switches >= 1:
            text += f", preempted {c.switches:,.{0 if c.switches >= 10 else 1}f} times a call"
        text += (" (oversubscription: a call waits for its slowest thread, and a thread without a core "
                 "waits its turn while the others spin); ")
        text += "; ".join(_costs(c)) or "its cost was not measured here (no process had its cores)"
        if len(items) > 1:
            names = [_where(o.record) for o in items[1:4]]
            text += f"; the same on {', '.join(names)}" + (f" and {len(items) - 4} more" if len(items) > 4 else "")
        own = THREAD_LIMITS.get(r.backend, "OMP_NUM_THREADS={n}").format(n=n)
        out.append(text + f". Give it the cores it gets: {spell('threads', n)} here, {own} in your own program.")
    return out


def busy_machine(records: Iterable[Record]) -> list[str]:
    """How many cells were measured on a busy machine, and what made it busy: other processes, the hypervisor."""
    measured = [r for r in records if is_valid(r) and r.busy is not None]
    busy = [r for r in measured if r.busy and r.usage]
    if not busy:
        return []
    loaded = [r for r in busy if r.usage.others_cores >= BUSY_OTHERS_SHARE * (r.usage.machine_cpus or 1)]
    steal = max(r.usage.steal_share or 0 for r in busy)
    causes = []
    if loaded:
        worst = max(loaded, key=lambda r: r.usage.others_cores)
        causes.append(f"while other processes loaded the machine (up to {worst.usage.others_cores:.1f} of "
                      f"{worst.usage.machine_cpus or 1} cores, on {_label(worst)} {_where(worst)})")
    if steal >= BUSY_STEAL_SHARE:
        causes.append(f"while the hypervisor stole up to {steal:.0%} of the CPU time")
    return [f"{len(busy)} of {len(measured)} cells were measured {' and '.join(causes)}: their times "
            "are slower and less repeatable than on a quiet machine; each says so."]


def explanations(records: Iterable[Record], environment: Mapping[str, Any] | None = None) -> list[str]:
    """Every explaining finding, in reading order."""
    records = list(records)
    contended = oversubscribed(records, environment)
    return (forced_kernels(environment) + allocator_states(records) + page_faults(records)
            + bimodal_causes(records, {c.record.key for c in contended})
            + oversubscription(contended) + cores_used(records) + busy_machine(records))
