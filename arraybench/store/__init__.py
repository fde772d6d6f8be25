"""The results store: every run appended, across time and machines (SQLite, or PostgreSQL for a team);
a run's ``results.json`` stays the source of truth. ``open_store(location)`` opens and migrates one."""

from __future__ import annotations

from ..errors import StoreError, StoreWarning
from .database import default_location, describe_location, resolve_location
from .store import Added, Store, StoredRun, open_store

__all__ = ["Added", "Store", "StoreError", "StoreWarning", "StoredRun", "default_location", "describe_location",
           "open_store", "resolve_location"]
