"""Local and POSIX storage."""
from __future__ import annotations

from fsspec.implementations.local import LocalFileSystem


class LocalStorage(LocalFileSystem):
    """POSIX paths and ``file://`` URIs; directories are created as files are written."""

    is_local = True
    read_through_cache = False
    atomic_rename = True

    def __init__(self, **kwargs):
        kwargs.setdefault("auto_mkdir", True)
        super().__init__(**kwargs)
