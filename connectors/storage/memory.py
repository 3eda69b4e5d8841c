"""In-memory storage (``memory://``): fsspec's, shared by every filesystem object of this process."""
from __future__ import annotations

from fsspec.implementations.memory import MemoryFileSystem


class MemoryStorage(MemoryFileSystem):
    """``memory://path``: this process's memory (tests, in-memory sources); never cached."""

    is_local = True
    read_through_cache = False
    atomic_rename = True
