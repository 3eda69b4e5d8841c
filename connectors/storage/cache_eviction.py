"""Eviction, sweeping and statistics of a cache directory (the LRU half of ``CacheStore``).

Least recently used entries go first (a ``.meta`` file's mtime is its entry's last access);
an entry pinned by a reader (``LOCK_SH`` on its data file) or being filled (its stripe lock
taken) is skipped, and one process evicts at a time (``evict.lock``).
"""
from __future__ import annotations

import fcntl
import os
import time
from dataclasses import dataclass

from connectors.storage.cache_entries import STRIPES

__all__ = ["Eviction", "StoreStats"]

ORPHAN_AGE_S = 3600.0


@dataclass
class StoreStats:
    """What ``dataflow cache stats`` prints."""

    root: str
    entries: int
    bytes: int
    max_bytes: int
    temp_files: int
    oldest_access: float | None
    newest_access: float | None


class Eviction:
    """What ``CacheStore`` does over the whole directory: scan, evict, sweep, clear, stats."""

    def _scan(self) -> tuple[list[tuple[float, str, int]], int]:
        """Return (entries as (last access, key, size), total bytes); removes orphans."""
        entries, total, now = [], 0, time.time()
        for sub in os.listdir(self.objects):
            folder = os.path.join(self.objects, sub)
            try:
                names = set(os.listdir(folder))
            except NotADirectoryError:
                continue
            for name in names:
                if name.endswith(".meta"):
                    if name[:-5] not in names:
                        os.unlink(os.path.join(folder, name))
                    continue
                try:
                    st = os.stat(os.path.join(folder, name))
                except FileNotFoundError:
                    continue
                if name + ".meta" in names:
                    try:
                        access = os.stat(os.path.join(folder, name + ".meta")).st_mtime
                    except FileNotFoundError:
                        continue
                elif now - st.st_mtime > ORPHAN_AGE_S:  # renamed, but its writer died before the .meta
                    access = 0.0
                else:
                    continue
                entries.append((access, name, st.st_size))
                total += st.st_size
        entries.sort()
        return entries, total

    def evict(self, target: int, counters=None) -> int:
        """Delete least recently used entries until at most ``target`` bytes remain; return how many.

        Entries that are pinned by a reader or being filled are skipped. Only one process evicts
        at a time; the others return at once.
        """
        lock = os.open(os.path.join(self.root, "evict.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return 0
            entries, total = self._scan()
            evicted = 0
            for _, key, size in entries:
                if total <= target:
                    break
                if self._evict_one(key):
                    total -= size
                    evicted += 1
            self._ledger_write(total)
        finally:
            os.close(lock)
        if counters is not None:
            counters.evictions += evicted
        return evicted

    def _evict_one(self, key: str) -> bool:
        stripe = os.open(os.path.join(self.locks, key[:STRIPES]), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(stripe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            path = self._data_path(key)
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                return False
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return False  # pinned by a reader
                if os.path.exists(path + ".meta"):
                    os.unlink(path + ".meta")
                os.unlink(path)
                self._remember(key, None)
                return True
            finally:
                os.close(fd)
        finally:
            os.close(stripe)

    def sweep_temps(self) -> int:
        """Delete temp files whose writer is gone (their flock is free); return how many."""
        swept = 0
        for name in os.listdir(self.tmp):
            path = os.path.join(self.tmp, name)
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                if ".meta." in name and time.time() - os.fstat(fd).st_mtime < ORPHAN_AGE_S:
                    continue  # a .meta being written is not flock'ed; only old ones are stale
                os.unlink(path)
                swept += 1
            except FileNotFoundError:
                continue
            finally:
                os.close(fd)
        return swept

    def clear(self) -> int:
        """Delete every entry not in use; return how many were deleted."""
        return self.evict(0)

    def stats(self) -> StoreStats:
        """Entries, bytes and access range of the cache directory."""
        entries, total = self._scan()
        accessed = [a for a, _, _ in entries if a]
        return StoreStats(
            root=self.root,
            entries=len(entries),
            bytes=total,
            max_bytes=self.max_bytes,
            temp_files=len(os.listdir(self.tmp)),
            oldest_access=min(accessed) if accessed else None,
            newest_access=max(accessed) if accessed else None,
        )
