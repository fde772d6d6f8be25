"""The results store: every run appended, across time and machines (SQLite here, PostgreSQL for a team).

A run's own ``results.json`` stays the source of truth; the store is a collection of them that
``history`` and ``store import`` read and write. ``open_store(location)`` opens (and migrates) one:
a file path (SQLite, the default being ``default_location()``) or a ``postgresql://`` URL.
"""

from __future__ import annotations

from ..errors import StoreError, StoreWarning
from .location import default_location, describe_location, resolve_location
from .store import Added, Store, StoredRun, open_store

__all__ = ["Added", "Store", "StoreError", "StoreWarning", "StoredRun", "default_location", "describe_location",
           "open_store", "resolve_location"]
