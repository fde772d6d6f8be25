"""What a run's worker is started with: its job, its variables (threads, the allocator's state,
its environment's own) and the name its log goes by; which replicates are measured in the
other allocator state too; and which cells' results it need not judge again."""

from __future__ import annotations

import os
from pathlib import Path

from ..analysis.policy import timer_settings
from ..host import environments
from ..host.threads import choice_ignored, uncontrolled_reason, with_state
from ..host.threads import worker_env
from ..model.allocator import HEADLINE
from ..model.cell import Cell, Config
from ..model.options import RunOptions
from ..model.replicate import Replicate
from ..worker.protocol import Job
from ..workloads.shipping import SHIPPED_NAME

__all__ = ["allocator_note", "allocator_state", "job_for", "judged_before", "other_state_beside",
           "other_state_wanted", "worker_variables"]


def judged_before(replicates: dict[int, Replicate], index: int) -> bool:
    """Whether a process before ``index`` judged the cell's result right (``replicates``: the
    cell's so far, by index). Every process computes the same arithmetic on the same inputs
    (seeded by the run, built once per run), so later ones time it without judging it again:
    the check's reference read and comparison cost a default run a second and a half. A cell
    judged wrong has no later process; one whose first process failed is judged by the next."""
    return any(i < index and rep.status == "ok" and rep.max_rel_error is not None
               for i, rep in replicates.items())


def other_state_index(options: RunOptions) -> int:
    """The replicate index whose large CPU outputs are measured in the other allocator state
    too: one process says what that state costs (its note gives its own interval), where a
    second worker in every process doubled a default run's workers for a sentence. The second
    process's, so that it takes turns beside the first state (which outputs are large is known
    from the first); the first where the run has one process."""
    return 1 if options.processes >= 2 else 0


def other_state_wanted(options: RunOptions, config: Config, state: str, index: int) -> bool:
    """Whether ``config``'s ``index``-th replicates of large outputs wait for the other state."""
    return bool(state) and config.device == "cpu" and options.allocator == "both" \
        and index == other_state_index(options)


def other_state_beside(options: RunOptions, config: Config, index: int) -> bool:
    """Whether the other state takes turns beside ``config``'s own at ``index`` (rather than
    in a worker after them): where the first process told which outputs are large."""
    state = allocator_state(options, environments.find(options, config.environment))
    return other_state_wanted(options, config, state, index) and index >= 1


def allocator_state(options: RunOptions, environment: environments.Environment) -> str:
    """The allocator state a worker starts in; "" where a variant sets the allocator's own
    variables (the user's choice, left alone)."""
    if uncontrolled_reason({**os.environ, **environment.variables}):
        return ""
    return HEADLINE if options.allocator == "both" else options.allocator


def allocator_note(options: RunOptions, environment: environments.Environment) -> str:
    """Why the allocator state the user chose is not the one its workers run in ("" where it is)."""
    return choice_ignored(options.allocator, {**os.environ, **environment.variables})


def worker_variables(options: RunOptions, config: Config, environment: environments.Environment,
                state: str) -> tuple[dict[str, str], str]:
    """A worker's variables (its threads, its allocator ``state`` where controlled, then its
    environment's own, which win) and the name its log goes by."""
    backend, device, label = config
    env = worker_env(os.environ, threads=options.threads, backend=backend, device=device,
                     allow_tf32=options.allow_tf32)
    if state:
        env = with_state(env, state)
    name = f"{backend}-{device}"
    if not environment.default:
        env = environments.worker_env(environment, env)
        # A character no label may hold joins the parts, so that ``a/b+c`` and ``a+b/c`` keep
        # logs of their own (a "+" would name both ``a+b+c``); "@" is safe in a file name.
        name += "-" + label.replace(environments.JOIN, "@")
    return env, name


def job_for(options: RunOptions, out_dir: Path, config: Config, index: int, cells: list[Cell],
            shuffle_seed: int, allocator: str, references: str | None, describe: bool = True) -> Job:
    """The job of a worker measuring ``cells`` as replicate ``index``, taking turns (``turns``),
    its allocator started in ``allocator`` ("" : left alone), reading the run's shared
    ``references`` folder; ``describe``: it reports the library's code paths (``Job.describe``)."""
    shipped = out_dir / SHIPPED_NAME
    return Job(backend=config.backend, device=config.device, replicate=index, cells=tuple(cells),
               timer=timer_settings(options), seed=options.seed, shuffle_seed=shuffle_seed,
               threads=options.threads, allow_tf32=options.allow_tf32,
               workload_files=tuple(str(Path(p).resolve()) for p in options.workload_files),
               shipped=str(shipped.resolve()) if options.shipped_workloads else None,
               allocator=allocator, references=references, describe=describe, turns=True)
