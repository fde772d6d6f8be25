"""How a worker samples one cell (``TimerSettings``): part of every worker's job, chosen by the
parent from the run's options (``analysis/policy.timer_settings``)."""

from __future__ import annotations

from dataclasses import dataclass

#: The timer's modes: each call waited for, or a batch issued and waited for once.
MODES = ("latency", "throughput")


@dataclass(frozen=True)
class TimerSettings:
    """How to sample one cell in one worker process."""

    mode: str = "latency"
    target_sample_s: float = 0.005  # one sample (a batch of calls) lasts at least this long
    min_samples: int = 5
    max_samples: int = 2000
    budget_s: float = 0.5  # sampling stops when this is spent, once min_samples are taken
    rel_ci: float = 0.02  # ...or as soon as the median's 95% CI half-width is within this
    warmup_s: float = 0.02
    cold: bool = False  # evict caches before every sample (forces one call per sample)
    max_batch_bytes: float = 2 * 1024**3  # throughput mode keeps a batch's results alive
    # -- inputs a call changes (``mutates=``), fresh for every call (``worker/timer``) --
    restore: str = "auto"  # "pool": copies refilled per batch; "per_call": before each call; "auto": by speed
    pool_bytes: float = 256 * 1024**2  # the most a pool of copies may take

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown timer mode {self.mode!r}; expected one of {', '.join(MODES)}")
