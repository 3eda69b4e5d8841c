"""What one process's cache did (``CacheCounters``), and the version part of an entry's key."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["CacheCounters", "object_version"]


@dataclass
class CacheCounters:
    """What one process's cache did: the run report sums these over every read task.

    Attributes:
        hits: Entries found valid (whole objects or blocks), including those another process
            filled while this one waited.
        misses: Entries fetched from remote and stored.
        bytes_local: Bytes served from entries that were already cached.
        bytes_remote: Bytes fetched from remote storage (fills and direct reads).
        evictions: Entries this process evicted to stay under ``max_bytes``.
        corrupt: Entries that failed their size or checksum check, dropped and fetched again.
        direct_reads: Reads served straight from remote because the cache could not be used.
    """

    hits: int = 0
    misses: int = 0
    bytes_local: int = 0
    bytes_remote: int = 0
    evictions: int = 0
    corrupt: int = 0
    direct_reads: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: int) -> None:
        with self._lock:
            for name, value in deltas.items():
                setattr(self, name, getattr(self, name) + value)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}


def object_version(info: dict[str, Any]) -> str:
    """The version part of an entry's key: the ETag when the store has one, else size + mtime (+ inode)."""
    etag = info.get("ETag") or info.get("etag") or info.get("md5Hash")
    if etag:
        return f"etag:{str(etag).strip(chr(34))}:{info.get('size')}"
    mtime = None
    for name in _MTIME_KEYS:
        mtime = info.get(name)
        if mtime:
            break
    return f"size:{info.get('size')}:mtime:{mtime}:ino:{info.get('ino', '')}"


_MTIME_KEYS = ("mtime", "LastModified", "last_modified", "modificationTime", "updated", "modified")
