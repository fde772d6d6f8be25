"""Findings across environments (``--python``, ``--variant``): one library, several builds.

"Which *build*?": for each case a backend ran in several environments, the fastest environment set
against the slowest, judged on the 95% intervals as everywhere else, each named with the version
and BLAS its workers really ran ("NumPy 2.4.6 (OpenBLAS SkylakeX) [np2]"), read from what they
reported when they started (``environment["backends"]["numpy/cpu[np2]"]``). Speed-ups between
libraries stay in ``findings.winners``; these sentences set a library against itself.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..model.cell import worker_key
from ..model.pair import Pairs
from ..model.record import Record
from ..units import format_seconds
from ..analysis.grouping import is_valid, significantly_faster, size_text
from .sentences import faster_by, not_apart


def build_text(info: Mapping[str, Any]) -> str:
    """The BLAS a worker reported, in a few words: "OpenBLAS 0.3.31 SkylakeX", "MKL"."""
    blas = info.get("blas") or info.get("torch_blas") or info.get("blas_build") or ""
    text = str(blas).replace("openblas", "OpenBLAS").replace("mkl", "MKL") if blas else ""
    if info.get("blas_architecture"):
        text = f"{text} {info['blas_architecture']}".strip()
    return text


def build_label(r: Record, environment: Mapping[str, Any] | None) -> str:
    """``NumPy 2.4.6 (OpenBLAS 0.3.31 SkylakeX) [np2]``: the library, the version and BLAS its
    workers ran in ``r``'s environment, and the environment's label."""
    from ..backends import SPECS

    workers = (environment or {}).get("backends")
    machines = (environment or {}).get("machines")
    if r.machine and isinstance(machines, Mapping) and isinstance(machines.get(r.machine), Mapping):
        workers = machines[r.machine].get("backends")
    info = workers.get(worker_key(r.backend, r.device, r.environment)) if isinstance(workers, Mapping) else None
    info = info if isinstance(info, Mapping) else {}
    name = SPECS[r.backend].label if r.backend in SPECS else r.backend
    version = info.get("version")
    text = f"{name} {version}" if version else name
    if r.device != "cpu":
        text += f" {r.device.upper()}"
    build = build_text(info)
    if build:
        text += f" ({build})"
    if not r.environment:
        return text
    # A variant's variables are what sets it apart (its build may be the same): said with it.
    described = (environment or {}).get("environments")
    own = described.get(r.environment) if isinstance(described, Mapping) else None
    variables = own.get("variables") if isinstance(own, Mapping) else None
    if isinstance(variables, Mapping) and variables:
        return f"{text} [{r.environment}: {', '.join(f'{k}={v}' for k, v in variables.items())}]"
    return f"{text} [{r.environment}]"


def environment_findings(records: Iterable[Record], environment: Mapping[str, Any] | None = None,
                         pairs: Pairs = Pairs()) -> list[str]:
    """For each case a configuration ran in several environments: the fastest against the slowest."""
    cases: dict[tuple, list[Record]] = {}
    for r in records:
        if is_valid(r) and not r.workload.startswith("ceiling_"):
            key = (r.machine, r.workload, r.size_label, r.backend, r.device, r.mode, r.transfer, r.dtype)
            cases.setdefault(key, []).append(r)
    out = []
    for group in cases.values():
        if len({r.environment for r in group}) < 2:
            continue
        ordered = sorted(group, key=lambda r: r.median_s)
        fast, rest = ordered[0], ordered[1:]
        where = f"{fast.workload} {size_text(fast)}" + (f" on {fast.machine}" if fast.machine else "")
        a = build_label(fast, environment)
        if len(rest) == 1:
            slow = rest[0]
            b = build_label(slow, environment)
            times = f"{format_seconds(fast.median_s)} against {format_seconds(slow.median_s)}"
            if significantly_faster(fast, slow, pairs):
                out.append(f"On {where}, {a} is {faster_by(fast, slow, pairs)} than {b} "
                           f"({times}).")
            else:
                out.append(f"On {where}, {a} and {b} are {not_apart(fast, slow, pairs)} ({times}).")
            continue
        parts = [(f"{faster_by(fast, o, pairs)} than " if significantly_faster(fast, o, pairs)
                  else f"{not_apart(fast, o, pairs)}: ") + f"{build_label(o, environment)} ({format_seconds(o.median_s)})"
                 for o in rest]
        out.append(f"On {where}, {a} is fastest at {format_seconds(fast.median_s)}: {'; '.join(parts)}.")
    return out

