"""DiskCache: a wrapping fsspec filesystem that reads remote objects through a node-local cache.

Like fsspec's ``simplecache::``, but built for many processes sharing one directory (the
protocols live in ``connectors.storage.cache_store``). Reads of a whole object fill one entry;
range reads (a Parquet footer, a row group) fill fixed-size blocks, so they never pull the whole
file. Entries are keyed by the object's path and version (ETag, else size + mtime + inode), so
a changed object is fetched again. Writes, listings and metadata go straight to the inner
filesystem. The cache never fails a read: when its directory is missing, read-only or full, the
object is read from remote and one warning is logged.

Its parts: ``cache_counters`` (counters, entry versions), ``cached_file`` (the open file),
``cache_passthrough`` (the calls that bypass the cache).

Examples:
    >>> from fsspec.implementations.memory import MemoryFileSystem
    >>> import tempfile
    >>> inner = MemoryFileSystem()
    >>> inner.pipe_file("/doc/a.bin", b"0123456789")
    >>> fs = DiskCache(inner=inner, dir=tempfile.mkdtemp())
    >>> fs.cat_file("/doc/a.bin"), fs.cat_file("/doc/a.bin", 2, 5)
    (b'0123456789', b'234')
"""
from __future__ import annotations

import errno
import hashlib
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from fsspec.spec import AbstractFileSystem

from connectors.storage.cache_counters import CacheCounters, object_version
from connectors.storage.cache_passthrough import PassThrough
from connectors.storage.cache_store import LOW_WATERMARK, CacheStore, LocalCacheError, open_store
from connectors.storage.cached_file import CachedFile, Got, VersionChanged

__all__ = ["BLOCK_SIZE", "WHOLE_MAX", "CacheCounters", "DiskCache", "object_version"]

log = logging.getLogger("dataflow.cache")

BLOCK_SIZE = 8 * 1024 * 1024
WHOLE_MAX = 64 * 1024 * 1024
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_KEYS_MAX = 100_000
_WARNED: set[tuple[int, str]] = set()
_BROKEN: dict[tuple[int, str], str] = {}


class DiskCache(PassThrough, AbstractFileSystem):
    """Read ``inner`` through a cache directory shared by every process of the node.

    Args:
        inner: The filesystem holding the data (``S3Storage``, ``HdfsStorage``, ...).
        dir: The cache directory (node-local disk, e.g. ``/mnt/nvme/dataflow``).
        max_bytes: Size bound of the cache (high watermark); default 90% of the free space.
        block_size: Bytes per cached block for range reads.
        whole_max: Objects up to this size read from offset 0 are cached whole; larger ones,
            and any read that starts elsewhere, are cached block by block.
    """

    protocol = "dfcache"
    cachable = True

    def __init__(self, inner: AbstractFileSystem, dir: str, max_bytes: int | None = None, block_size: int = BLOCK_SIZE, whole_max: int = WHOLE_MAX, **kwargs):
        super().__init__(**kwargs)
        self.inner, self.cache_dir, self.max_bytes = inner, dir, max_bytes
        self.block_size, self.whole_max = int(block_size), int(whole_max)
        self.counters = CacheCounters()
        self._root = os.path.abspath(os.path.expanduser(dir))
        self._store: CacheStore | None = None
        self._keys: dict[tuple[str, str, int | None], str] = {}
        self.sep, self.root_marker = inner.sep, inner.root_marker
        try:
            self._fsid = inner.fsid
        except NotImplementedError:
            self._fsid = type(inner).__name__

    # --- the store, and degrading without it -----------------------------------------------

    def store(self) -> CacheStore | None:
        """This process's store for the cache directory, or None when it cannot be used."""
        where = (os.getpid(), self._root)
        if where in _BROKEN:
            return None
        store = self._store
        if store is not None and store.pid == where[0]:
            return store
        try:
            self._store = open_store(self.cache_dir, self.max_bytes)
            return self._store
        except LocalCacheError as exc:
            _BROKEN[where] = str(exc)
            self._warn_once(f"{exc}; reading directly from remote storage")
            return None

    def _warn_once(self, message: str) -> None:
        where = (os.getpid(), self._root)
        if where not in _WARNED:
            _WARNED.add(where)
            log.warning("dataflow cache: %s", message)

    def _local_failed(self, store: CacheStore, exc: LocalCacheError) -> None:
        if exc.errno in _FULL:
            self._warn_once(f"{exc}; evicting, and reading directly from remote storage meanwhile")
            try:  # the disk is fuller than max_bytes assumed: make room below what the cache holds now
                store.evict(min(store.low_bytes, int(store.used_bytes() * LOW_WATERMARK)), self.counters)
            except OSError as evict_exc:
                log.debug("dataflow cache: eviction after a full disk failed: %s", evict_exc)
            return
        _BROKEN[(os.getpid(), self._root)] = str(exc)
        self._warn_once(f"{exc}; reading directly from remote storage from now on")

    # --- keys, versions and fetches --------------------------------------------------------

    def _strip_protocol(self, path):  # an instance method: paths are the inner filesystem's
        if isinstance(path, list):
            return [self.inner._strip_protocol(p) for p in path]
        return self.inner._strip_protocol(path)

    def unstrip_protocol(self, name: str) -> str:
        return self.inner.unstrip_protocol(name)

    def _key(self, path: str, version: str, block: int | None = None) -> str:
        memo = (path, version, block)
        key = self._keys.get(memo)
        if key is None:
            text = f"{self._fsid}\0{path}\0{version}" + ("" if block is None else f"\0block={block}/{self.block_size}")
            key = hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=20).hexdigest()
            if len(self._keys) >= _KEYS_MAX:
                self._keys.clear()
            self._keys[memo] = key
        return key

    def _fetch(self, path: str, info: dict[str, Any], start: int | None, end: int | None) -> bytes:
        etag = info.get("ETag")
        if_match = getattr(self.inner, "cat_file_if_match", None)
        try:
            if etag and if_match is not None:
                # The ETag pins the content, so a whole object can be asked for as one full range
                # (some S3 servers answer ranged GETs faster; the bytes are the same).
                if start is None and end is None and info.get("size"):
                    start, end = 0, int(info["size"])
                return if_match(path, etag, start, end)
            return self.inner.cat_file(path, start=start, end=end)
        except OSError as exc:
            if exc.errno == errno.ESTALE:
                raise VersionChanged(path) from exc
            raise

    def _acquire(self, store: CacheStore, key: str, size: int, path: str, version: str, fetch: Callable[[], bytes]) -> Got:
        """Return the entry ``key``: found (a hit, counted by the reader), or fetched once across processes and stored."""
        fd, _ = store.open_entry(key, size)
        if fd is not None:
            return Got(fd, None, True)
        lock = store.fill_lock(key).acquire()
        try:
            fd, corrupt = store.open_entry(key, size)
            if fd is not None:  # filled by another process while this one waited
                lock.release()
                return Got(fd, None, True)
            if corrupt:
                store.drop(key)
                self.counters.add(corrupt=1)
            data = fetch()
            self.counters.add(misses=1, bytes_remote=len(data))
            if len(data) != size:
                raise VersionChanged(path)
        except BaseException:
            lock.release()
            raise
        store.put_behind(key, data, self.unstrip_protocol(path), version, lock, self.counters, on_error=lambda exc: self._local_failed(store, exc))
        return Got(None, data, False)

    def _info(self, path: str, info: dict[str, Any] | None) -> dict[str, Any]:
        return info if info is not None and "size" in info else self.inner.info(path)

    def _fresh_info(self, path: str) -> dict[str, Any]:
        self.inner.invalidate_cache(path)
        return self.inner.info(path)

    def _entry(self, store: CacheStore, path: str, info: dict[str, Any], block: int | None) -> Got:
        """The whole object (``block`` None) or one block of it, through the cache."""
        size = int(info["size"])
        if block is None:
            start, end = 0, size
        else:
            start, end = block * self.block_size, min(size, (block + 1) * self.block_size)
        version = object_version(info)
        if end - start > store.max_bytes:
            data = self._fetch(path, info, start, end)
            self.counters.add(misses=1, bytes_remote=len(data))
            return Got(None, data, False)
        fetch = lambda: self._fetch(path, info, None if block is None else start, None if block is None else end)  # noqa: E731
        try:
            return self._acquire(store, self._key(path, version, block), end - start, path, version, fetch)
        except LocalCacheError as exc:
            self._local_failed(store, exc)
        except TimeoutError as exc:
            self._warn_once(f"{exc}; reading directly from remote storage")
        data = self._fetch(path, info, None if block is None else start, None if block is None else end)
        self.counters.add(direct_reads=1, bytes_remote=len(data))
        return Got(None, data, False)

    def _with_retry(self, path: str, info: dict[str, Any], read: Callable[[dict[str, Any]], Any]) -> Any:
        try:
            return read(info)
        except VersionChanged:
            pass
        try:
            return read(self._fresh_info(path))
        except VersionChanged as exc:
            raise OSError(errno.ESTALE, f"{self.unstrip_protocol(path)} keeps changing while it is read; try again later") from exc

    # --- reads -----------------------------------------------------------------------------

    def cat_file(self, path, start=None, end=None, info: dict[str, Any] | None = None, **kwargs):
        """Return the object's bytes (or ``[start, end)``) through the cache.

        Args:
            path: The object's path.
            start: First byte (negative counts from the end).
            end: One past the last byte (negative counts from the end).
            info: The object's listing entry, when known: saves an ``info`` call.
        """
        path = self._strip_protocol(path)
        info = self._info(path, info)
        store = self.store()
        if store is None:
            data = self.inner.cat_file(path, start=start, end=end, **kwargs)
            self.counters.add(direct_reads=1, bytes_remote=len(data))
            return data
        return self._with_retry(path, info, lambda inf: self._cat(store, path, inf, start, end))

    def _cat(self, store: CacheStore, path: str, info: dict[str, Any], start, end) -> bytes:
        size = int(info["size"])
        start = 0 if start is None else (max(0, size + start) if start < 0 else min(start, size))
        end = size if end is None else (max(0, size + end) if end < 0 else min(end, size))
        if start >= end:
            return b""
        if start == 0 and end == size and size <= self.whole_max:
            blocks: list[int | None] = [None]
        else:
            blocks = list(range(start // self.block_size, (end - 1) // self.block_size + 1))
        parts = []
        for block in blocks:
            got = self._entry(store, path, info, block)
            base = 0 if block is None else block * self.block_size
            try:
                chunk = got.read(max(start, base) - base, min(end, base + (size if block is None else self.block_size)) - base)
            finally:
                got.close()
            if got.hit:
                self.counters.add(hits=1, bytes_local=len(chunk))
            parts.append(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None, info: dict[str, Any] | None = None, **kwargs):
        path = self._strip_protocol(path)
        if "r" not in mode or "+" in mode:
            return self.inner._open(path, mode=mode, block_size=block_size, autocommit=autocommit, cache_options=cache_options, **kwargs)
        store = self.store()
        info = self._info(path, info)
        if store is None:
            self.counters.add(direct_reads=1)
            return self.inner._open(path, mode=mode, block_size=block_size, cache_options=cache_options, **kwargs)
        return CachedFile(self, path, info, store)

    def warm(self, paths: list[str], infos: list[dict[str, Any]] | None = None, jobs: int = 8) -> int:
        """Fetch objects into the cache ahead of a run (whole, or every block when large); return bytes cached.

        Raises:
            ConnectionError, FileNotFoundError, PermissionError: from the remote store.
        """
        store = self.store()
        if store is None:
            return 0
        infos = infos or [None] * len(paths)

        def one(args) -> int:
            path, info = self._strip_protocol(args[0]), args[1]
            info = self._info(path, info)
            size = int(info["size"])
            if not size:
                return 0
            blocks = [None] if size <= self.whole_max else range((size - 1) // self.block_size + 1)
            for block in blocks:
                self._with_retry(path, info, lambda inf, b=block: self._entry(store, path, inf, b).close())
            return size

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            total = sum(pool.map(one, zip(paths, infos)))
        store.flush()
        return total
