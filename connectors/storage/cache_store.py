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
from dataclasses import dataclass

__all__ = ["CacheStore", "LocalCacheError", "StoreStats", "open_store"]

log = logging.getLogger("dataflow.cache")

LOW_WATERMARK = 0.8
_STRIPES = 3  # hex digits of the key naming its fill lock: 4096 stripes
_TOUCH_EVERY_S = 60.0  # LRU order is kept to the minute, so hits rarely write
_ORPHAN_AGE_S = 3600.0
_VERIFIED_MAX = 200_000
_CHUNK = 8 * 1024 * 1024
WRITE_BEHIND_BYTES = 256 * 1024 * 1024  # fetched bytes waiting for the writer thread, per process


class LocalCacheError(OSError):
    """The cache directory failed (missing, read-only, full): the caller reads from remote."""


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


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


_BOOT_ID = _boot_id()


def _stamp(st: os.stat_result) -> str:
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{_BOOT_ID}"


def _crc_fd(fd: int, size: int) -> int:
    crc, offset = 0, 0
    while offset < size:
        chunk = os.pread(fd, min(_CHUNK, size - offset), offset)
        if not chunk:
            break
        crc = zlib.crc32(chunk, crc)
        offset += len(chunk)
    return crc


@dataclass(frozen=True)
class _Meta:
    size: int
    crc: int
    stamp: str
    uri: str
    version: str

    def dump(self) -> bytes:
        return f"{self.size} {self.crc} {self.stamp}\n{self.uri}\n{self.version}\n".encode("utf-8", "surrogateescape")

    @classmethod
    def parse(cls, data: bytes) -> _Meta | None:
        lines = data.decode("utf-8", "surrogateescape").split("\n")
        head = lines[0].split(" ")
        if len(lines) < 3 or len(head) != 3 or not head[0].isdigit() or not head[1].isdigit():
            return None
        return cls(int(head[0]), int(head[1]), head[2], lines[1], lines[2])


class _FillLock:
    """An exclusive flock on a key's stripe, waited for with backoff up to ``timeout`` seconds."""

    def __init__(self, path: str, timeout: float):
        self.path, self.timeout, self.fd = path, timeout, -1

    def acquire(self) -> _FillLock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline, pause = time.monotonic() + self.timeout, 0.001
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    raise TimeoutError(f"cache fill lock {self.path} held for over {self.timeout:.0f} s by another process") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.02)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> _FillLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class CacheStore:
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

    def fill_lock(self, key: str) -> _FillLock:
        """The exclusive lock held while ``key`` is fetched (single flight across processes)."""
        return _FillLock(os.path.join(self.locks, key[:_STRIPES]), self.fill_timeout)

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
            stamp = _stamp(st)
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
                if _crc_fd(fd, st.st_size) != meta.crc:
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

    def _read_meta(self, path: str) -> _Meta | None:
        try:
            mfd = os.open(path + ".meta", os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            mst = os.fstat(mfd)
            meta = _Meta.parse(os.pread(mfd, 65536, 0))
        finally:
            os.close(mfd)
        if meta is not None and time.time() - mst.st_mtime > _TOUCH_EVERY_S:
            os.utime(path + ".meta")  # LRU: the .meta mtime is the entry's last access
        return meta

    def _restamp(self, key: str, path: str, meta: _Meta, st: os.stat_result) -> None:
        """Record that the content was verified again; skipped while a fill owns the key."""
        lock = os.open(os.path.join(self.locks, key[:_STRIPES]), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            return
        try:
            self._write_meta(path, _Meta(meta.size, meta.crc, _stamp(st), meta.uri, meta.version))
        finally:
            os.close(lock)

    def _write_meta(self, path: str, meta: _Meta) -> None:
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
            old = self._existing_size(path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.replace(tmp, path)
            stamp = _stamp(os.fstat(fd))
            self._write_meta(path, _Meta(size, crc, stamp, uri, version))
            self._remember(key, stamp)
        except OSError as exc:
            if fd >= 0 and os.path.exists(tmp):
                os.unlink(tmp)
            raise LocalCacheError(exc.errno or errno.EIO, f"cache fill of {uri} in '{self.root}' failed: {exc.strerror or exc}") from exc
        finally:
            if fd >= 0:
                os.close(fd)
        self._ledger_add(size - old)

    def put_behind(self, key: str, data: bytes, uri: str, version: str, lock: _FillLock, counters=None, on_error=None) -> None:
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

    @staticmethod
    def _existing_size(path: str) -> int:
        try:
            return os.stat(path).st_size
        except FileNotFoundError:
            return 0

    def drop(self, key: str) -> None:
        """Remove a corrupt entry; the caller holds ``fill_lock(key)``."""
        path = self._data_path(key)
        size = self._existing_size(path)
        self._remember(key, None)
        for p in (path + ".meta", path):
            if os.path.exists(p):
                os.unlink(p)
        self._ledger_add(-size)
        log.warning("dataflow cache: dropped corrupt entry %s (size or checksum mismatch); fetching it again", key)

    # --- eviction and sweeping -------------------------------------------------------------

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
                elif now - st.st_mtime > _ORPHAN_AGE_S:  # renamed, but its writer died before the .meta
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
        stripe = os.open(os.path.join(self.locks, key[:_STRIPES]), os.O_RDWR | os.O_CREAT, 0o644)
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
                if ".meta." in name and time.time() - os.fstat(fd).st_mtime < _ORPHAN_AGE_S:
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
