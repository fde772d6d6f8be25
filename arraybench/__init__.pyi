"""The public names, for type checkers (``__init__.py`` imports them lazily, on first use)."""

import os

from .api import compare as compare, merge as merge, numerics as numerics, resume as resume
from .api import run as run, sweep as sweep
from .errors import ResultsError as ResultsError, SaveError as SaveError, UsageError as UsageError
from .model.record import Record as Record
from .model.replicate import Replicate as Replicate
from .model.results import Results as Results
from .model.options import RunOptions as RunOptions
from .model.journal import Reporter as Reporter
from .executors.session import Interrupted as Interrupted
from .workloads.check import Check as Check
from .workloads.definition import Work as Work, Workload as Workload
from .workloads.inputs import fixed as fixed
from .workloads.registry import workload as workload

__all__: list[str]
__version__: str

def load_results(path: str | os.PathLike[str]) -> Results: ...
