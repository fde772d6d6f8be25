"""What goes wrong with a store, as one line."""

from __future__ import annotations

from ..errors import UsageError


class StoreError(UsageError):
    """A store that cannot be opened, read or written: one line, saying which and why."""
