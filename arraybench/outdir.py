"""The output folder of a run: created, proven writable, and never clobbering an unfinished run.

Everything here happens before anything is measured, so a mistake costs nothing.
"""

from __future__ import annotations

from pathlib import Path

from .errors import UsageError
from .journal import JOURNAL_NAME


def prepare(path: str | Path, *, overwrite: bool, what: str = "--output-dir") -> Path:
    """Create the output folder and prove it writable; refuse to replace an unfinished run."""
    if not str(path).strip():
        raise UsageError(f"{what} is empty; name a folder (default: benchmark_plots)")
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{what} {out}: exists and is not a folder")
    check_writable(out, f"{what} ")
    if (out / JOURNAL_NAME).exists() and not overwrite and not holds_complete_run(out):
        raise UsageError(
            f"{out} holds an unfinished run; continue it with `arraybench run --resume {out}`, "
            "or start afresh with --overwrite"
        )
    return out


def check_writable(out: Path, what: str = "") -> None:
    """Create ``out`` if needed and write a file in it; ``UsageError`` if that cannot be done."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".arraybench-write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"{what}{out}: cannot write there ({exc.strerror or exc})") from None


def holds_complete_run(out: Path) -> bool:
    """Whether ``out`` holds the results of a run that finished."""
    from .results import load

    try:
        return load(out / "results.json").complete
    except UsageError:  # missing, truncated, not ours: not a finished run
        return False
