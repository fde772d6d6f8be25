"""pyperf-style presets for ``run`` and ``sweep``: ``--fast`` and ``--rigorous`` stand for values of
the budget options ``how to measure`` already has, and an option typed beside one wins."""

from __future__ import annotations

import argparse

from ..errors import UsageError

#: pyperf-style presets: budgets for the options ``how to measure`` already has; an option typed
#: beside a preset wins over it.
PRESETS: dict[str, dict[str, object]] = {
    "fast": {"processes": (2, 2), "max_time": 0.25, "min_samples": 5, "rel_ci": 0.05},
    "rigorous": {"processes": (5, 20), "max_time": 4.0, "min_samples": 20, "rel_ci": 0.01},
}


def preset_text(name: str) -> str:
    """A preset as the options it stands for: ``--processes 2 --max-time 0.25 ...``."""
    def shown(v: object) -> str:
        return f"{v[0]}:{v[1]}" if isinstance(v, tuple) and v[0] != v[1] else \
            str(v[0]) if isinstance(v, tuple) else f"{v:g}" if isinstance(v, float) else str(v)
    return " ".join(f"--{k.replace('_', '-')} {shown(v)}" for k, v in PRESETS[name].items())


def apply_preset(args: argparse.Namespace) -> None:
    """Set the preset's budgets on ``args``, except for the options given beside it: typed, or,
    for a preset the project file sets, set in that same file."""
    name = getattr(args, "preset", None)
    if name is None:
        return
    if getattr(args, "resume", None):
        raise UsageError(f"--{name} and --resume: a resumed run keeps its own settings; give one of them")
    typed = set(getattr(args, "typed", set()))
    project = getattr(args, "project", None)
    if "preset" not in typed and project is not None:
        typed |= set(project.values)
    for dest, value in PRESETS[name].items():
        if dest not in typed:
            setattr(args, dest, value)
