"""The cell, one measurement to make, whose ``key`` is its identity everywhere; the configuration
(``Config``) that one worker measures; and their names.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Mapping, NamedTuple

from . import schema
from ..workloads.params import ParamValue, text as params_text

Mode = Literal["latency", "throughput", "compiled"]
Dtype = Literal["float64", "float32"]
MODES: tuple[str, ...] = ("latency", "throughput", "compiled")
DTYPES: tuple[str, ...] = ("float64", "float32")


def case_key(cell: "Cell") -> str:
    """What the configurations compared in a verdict have in common: the cell without its backend,
    device, environment and mode (``matmul|large|float64``)."""
    return cell_key(cell.workload, cell.size_label, "*", "*", cell.dtype, "*", cell.transfer,
                    machine=cell.machine, params=cell.params)


class Config(NamedTuple):
    """What one worker process measures: a library on a device, in an environment ("": the run's own)."""

    backend: str
    device: str
    environment: str = ""


def cell_key(workload: str, size_label: str, backend: str, device: str, dtype: str, mode: str,
             transfer: bool = False, machine: str = "",
             params: Mapping[str, Any] | None = None, environment: str = "") -> str:
    """A cell's identity, the same in the journal, in results and across runs; params, the
    environment (``[np126]``) and the machine (``@node``) end it only where there are some, so
    keys of other cells are what they always were."""
    parts = [workload, size_label, backend, device, dtype, mode]
    if transfer:
        parts.append("transfer")
    if params:
        parts.append(params_text(params))
    return ("|".join(parts) + (f"[{environment}]" if environment else "")
            + (f"@{machine}" if machine else ""))


@dataclass(frozen=True, order=True)
class Cell:
    """One measurement to make."""

    workload: str
    size_label: str
    size: int
    backend: str
    device: str
    dtype: Dtype
    mode: Mode
    transfer: bool = False
    machine: str = ""  # the node that must measure it (an every-node cluster run); "" for any
    #: The workload's settings at this size; not hashed (a dict): cells are told apart by ``key``.
    params: dict[str, ParamValue] = field(default_factory=dict, hash=False)
    environment: str = ""  # its ``--python``/``--variant`` environment; "" for the run's own

    @property
    def key(self) -> str:
        return cell_key(self.workload, self.size_label, self.backend, self.device, self.dtype,
                        self.mode, self.transfer, machine=self.machine, params=self.params,
                        environment=self.environment)

    @property
    def config(self) -> "Config":
        """The configuration whose workers measure it."""
        return Config(self.backend, self.device, self.environment)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "cell") -> "Cell":
        """A cell read back from JSON, each field checked (``schema.SchemaError`` names a bad one)."""
        cell = schema.from_json(cls, data, where=where)
        if cell.size < 1:
            raise schema.SchemaError(f"{where}.size: {cell.size} is not a positive size")
        from ..backends import DEVICES, SPECS

        if cell.backend not in SPECS:
            raise schema.SchemaError(f"{where}.backend: unknown backend {cell.backend!r}")
        if cell.device not in DEVICES:
            raise schema.SchemaError(f"{where}.device: unknown device {cell.device!r}")
        return cell


def worker_key(backend: str, device: str, environment: str = "") -> str:
    """How a configuration's workers are named where they report (``numpy/cpu[np126]``)."""
    return f"{backend}/{device}" + (f"[{environment}]" if environment else "")


_IN_KEY = re.compile(r"\[([A-Za-z0-9][A-Za-z0-9_.+/-]*)\](?:@[^@]*)?$")


def environment_in_key(key: str) -> str:
    """The environment label a cell key ends with (``...|latency[np126]``), or ""."""
    found = _IN_KEY.search(key)
    return found.group(1) if found else ""


def config_label(backend: str, device: str, mode: str = "latency", *, transfer: bool = False,
                 gradient: str | None = None, machine: str = "", environment: str = "") -> str:
    """A configuration's name in every table, plot, finding and export: "PyTorch GPU", "JAX CPU
    (jit)", "NumPy CPU @ laptop", "NumPy CPU [np126]"."""
    from ..backends import SPECS  # the registry only: no library is imported

    label = SPECS[backend].label if backend in SPECS else backend
    extras = ", ".join(word for word, said in [(mode, mode != "latency"), ("+transfer", transfer),
                                               ("finite diff.", gradient == "finite_differences")]
                       if said)
    text = f"{label} {device.upper()}" + (f" ({extras})" if extras else "")
    text += f" [{environment}]" if environment else ""
    return f"{text} @ {machine}" if machine else text
