"""What a worker process is asked and what it answers: one typed job in, typed messages out.

The parent writes one ``Job`` as a JSON line on the worker's stdin; the worker answers ``Ready``
(or ``Unavailable``), then per task: ``ReplicateDone`` per cell (``measure``: after
``Prepare``/``Prepared``, one ``Sampled`` per ``Turn`` until ``FINISH``, a sample only when the
parent hands a turn, so that the configurations a verdict compares sample the same seconds of
the machine), ``CheckDone`` per check (``selfcheck``), nothing (``probe``); ``Done`` last. Both
sides validate what they read (``model.schema``): a job that does not fit stops the worker with
one line.
Beside the pipe, the worker marks its progress on a ``Board`` the parent reads without waking.
"""

from __future__ import annotations

import json
import mmap
import struct
import typing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, Union

from ..model import schema
from ..model.replicate import Replicate, TimerSettings
from ..model.cell import Cell

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


def _json_object(line: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise schema.SchemaError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise schema.SchemaError(f"{where}: expected an object, got {type(data).__name__}")
    return data


@dataclass(frozen=True)
class Job:
    """One worker's work: a library on a device and what to do with it (``task``)."""

    backend: str
    device: str
    task: Literal["measure", "probe", "selfcheck"] = "measure"
    replicate: int = field(default=0, metadata={"min": 0})
    cells: tuple[Cell, ...] = ()
    timer: TimerSettings = field(default_factory=TimerSettings)
    seed: int = 0
    #: The order the worker samples its cells in; a retry after a crash gets another.
    shuffle_seed: int = 0
    threads: int | None = field(default=None, metadata={"min": 1})
    allow_tf32: bool = False
    #: ``--workload-files`` paths, and the file of workloads shipped from the API (or None).
    workload_files: tuple[str, ...] = ()
    shipped: str | None = None
    #: The heartbeat board the worker marks its progress on (set by ``WorkerProcess``).
    board: str | None = None
    only: tuple[CheckName, ...] = CHECKS  # type: ignore[assignment]
    #: The state glibc's malloc was started in (``model/replicate``), "" where it was left alone.
    allocator: str = ""
    #: The run's folder of references shared by its workers; None: each computes its own.
    references: str | None = None
    #: Report the code paths the library runs (``Backend.kernels``, 0.6 s a PyTorch process).
    describe: bool = True
    #: After ``Done``, wait on stdin for the next job of the same library and device (pytest).
    reuse: bool = False

    def to_json(self) -> str:
        """One JSON line (without its newline)."""
        return json.dumps(schema.to_json(self))

    @classmethod
    def from_json(cls, line: str) -> "Job":
        """The job in ``line``; ``schema.SchemaError`` names a field that does not fit."""
        data = _json_object(line, "job")
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
    #: Its job's end reads an energy counter of the whole package or board: the parent ends it alone.
    ends_alone: bool = True


@dataclass(frozen=True)
class Unavailable:
    """The library cannot run here (the worker exits after this). ``broken``: it is installed but
    failed to start, which the doctor reports as a failure rather than a skip."""

    EVENT: ClassVar[str] = "unavailable"
    reason: str
    broken: bool = False


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
    """One turn is over: cell ``key`` took a sample in round ``round``; ``done``: its own stopping
    rule is met (it may be asked for more, to pair with its case's others)."""

    EVENT: ClassVar[str] = "sampled"
    key: str
    round: int
    done: bool
    #: The sample failed: the cell samples no more (its replicate says why).
    error: bool = False
    #: Its seconds per call (0 where the sample was taken back, as warm-up, or failed).
    seconds: float = field(default=0.0, metadata={"min": 0})


class _ParentLine:
    """A line the parent writes to a worker taking turns, its ``event`` first."""

    EVENT: ClassVar[str]

    def to_json(self) -> str:
        """One JSON line (without its newline)."""
        return json.dumps({"event": self.EVENT, **schema.to_json(self)})

    @classmethod
    def from_json(cls, line: str) -> Any:
        """The message in ``line``; ``schema.SchemaError`` when it is not one of this kind."""
        data = _json_object(line, cls.EVENT)
        if data.pop("event", None) != cls.EVENT:
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
    """The parent to a worker taking turns: prepare the cells now. ``only``: the cells to measure,
    by index in the job (None: all); ``judged``: those an earlier process of the run judged
    already, timed here without judging the same arithmetic again."""

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


Message = Union[Ready, Unavailable, ReplicateDone, Prepared, Sampled, CheckDone, Done]
_TYPES: dict[str, type] = {t.EVENT: t for t in typing.get_args(Message)}


def encode(message: Message) -> str:
    """One message as a JSON line (without its newline)."""
    if isinstance(message, ReplicateDone):  # the replicate's own format (its inf and NaN as null)
        data: dict[str, Any] = {"key": message.key, "replicate": message.replicate.to_dict()}
    else:
        data = schema.to_json(message)
    return json.dumps({"event": message.EVENT, **data})


def parse(line: str | bytes) -> Message | None:
    """The message in one line from a worker, or None for a line that is not one; a replicate
    that does not fit becomes a failed one, so the cell is answered and the run goes on."""
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


_BOARD = "<iq"  # cell index (-1: none), progress counter
_BOARD_SIZE = struct.calcsize(_BOARD)


class Board:
    """A memory-mapped file on which the worker marks (cell, counter) before every step. The
    parent reads it only to tell a hang and the cell a crash happened on: a message per sample
    would wake it, and on a 2-core machine a woken parent competes with the operation timed."""

    def __init__(self, path: str | None) -> None:
        self._map: mmap.mmap | None = None
        self._counter = 0
        if path:
            with open(path, "r+b") as f:  # the map keeps the file open itself
                self._map = mmap.mmap(f.fileno(), _BOARD_SIZE)

    @staticmethod
    def create(path: Path) -> None:
        """Make an empty board at ``path`` (the parent, before starting the worker): a new file,
        never written through a link nor into a file another name shares."""
        from ..files import write_bytes_atomic

        write_bytes_atomic(path, struct.pack(_BOARD, -1, 0), durable=False)

    @staticmethod
    def read(path: Path) -> tuple[int, int]:
        """(cell index, counter) as last written; (-1, 0) if unreadable."""
        try:
            return struct.unpack(_BOARD, path.read_bytes()[:_BOARD_SIZE])
        except (OSError, struct.error):  # unreadable, or shorter than a board
            return -1, 0

    def mark(self, index: int) -> None:
        """Say that work on cell ``index`` is under way (and that the worker is alive)."""
        self._counter += 1
        if self._map is not None:
            self._map[:_BOARD_SIZE] = struct.pack(_BOARD, index, self._counter)
