"""Thread pools that outnumbered the cores other processes left them, and what that was measured to
cost: outnumbered, a call waits for its slowest thread and times grow by orders of magnitude. The
cost comes from the results: processes that had their cores against those that did not, a cell's
two modes, or the cell measured with fewer threads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from ..numeric import medians as stats
from .aggregate import Contrast, explain, find_modes
from .grouping import is_valid
from ..model.runs import machine_environment, machine_id_of
from ..model.cell import Cell, worker_key
from ..model.record import BUSY_OTHERS_SHARE, Record
from ..model.replicate import Replicate, Usage

#: A pool competes for cores when its threads outnumber the cores other processes left it by this
#: much: /proc/stat counts in 10 ms ticks, so a fraction of a core either way is noise.
OVERSUBSCRIBED_BY = 0.5
#: A slowdown from competing for cores below this is no cost worth a finding.
SLOWDOWN_WORTH_SAYING = 1.1
#: A process (or a sample) that used more cores than this ran several threads at once; code that
#: never did (0.98-1.00 cores) has no pool to oversubscribe, whatever threads its library started.
SEVERAL_THREADS_CORES = 1.2
#: The counters that tell a mode where the pool lost its cores from one where it had them.
CONTENTION_QUANTITIES = frozenset({"others_cores", "involuntary_switches_per_call", "cores", "steal_share"})


def _worker_info(r: Record, environment: Mapping[str, Any]) -> Mapping[str, Any]:
    workers = machine_environment(environment, r.machine).get("backends") or {}
    return workers.get(worker_key(r.backend, r.device, r.environment)) or {}


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def pool_threads(r: Record, environment: Mapping[str, Any]) -> int | None:
    """The threads of the largest pool in the worker that measured ``r``; None where none was reported."""
    info = _worker_info(r, environment)
    pools = info.get("threadpools")
    counts = [info.get("torch_threads")]
    counts += [p.get("num_threads") for p in pools if isinstance(p, Mapping)] if isinstance(pools, list) else []
    if r.backend == "jax":
        counts.append(info.get("affinity_cpus"))  # XLA sizes its pool by the CPUs it may run on
    return max(filter(None, map(_count, counts)), default=None)


def _cpus(u: Usage, affinity: int | None) -> int:
    """The CPUs a process could run on: the machine's, or fewer where it was pinned."""
    cpus = u.machine_cpus or affinity or 1
    return min(cpus, affinity) if affinity else cpus


def _cores_left(u: Usage, affinity: int | None) -> float:
    """The cores other processes left a process (the scheduler moves them off its pinned CPUs)."""
    machine = u.machine_cpus or _cpus(u, affinity)
    return max(min(_cpus(u, affinity), machine - (u.others_cores or 0.0)), 0.0)


def _contended(u: Usage | None, threads: int, affinity: int | None) -> bool:
    """Whether a pool of ``threads`` outnumbered its cores while a process sampled: more threads
    than its CPUs, or than other processes left it on a busy machine."""
    if u is None or u.others_cores is None or not u.machine_cpus or threads < 2:
        return False
    if threads > _cpus(u, affinity):
        return True
    busy = u.others_cores >= BUSY_OTHERS_SHARE * u.machine_cpus
    return busy and threads > _cores_left(u, affinity) + OVERSUBSCRIBED_BY


@dataclass(frozen=True)
class Contention:
    """A cell whose library's pool outnumbered its cores, with each cost the results measured."""

    record: Record
    threads: int
    #: The cores other processes left it (the median over its contended processes), of ``cpus``.
    left: float
    cpus: int
    #: Involuntary context switches per call in the contended processes (their median).
    switches: float | None
    #: (processes that competed, processes timed, their median, the others' median), where some
    #: processes of the cell had their cores and some did not.
    between: tuple[int, int, float, float] | None = None
    #: (fast mode, slow mode, what differs between them), where every process competed and its
    #: samples split on the load.
    split: tuple[float, float, Contrast] | None = None
    #: The same cell measured with fewer threads on the same machine, and how many.
    fewer: tuple[Record, int] | None = None

    @property
    def slowdowns(self) -> list[float]:
        """Each measured cost as a ratio of times (slow over fast)."""
        return [*([self.between[2] / self.between[3]] if self.between is not None else []),
                *([self.split[1] / self.split[0]] if self.split is not None else []),
                *([self.record.median_s / self.fewer[0].median_s] if self.fewer is not None else [])]

    @property
    def threads_to_use(self) -> int:
        """The threads that fit in the cores it got: at least one, fewer than it had."""
        return max(1, min(int(self.left), self.threads - 1))


def _median_time(reps: Iterable[Replicate]) -> float:
    return stats.median([stats.median(rep.samples_s) for rep in reps])


def _with_fewer_threads(r: Record, threads: int, records: list[Record],
                        environment: Mapping[str, Any]) -> tuple[Record, int] | None:
    """The same cell measured with fewer threads on the same machine, with its cores."""
    ident = machine_id_of(machine_environment(environment, r.machine))
    def anywhere(x: Record) -> Cell:
        return replace(x.cell, machine="", environment="")

    for o in records:
        if o.machine == r.machine or not is_valid(o) or anywhere(o) != anywhere(r):
            continue
        fewer = pool_threads(o, environment)
        other = machine_id_of(machine_environment(environment, o.machine))
        affinity = _count(_worker_info(o, environment).get("affinity_cpus"))
        if (fewer is not None and fewer < threads and (not ident or not other or ident == other)
                and not any(_contended(rep.usage, fewer, affinity) for rep in o.replicates if rep.timed)):
            return o, fewer
    return None


def _contention(r: Record, records: list[Record], environment: Mapping[str, Any]) -> Contention | None:
    """How ``r``'s pool competed for cores; None where it did not, or no cost worth saying was measured."""
    threads = pool_threads(r, environment)
    if not is_valid(r) or r.device != "cpu" or threads is None or threads < 2:
        return None
    affinity = _count(_worker_info(r, environment).get("affinity_cpus"))
    timed = [rep for rep in r.replicates if rep.timed and rep.usage is not None]
    contended = [rep for rep in timed if _contended(rep.usage, threads, affinity)]
    if not contended:
        return None
    free = [rep for rep in timed if not _contended(rep.usage, threads, affinity)]
    between = split = None
    if free and _median_time(free) > 0:
        between = (len(contended), len(timed), _median_time(contended), _median_time(free))
    else:
        medians = [stats.median(rep.samples_s) for rep in timed]
        clusters = find_modes(medians, [x for rep in timed for x in rep.samples_s])
        contrast = explain(timed, clusters) if clusters is not None else None
        if clusters is not None and contrast is not None and contrast.quantity.name in CONTENTION_QUANTITIES:
            split = (clusters[0], clusters[1], contrast)
    switches = [rep.usage.involuntary_switches_per_call for rep in contended
                if rep.usage.involuntary_switches_per_call is not None]
    found = Contention(r, threads, stats.median([_cores_left(rep.usage, affinity) for rep in contended]),
                       _cpus(contended[0].usage, affinity), stats.median(switches) if switches else None,
                       between, split, _with_fewer_threads(r, threads, records, environment))
    # Said only where measured: a cost between processes or modes needs a process or sample that
    # ran several threads; one against the same cell with fewer threads shows that by itself.
    if found.fewer is None and not ran_several_threads(timed):
        found = replace(found, between=None, split=None)
    costs = found.slowdowns
    return found if costs and max(costs) >= SLOWDOWN_WORTH_SAYING else None


def ran_several_threads(reps: list[Replicate]) -> bool:
    """Whether some process, or some sample of one, used more than ``SEVERAL_THREADS_CORES``."""
    return any(c > SEVERAL_THREADS_CORES for rep in reps if rep.usage is not None
               for c in [rep.usage.cores or 0.0, *rep.usage.sample_cores])


def oversubscribed(records: Iterable[Record], environment: Mapping[str, Any] | None) -> list[Contention]:
    """Every cell whose library's thread pool outnumbered the cores it got."""
    records = list(records)
    return [c for r in records if (c := _contention(r, records, environment or {})) is not None]
