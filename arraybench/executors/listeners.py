"""What the parent does with one worker's messages: the run's own (``Listener``: each replicate
kept as it comes, or held for its other allocator state) and a worker measuring that other state
(``OtherState``: its replicates go to the held ones, never to the run)."""

from __future__ import annotations

from ..model.allocator import LARGE_OUTPUT_BYTES, OTHER, WORDS, StateSamples
from ..model.cell import Cell, Config
from ..model.replicate import Replicate
from ..worker.protocol import Message, Ready, ReplicateDone, Unavailable
from .session import RunHandle


class OtherState:
    """The messages of a worker measuring large outputs in the other allocator state, beside
    their own or after them (a ``turns.Listener``): its replicates go to the held ones, never to
    the run."""

    def __init__(self) -> None:
        self.ready = False
        self.got: dict[str, Replicate] = {}
        self.why = ""

    def handle(self, msg: Message) -> bool:
        """Keep a replicate; True where the worker could not run."""
        if isinstance(msg, Ready):
            self.ready = True
        elif isinstance(msg, Unavailable):
            self.why = msg.reason
            return True
        elif isinstance(msg, ReplicateDone):
            self.got[msg.key] = msg.replicate
        return False

    def fail(self, cell: Cell, reason: str) -> None:
        """The worker failed: the reason every held replicate it did not reach will give."""
        self.why = self.why or reason

    def attach(self, held: dict[str, tuple[Cell, Replicate]]) -> None:
        """Give each held replicate the samples taken in the other state, or say why not."""
        for key, (_, replicate) in held.items():
            if key in self.got:
                attach_other_state(replicate, self.got[key])
            else:
                replicate.warnings.append(f"not measured with {WORDS[OTHER]}: {self.why or 'the worker ended first'}")


class Listener:
    """Acts on the messages of one worker."""

    def __init__(self, session: RunHandle, config: Config, index: int,
                 remaining: dict[str, Cell], held: dict[str, tuple[Cell, Replicate]] | None = None,
                 note: str = "") -> None:
        self.session = session
        self.note = note  # said in each replicate's warnings (the allocator state not applied)
        self.config = config
        self.index = index
        self.remaining = remaining
        self.held = held
        self.ready = False

    def fail(self, cell: Cell, reason: str) -> None:
        """Answer ``cell`` with a failed replicate saying ``reason``."""
        self.remaining.pop(cell.key, None)
        self.session.keep(cell, self.index, Replicate.ended("failed", reason))

    def handle(self, msg: Message) -> bool:
        """Act on one message; True when the worker's configuration turned out unavailable."""
        if isinstance(msg, Ready):
            self.ready = True
            self.session.worker_ready(self.config, self.index, msg.info, msg.pid)
        elif isinstance(msg, Unavailable):
            self.session.mark_unavailable(self.config, msg.reason)
            return True
        elif isinstance(msg, ReplicateDone) and msg.key in self.remaining:
            cell = self.remaining.pop(msg.key)
            if self.note and msg.replicate.timed:
                msg.replicate.warnings.append(self.note)
            if self.held is not None and wants_other_state(msg.replicate):
                self.held[msg.key] = (cell, msg.replicate)  # stored once the other state is measured
            else:
                self.session.keep(cell, self.index, msg.replicate)
        return False


def large(replicate: Replicate | None) -> bool:
    return replicate is not None and wants_other_state(replicate)


def wants_other_state(replicate: Replicate) -> bool:
    """Whether a replicate's outputs are large enough for the allocator's state to matter."""
    return (replicate.status == "ok" and replicate.timed and bool(replicate.allocator)
            and (replicate.output_bytes or 0) >= LARGE_OUTPUT_BYTES)


def attach_other_state(replicate: Replicate, other: Replicate) -> None:
    """Give ``replicate`` the samples ``other`` took in the other allocator state (or say why not)."""
    if other.timed and other.status == "ok" and other.allocator:
        replicate.other_allocator = StateSamples(other.allocator, other.samples_s,  # type: ignore[arg-type]
                                                 other.number, other.stop_reason, other.usage)
    else:
        replicate.warnings.append(f"not measured with {WORDS.get(other.allocator, 'the other state')}: "
                                  f"{other.reason or other.status}")
