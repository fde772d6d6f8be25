"""What a worker process is asked and what it answers: one typed job in, typed messages out.

Every child arraybench starts is ``python -m arraybench.worker`` (started by
``executors.worker_process.WorkerProcess``) and speaks this protocol. The parent writes one ``Job``
as a JSON line on the worker's stdin; the worker answers on a private copy of its stdout, one JSON
object per line, each a message below with an ``event`` naming its type:

- ``Ready`` once the library is imported and the device open, or ``Unavailable`` instead (then the
  worker exits);
- for a ``measure`` job, ``Start`` before each cell (so a crash or hang can be pinned on it) and
  ``ReplicateDone`` after it; for a ``selfcheck`` job (``arraybench doctor``), one ``CheckDone`` per
  check; a ``probe`` job asks for nothing more;
- ``Done`` at the end.

A ``measure`` job with ``turns`` waits, once ``Ready``, for a ``Prepare`` line; it says
``Prepared`` once its cells are prepared, then reads ``Turn``
lines on stdin: each asks for one sample of one cell and is answered by ``Sampled``; the turn
``FINISH`` (or the end of stdin) ends the sampling, and the ``ReplicateDone`` messages follow.

Both sides validate what they read (``model.schema``): a job that does not have its shape stops the
worker with a one-line error, and a message that does not is not acted on.
"""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, Union

from ..model import schema
from ..model.replicate import Replicate
from ..model.cell import Cell
from ..model.timer_settings import TimerSettings

Task = Literal["measure", "probe", "selfcheck"]
CheckName = Literal["sync", "unsynced", "events", "float64", "precision", "harness", "memory", "clocks",
                    "transfers", "numba"]
#: The doctor's checks, in the order they run.
CHECKS: tuple[str, ...] = typing.get_args(CheckName)
#: Checks that need a GPU: on the CPU they are not run.
GPU_ONLY = ("events", "memory", "clocks", "transfers")
#: Checks of one library's own tool, run for that backend alone: Numba is NumPy's compiler.
BACKEND_ONLY = {"numba": "numpy"}


def check_applies(check: str, backend: str, device: str) -> bool:
    """Whether the doctor runs ``check`` for ``backend`` on ``device``."""
    return (device != "cpu" or check not in GPU_ONLY) and BACKEND_ONLY.get(check, backend) == backend


@dataclass(frozen=True)
class Job:
    """One worker's work: a library on a device and what to do with it (``task``).

    ``measure`` times ``cells`` as replicate ``replicate``; ``probe`` only opens the library;
    ``selfcheck`` runs the doctor's checks named in ``only``.
    """

    backend: str
    device: str
    task: Task = "measure"
    replicate: int = field(default=0, metadata={"min": 0})
    cells: tuple[Cell, ...] = ()
    timer: TimerSettings = field(default_factory=TimerSettings)
    seed: int = 0
    #: The order the worker samples its cells in; a retry after a crash gets another.
    shuffle_seed: int = 0
    threads: int | None = field(default=None, metadata={"min": 1})
    allow_tf32: bool = False
    #: ``--workload-file`` paths, and the file of workloads shipped from the API (or None).
    workload_files: tuple[str, ...] = ()
    shipped: str | None = None
    #: The heartbeat board the worker marks its progress on (set by ``WorkerProcess``).
    board: str | None = None
    only: tuple[CheckName, ...] = CHECKS  # type: ignore[assignment]
    #: The state glibc's malloc was started in (``model/replicate``; the parent set its variables
    #: in the worker's environment): recorded with every replicate. "" where it was left alone.
    allocator: str = ""
    #: Take turns: once every cell is prepared, say ``Prepared`` and sample only when the parent
    #: hands a turn (a ``Turn`` line on stdin), so that the configurations a verdict compares,
    #: each in its own worker, sample the same seconds of the machine (``executors/turns``).
    turns: bool = False
    #: The run's folder of references shared by its workers (``references.SharedReferences``);
    #: None: each worker computes its own.
    references: str | None = None
    #: Report the code paths the library runs (``Backend.kernels``), which cost PyTorch 0.6 s a
    #: process: the run's first worker of a configuration does, and its record keeps them.
    describe: bool = True
    #: After ``Done``, wait on stdin for the next job of the same library and device (a pytest
    #: session's next test) rather than exit; the worker's library stays imported.
    reuse: bool = False

    def to_json(self) -> str:
        """One JSON line (without its newline)."""
        return json.dumps(schema.to_json(self))

    @classmethod
    def from_json(cls, line: str) -> "Job":
        """The job in ``line``; ``schema.SchemaError`` names a field that does not fit."""
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise schema.SchemaError(f"job: not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise schema.SchemaError(f"job: expected an object, got {type(data).__name__}")
        cells = data.get("cells", [])
        if not isinstance(cells, list):
            raise schema.SchemaError(f"job.cells: expected a list, got {type(cells).__name__}")
        # Cells through their own reader, which also checks what annotations cannot say.
        job = schema.from_json(cls, {k: v for k, v in data.items() if k != "cells"}, where="job")
        return replace(job, cells=tuple(Cell.from_dict(c, f"job.cells[{i}]") for i, c in enumerate(cells)))


@dataclass(frozen=True)
class Ready:
    """The library is imported and the device open; ``info`` is what the backend reports."""

    EVENT: ClassVar[str] = "ready"
    info: dict[str, Any]
    pid: int
    #: Its job's end reads an energy counter of the whole package or board (``footprint``): the
    #: parent ends it alone, where the ends of others may overlap.
    ends_alone: bool = True


@dataclass(frozen=True)
class Unavailable:
    """The library cannot run here (the worker exits after this). ``broken``: it is installed but
    failed to start, which the doctor reports as a failure rather than a skip."""

    EVENT: ClassVar[str] = "unavailable"
    reason: str
    broken: bool = False


@dataclass(frozen=True)
class Start:
    """The worker begins the cell ``key``."""

    EVENT: ClassVar[str] = "start"
    key: str


@dataclass(frozen=True)
class ReplicateDone:
    """The cell ``key`` is measured (or failed, or was skipped): its replicate."""

    EVENT: ClassVar[str] = "replicate"
    key: str
    replicate: Replicate


@dataclass(frozen=True)
class Prepared:
    """Every cell is prepared (first call, check, calibration): the worker waits for turns."""

    EVENT: ClassVar[str] = "prepared"


@dataclass(frozen=True)
class Sampled:
    """One turn is over: cell ``key`` took a sample in round ``round``; ``done``: its sampling is
    complete by its own stopping rule (it may be asked for more, to pair with its case's others)."""

    EVENT: ClassVar[str] = "sampled"
    key: str
    round: int
    done: bool
    #: The sample failed: the cell samples no more (its replicate says why).
    error: bool = False
    #: Its seconds per call (0 where the sample was taken back, as warm-up, or failed).
    seconds: float = field(default=0.0, metadata={"min": 0})


class _ParentLine:
    """A line the parent writes to a worker taking turns: one JSON object, its ``event`` first."""

    EVENT: ClassVar[str]

    def to_json(self) -> str:
        """One JSON line (without its newline)."""
        return json.dumps({"event": self.EVENT, **schema.to_json(self)})

    @classmethod
    def from_json(cls, line: str) -> Any:
        """The message in ``line``; ``schema.SchemaError`` when it is not one of this kind."""
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise schema.SchemaError(f"{cls.EVENT}: not JSON ({exc})") from None
        if not isinstance(data, dict) or data.pop("event", None) != cls.EVENT:
            raise schema.SchemaError(f"{cls.EVENT}: not a {cls.EVENT}")
        return schema.from_json(cls, data, where=cls.EVENT)


@dataclass(frozen=True)
class Turn(_ParentLine):
    """The parent to a worker taking turns: sample cell ``cell`` (its index in the job) once, as
    round ``round``. ``cell = -1``: no more turns; finish every cell and send its replicate."""

    EVENT: ClassVar[str] = "turn"
    cell: int
    round: int = 0


@dataclass(frozen=True)
class Prepare(_ParentLine):
    """The parent to a worker taking turns, once every worker of its index is ready: prepare the
    cells now (the workers import at once, then prepare one at a time). ``only``: the cells to
    measure, by index in the job (None: all): a worker started before the run knew which of its
    cells it would need measures those. ``judged``: those whose result an earlier process of the
    run judged already; this one times them without judging the same arithmetic on the same
    inputs again."""

    EVENT: ClassVar[str] = "prepare"
    only: list[int] | None = field(default=None, metadata={"min": 0})
    judged: list[int] = field(default_factory=list, metadata={"min": 0})


#: The turn that ends the turns: finish every cell.
FINISH = Turn(-1)


@dataclass(frozen=True)
class CheckDone:
    """One of the doctor's checks has an outcome."""

    EVENT: ClassVar[str] = "check"
    check: str
    status: Literal["passed", "failed", "skipped"]
    detail: str


@dataclass(frozen=True)
class Done:
    """The job is over; ``stopped`` when the worker was asked to stop before its end."""

    EVENT: ClassVar[str] = "done"
    stopped: bool = False


Message = Union[Ready, Unavailable, Start, ReplicateDone, Prepared, Sampled, CheckDone, Done]
_TYPES: dict[str, type] = {t.EVENT: t for t in (Ready, Unavailable, Start, ReplicateDone, Prepared, Sampled,
                                                CheckDone, Done)}


def encode(message: Message) -> str:
    """One message as a JSON line (without its newline)."""
    if isinstance(message, ReplicateDone):  # the replicate's own format (its inf and NaN as null)
        data: dict[str, Any] = {"key": message.key, "replicate": message.replicate.to_dict()}
    else:
        data = schema.to_json(message)
    return json.dumps({"event": message.EVENT, **data})


def parse(line: str | bytes) -> Message | None:
    """The message in one line from a worker, or None for a line that is not one.

    A replicate that does not have its shape (a worker of another version, or a bug) becomes a
    failed one for its cell: the cell is answered, and the run goes on.
    """
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    cls = _TYPES.get(data.get("event"))  # type: ignore[arg-type]
    if cls is None:
        return None
    if cls is ReplicateDone:
        key = data.get("key")
        if not isinstance(key, str):
            return None
        try:
            replicate = Replicate.from_dict(data.get("replicate"))
        except schema.SchemaError as exc:
            replicate = _without_energy(data.get("replicate"), exc) or \
                Replicate.ended("failed", f"the worker sent a malformed measurement ({exc})")
        return ReplicateDone(key, replicate)
    try:
        return schema.from_json(cls, data)
    except schema.SchemaError:
        return None


def _without_energy(data: Any, exc: schema.SchemaError) -> Replicate | None:
    """A replicate whose only fault is its energy figure, without that figure: a side reading
    costs its own column, never the samples. None where something else is wrong too."""
    if not isinstance(data, dict) or "energy_j" not in data:
        return None
    try:
        replicate = Replicate.from_dict({**data, "energy_j": None, "energy_note": ""})
    except schema.SchemaError:
        return None
    replicate.energy_note = f"energy not given: the worker's figure was not valid ({exc})"
    return replicate
