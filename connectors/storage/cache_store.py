"""The on-disk half of the cache tier: entries, fill locks, pins, eviction and integrity.

One directory is shared by every process of a node. Its layout::

    <root>/objects/<k[:2]>/<key>        an entry's bytes (a whole object or one block)
    <root>/objects/<k[:2]>/<key>.meta   "size crc32 stamp" then the URI and version it holds
    <root>/tmp/<key>.<pid>.<rand>       fills in flight, flock'ed by their writer
    <root>/locks/<key[:3]>              fill locks (4096 stripes, never deleted)
    <root>/usage                        bytes held in objects/ (a ledger, corrected by each scan)
    <root>/evict.lock                   one evictor at a time

Protocols, all with ``flock`` so that a crashed process releases what it held:

- **single flight**: a fill holds its key's stripe lock; a second process asking for the key
  waits on that lock, then finds the entry;
- **atomic fill**: bytes go to ``tmp/`` (from a writer thread, while the reader already has them) and are renamed into place before the ``.meta`` file is
  written, so an entry without a ``.meta`` never reads as valid; temp files whose writer is gone
  (their lock is free) are swept when the store opens;
- **pins**: a reader holds ``LOCK_SH`` on the entry's data file; the evictor takes ``LOCK_EX``
  non-blocking and skips entries it cannot lock (and those whose fill lock is taken);
- **integrity**: the ``.meta`` file records the size and CRC-32 at fill, and a stamp of the data
  file's inode, size, mtime, ctime and the boot id. A stamp that no longer matches (the file was
  written to, or the machine rebooted) makes the next reader hash the file again; a mismatch
  drops the entry. A process remembers the stamps it verified, so its later hits skip the
  ``.meta`` read.

An entry's record, stamp and fill lock live in ``cache_entries``; eviction, sweeping and
statistics in ``cache_eviction``.
"""
from __future__ import annotations

import errno
import fcntl
import logging
import os
import secrets
import shutil
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

from connectors.storage.cache_entries import STRIPES, FillLock, Meta, crc_of_fd, size_on_disk, stamp_of
from connectors.storage.cache_eviction import Eviction, StoreStats

__all__ = ["CacheStore", "LocalCacheError", "StoreStats", "open_store"]

log = logging.getLogger("dataflow.cache")

LOW_WATERMARK = 0.8
_TOUCH_EVERY_S = 60.0  # LRU order is kept to the minute, so hits rarely write
_VERIFIED_MAX = 200_000
WRITE_BEHIND_BYTES = 256 * 1024 * 1024  # fetched bytes waiting for the writer thread, per process


class LocalCacheError(OSError):
    """The cache directory failed (missing, read-only, full): the caller reads from remote."""


class CacheStore(Eviction):
    """A cache directory shared by the processes of one node (see the module docstring).

    Args:
        root: The cache directory; created when missing.
        max_bytes: High watermark: eviction starts above it. Default: 90% of the space free
            (plus what the cache holds) when the store opens.
        low_watermark: Eviction frees entries down to this share of ``max_bytes``.
        fill_timeout: Seconds to wait for another process's fill before reading directly.

    Raises:
        LocalCacheError: the directory cannot be created or written.
    """

    def __init__(self, root: str, max_bytes: int | None = None, low_watermark: float = LOW_WATERMARK, fill_timeout: float = 600.0):
        self.root = os.path.abspath(os.path.expanduser(root))
        self.objects, self.tmp, self.locks = (os.path.join(self.root, d) for d in ("objects", "tmp", "locks"))
        self.fill_timeout = fill_timeout
        self.pid = os.getpid()
        self._ledger_lock = threading.Lock()
        self._pending_lock = threading.Lock()
        self._pending = 0
        self._writer: ThreadPoolExecutor | None = None
        self._inflight: set = set()
        self._verified: dict[str, tuple[str, float]] = {}  # key -> (stamp, last LRU touch) this process checked
        try:
            for d in (self.objects, self.tmp, self.locks):
                os.makedirs(d, exist_ok=True)
            probe = os.path.join(self.root, f".probe.{os.getpid()}.{secrets.token_hex(4)}")  # not in tmp/: sweeps skip it
            with open(probe, "wb") as f:
                f.write(b"ok")
            os.unlink(probe)
            self._ledger_fd = os.open(os.path.join(self.root, "usage"), os.O_RDWR | os.O_CREAT, 0o644)
            self.sweep_temps()
            if self._ledger_read() is None:
                self._ledger_write(self._scan()[1])
            used = self.used_bytes()
            if max_bytes is None:
                max_bytes = int(0.9 * (shutil.disk_usage(self.root).free + used))
        except OSError as exc:
            raise LocalCacheError(exc.errno or errno.EIO, f"cache directory '{self.root}' is unusable: {exc.strerror or exc}") from exc
        self.max_bytes = max(1, int(max_bytes))
        self.low_bytes = int(self.max_bytes * low_watermark)

    # --- paths and locks -------------------------------------------------------------------

    def _data_path(self, key: str) -> str:
        return f"{self.objects}/{key[:2]}/{key}"

    def fill_lock(self, key: str) -> FillLock:
        """The exclusive lock held while ``key`` is fetched (single flight across processes)."""
        return FillLock(os.path.join(self.locks, key[:STRIPES]), self.fill_timeout)

    # --- the usage ledger ------------------------------------------------------------------

    def _ledger_read(self) -> int | None:
        raw = os.pread(self._ledger_fd, 32, 0).strip()
        return int(raw) if raw.isdigit() else None

    def _ledger_write(self, value: int) -> None:
        with self._ledger_lock:
            fcntl.flock(self._ledger_fd, fcntl.LOCK_EX)
            try:
                data = str(max(0, value)).encode()
                os.pwrite(self._ledger_fd, data.ljust(32), 0)
            finally:
                fcntl.flock(self._ledger_fd, fcntl.LOCK_UN)

    def _ledger_add(self, delta: int) -> int:
        with self._ledger_lock:
            fcntl.flock(self._ledger_fd, fcntl.LOCK_EX)
            try:
                value = max(0, (self._ledger_read() or 0) + delta)
                os.pwrite(self._ledger_fd, str(value).encode().ljust(32), 0)
                return value
            finally:
                fcntl.flock(self._ledger_fd, fcntl.LOCK_UN)

    def used_bytes(self) -> int:
        """Bytes the entries hold, as the ledger counts them."""
        return self._ledger_read() or 0

    # --- lookups ---------------------------------------------------------------------------

    def open_entry(self, key: str, expected_size: int | None) -> tuple[int | None, bool]:
        """Return ``(fd, corrupt)``: a pinned read-only fd of a valid entry, or None.

        ``corrupt`` is true when an entry exists but fails its size or checksum check; the caller
        then takes the fill lock, looks again and :meth:`drop` s it before fetching.

        Raises:
            LocalCacheError: the directory failed.
        """
        path = self._data_path(key)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None, False
        except OSError as exc:
            raise LocalCacheError(exc.errno or errno.EIO, f"cache entry {path}: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits while an evictor holds LOCK_EX (briefly)
            st = os.fstat(fd)
            stamp = stamp_of(st)
            seen = self._verified.get(key)
            if seen is not None and seen[0] == stamp and st.st_nlink and (expected_size is None or st.st_size == expected_size):
                if time.time() - seen[1] > _TOUCH_EVERY_S:
                    self._read_meta(path)  # keeps the LRU order (touches the .meta)
                    self._remember(key, stamp)
                return fd, False  # verified by this process, and not written to since
            meta = self._read_meta(path)
            if st.st_nlink == 0 or meta is None:  # evicted meanwhile, or a fill not finished
                os.close(fd)
                return None, False
            if meta.size != st.st_size or (expected_size is not None and meta.size != expected_size):
                os.close(fd)
                return None, True
            if meta.stamp != stamp:
                if crc_of_fd(fd, st.st_size) != meta.crc:
                    os.close(fd)
                    return None, True
                self._restamp(key, path, meta, st)
            self._remember(key, stamp)
            return fd, False
        except OSError as exc:
            os.close(fd)
            raise LocalCacheError(exc.errno or errno.EIO, f"cache entry {path}: {exc.strerror}") from exc

    def _remember(self, key: str, stamp: str | None) -> None:
        """Note (or forget, with None) that this process verified ``key`` at ``stamp``."""
        if stamp is None:
            self._verified.pop(key, None)
            return
        if len(self._verified) >= _VERIFIED_MAX:
            self._verified.clear()
        self._verified[key] = (stamp, time.time())

    def _read_meta(self, path: str) -> Meta | None:
        try:
            mfd = os.open(path + ".meta", os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            mst = os.fstat(mfd)
            meta = Meta.parse(os.pread(mfd, 65536, 0))
        finally:
            os.close(mfd)
        if meta is not None and time.time() - mst.st_mtime > _TOUCH_EVERY_S:
            os.utime(path + ".meta")  # LRU: the .meta mtime is the entry's last access
        return meta

    def _restamp(self, key: str, path: str, meta: Meta, st: os.stat_result) -> None:
        """Record that the content was verified again; skipped while a fill owns the key."""
        lock = os.open(os.path.join(self.locks, key[:STRIPES]), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            return
        try:
            self._write_meta(path, Meta(meta.size, meta.crc, stamp_of(st), meta.uri, meta.version))
        finally:
            os.close(lock)

    def _write_meta(self, path: str, meta: Meta) -> None:
        tmp = os.path.join(self.tmp, f"{os.path.basename(path)}.meta.{os.getpid()}.{secrets.token_hex(4)}")
        with open(tmp, "wb") as f:
            f.write(meta.dump())
        os.replace(tmp, path + ".meta")

    # --- fills -----------------------------------------------------------------------------

    def put(self, key: str, data: bytes | memoryview, uri: str, version: str, counters=None) -> None:
        """Store ``data`` as ``key``; the caller holds ``fill_lock(key)``.

        Evicts first when the entry would take the cache above ``max_bytes`` (counted in
        ``counters.evictions`` when given).

        Raises:
            LocalCacheError: the directory failed (the temp file is removed; nothing is stored).
        """
        size = len(data)
        if self.used_bytes() + size > self.max_bytes:
            self.evict(max(0, self.low_bytes - size), counters)
        path = self._data_path(key)
        tmp = os.path.join(self.tmp, f"{key}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = -1
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)  # marks the temp file as live for sweep_temps
            view, written = memoryview(data), 0
            while written < size:
                written += os.write(fd, view[written:])
            crc = zlib.crc32(data)
            old = size_on_disk(path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.replace(tmp, path)
            stamp = stamp_of(os.fstat(fd))
            self._write_meta(path, Meta(size, crc, stamp, uri, version))
            self._remember(key, stamp)
        except OSError as exc:
            if fd >= 0 and os.path.exists(tmp):
                os.unlink(tmp)
            raise LocalCacheError(exc.errno or errno.EIO, f"cache fill of {uri} in '{self.root}' failed: {exc.strerror or exc}") from exc
        finally:
            if fd >= 0:
                os.close(fd)
        self._ledger_add(size - old)

    def put_behind(self, key: str, data: bytes, uri: str, version: str, lock: FillLock, counters=None, on_error=None) -> None:
        """Store ``data`` from this store's writer thread, then release ``lock`` (held by the caller).

        The reader gets its bytes at once and the next fetch overlaps the local write; other
        processes keep waiting on the lock until the entry is in place. When more than
        ``WRITE_BEHIND_BYTES`` are pending, the entry is written here instead. ``on_error``
        receives a ``LocalCacheError`` raised by the write.
        """
        size = len(data)
        with self._pending_lock:
            behind = self._pending + size <= WRITE_BEHIND_BYTES
            if behind:
                self._pending += size

        def write() -> None:
            try:
                self.put(key, data, uri, version, counters)
            except LocalCacheError as exc:
                if on_error is None:
                    raise
                on_error(exc)
            finally:
                lock.release()
                if behind:
                    with self._pending_lock:
                        self._pending -= size

        if not behind:
            write()
            return
        with self._pending_lock:
            if self._writer is None:
                self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dataflow-cache-writer")
            future = self._writer.submit(write)
        self._inflight.add(future)
        future.add_done_callback(self._written)

    def _written(self, future) -> None:
        self._inflight.discard(future)
        if future.exception() is not None:
            log.error("dataflow cache: a background fill failed: %r", future.exception())

    def flush(self) -> None:
        """Wait until every entry handed to the writer thread is stored."""
        for future in list(self._inflight):
            future.exception()

    def drop(self, key: str) -> None:
        """Remove a corrupt entry; the caller holds ``fill_lock(key)``."""
        path = self._data_path(key)
        size = size_on_disk(path)
        self._remember(key, None)
        for p in (path + ".meta", path):
            if os.path.exists(p):
                os.unlink(p)
        self._ledger_add(-size)
        log.warning("dataflow cache: dropped corrupt entry %s (size or checksum mismatch); fetching it again", key)


_STORES: dict[tuple[str, int | None], CacheStore] = {}
_STORES_LOCK = threading.Lock()


def open_store(root: str, max_bytes: int | None = None) -> CacheStore:
    """Return this process's store for ``root`` (opened, and its temp files swept, once).

    Raises:
        LocalCacheError: the directory cannot be created or written.
    """
    key = (os.path.abspath(os.path.expanduser(root)), max_bytes)
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None or store.pid != os.getpid():
            store = CacheStore(root, max_bytes)
            _STORES[key] = store
        return store
