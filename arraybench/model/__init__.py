"""The data: cells, replicates, records, results, their schema, the journal's format, and the version a run records.

Plain data, read and written by both processes; nothing here imports ``analysis`` or ``render``.
Files from disk are read as untrusted input (``schema``).
"""


def version() -> str:
    """The installed version, or a checkout's own (marked so) where it was never installed."""
    import importlib.metadata

    try:
        return importlib.metadata.version("arraybench")
    except importlib.metadata.PackageNotFoundError:  # a checkout on PYTHONPATH: its pyproject.toml
        import tomllib
        from pathlib import Path
    try:
        project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
        return f"{project['version']}+checkout" if project.get("name") == "arraybench" else "unknown"
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"
