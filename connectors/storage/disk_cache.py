"""DiskCache: a wrapping fsspec filesystem that reads remote objects through a node-local cache.

Like fsspec's ``simplecache::``, but built for many processes sharing one directory (the
protocols live in ``connectors.storage.cache_store``). Reads of a whole object fill one entry;
range reads (a Parquet footer, a row group) fill fixed-size blocks, so they never pull the whole
file. Entries are keyed by the object's path and version (ETag, else size + mtime + inode), so
a changed object is fetched again. Writes, listings and metadata go straight to the inner
filesystem. The cache never fails a read: when its directory is missing, read-only or full, the
object is read from remote and one warning is logged.

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
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any, Callable

from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

from connectors.storage.cache_store import LOW_WATERMARK, CacheStore, LocalCacheError, open_store

__all__ = ["BLOCK_SIZE", "WHOLE_MAX", "CacheCounters", "DiskCache", "object_version"]

log = logging.getLogger("dataflow.cache")

BLOCK_SIZE = 8 * 1024 * 1024
WHOLE_MAX = 64 * 1024 * 1024
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_KEYS_MAX = 100_000
_WARNED: set[tuple[int, str]] = set()
_BROKEN: dict[tuple[int, str], str] = {}


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


class _VersionChanged(Exception):
    """The object changed between its listing and the fetch."""


def _read_fd(fd: int, start: int, end: int) -> bytes:
    parts, offset = [], start
    while offset < end:
        chunk = os.pread(fd, end - offset, offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


class _Got:
    """An entry in hand: a pinned local fd (a hit, or a fresh fill) or the fetched bytes."""

    __slots__ = ("data", "fd", "hit")

    def __init__(self, fd: int | None, data: bytes | None, hit: bool):
        self.fd, self.data, self.hit = fd, data, hit

    def read(self, start: int, end: int) -> bytes:
        return _read_fd(self.fd, start, end) if self.fd is not None else self.data[start:end]

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class DiskCache(AbstractFileSystem):
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
                raise _VersionChanged(path) from exc
            raise

    def _acquire(self, store: CacheStore, key: str, size: int, path: str, version: str, fetch: Callable[[], bytes]) -> _Got:
        """Return the entry ``key``: found (a hit, counted by the reader), or fetched once across processes and stored."""
        fd, _ = store.open_entry(key, size)
        if fd is not None:
            return _Got(fd, None, True)
        lock = store.fill_lock(key).acquire()
        try:
            fd, corrupt = store.open_entry(key, size)
            if fd is not None:  # filled by another process while this one waited
                lock.release()
                return _Got(fd, None, True)
            if corrupt:
                store.drop(key)
                self.counters.add(corrupt=1)
            data = fetch()
            self.counters.add(misses=1, bytes_remote=len(data))
            if len(data) != size:
                raise _VersionChanged(path)
        except BaseException:
            lock.release()
            raise
        store.put_behind(key, data, self.unstrip_protocol(path), version, lock, self.counters, on_error=lambda exc: self._local_failed(store, exc))
        return _Got(None, data, False)

    def _info(self, path: str, info: dict[str, Any] | None) -> dict[str, Any]:
        return info if info is not None and "size" in info else self.inner.info(path)

    def _fresh_info(self, path: str) -> dict[str, Any]:
        self.inner.invalidate_cache(path)
        return self.inner.info(path)

    def _entry(self, store: CacheStore, path: str, info: dict[str, Any], block: int | None) -> _Got:
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
            return _Got(None, data, False)
        fetch = lambda: self._fetch(path, info, None if block is None else start, None if block is None else end)  # noqa: E731
        try:
            return self._acquire(store, self._key(path, version, block), end - start, path, version, fetch)
        except LocalCacheError as exc:
            self._local_failed(store, exc)
        except TimeoutError as exc:
            self._warn_once(f"{exc}; reading directly from remote storage")
        data = self._fetch(path, info, None if block is None else start, None if block is None else end)
        self.counters.add(direct_reads=1, bytes_remote=len(data))
        return _Got(None, data, False)

    def _with_retry(self, path: str, info: dict[str, Any], read: Callable[[dict[str, Any]], Any]) -> Any:
        try:
            return read(info)
        except _VersionChanged:
            pass
        try:
            return read(self._fresh_info(path))
        except _VersionChanged as exc:
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

    # --- everything else goes to the inner filesystem --------------------------------------

    def ls(self, path, detail=True, **kwargs):
        return self.inner.ls(path, detail=detail, **kwargs)

    def info(self, path, **kwargs):
        return self.inner.info(path, **kwargs)

    def find(self, path, maxdepth=None, withdirs=False, detail=False, **kwargs):
        return self.inner.find(path, maxdepth=maxdepth, withdirs=withdirs, detail=detail, **kwargs)

    def glob(self, path, maxdepth=None, **kwargs):
        return self.inner.glob(path, maxdepth=maxdepth, **kwargs)

    def exists(self, path, **kwargs):
        return self.inner.exists(path, **kwargs)

    def isdir(self, path):
        return self.inner.isdir(path)

    def isfile(self, path):
        return self.inner.isfile(path)

    def makedirs(self, path, exist_ok=False):
        return self.inner.makedirs(path, exist_ok=exist_ok)

    def mkdir(self, path, create_parents=True, **kwargs):
        return self.inner.mkdir(path, create_parents=create_parents, **kwargs)

    def rmdir(self, path):
        return self.inner.rmdir(path)

    def rm_file(self, path):
        return self.inner.rm_file(path)

    def rm(self, path, recursive=False, maxdepth=None):
        return self.inner.rm(path, recursive=recursive, maxdepth=maxdepth)

    def cp_file(self, path1, path2, **kwargs):
        return self.inner.cp_file(path1, path2, **kwargs)

    def copy(self, path1, path2, recursive=False, maxdepth=None, on_error=None, **kwargs):
        return self.inner.copy(path1, path2, recursive=recursive, maxdepth=maxdepth, on_error=on_error, **kwargs)

    def mv(self, path1, path2, recursive=False, maxdepth=None, **kwargs):
        return self.inner.mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)

    def put_file(self, lpath, rpath, callback=None, mode="overwrite", **kwargs):
        kwargs = {**kwargs, **({"callback": callback} if callback is not None else {})}
        return self.inner.put_file(lpath, rpath, mode=mode, **kwargs)

    def put(self, lpath, rpath, recursive=False, callback=None, maxdepth=None, **kwargs):
        kwargs = {**kwargs, **({"callback": callback} if callback is not None else {})}
        return self.inner.put(lpath, rpath, recursive=recursive, maxdepth=maxdepth, **kwargs)

    def pipe_file(self, path, value, mode="overwrite", **kwargs):
        return self.inner.pipe_file(path, value, mode=mode, **kwargs)

    def touch(self, path, truncate=True, **kwargs):
        return self.inner.touch(path, truncate=truncate, **kwargs)

    def created(self, path):
        return self.inner.created(path)

    def modified(self, path):
        return self.inner.modified(path)

    def checksum(self, path):
        return self.inner.checksum(path)

    def ukey(self, path):
        return self.inner.ukey(path)

    def invalidate_cache(self, path=None):
        return self.inner.invalidate_cache(path)


class CachedFile(AbstractBufferedFile):
    """A read-only file served from cache entries: the whole object, or blocks as they are touched.

    The first read decides: from offset 0 on an object up to ``whole_max`` bytes, the whole object
    is cached; otherwise (a footer first, or a large object) only the blocks read are. Entries in
    use stay pinned until the file is closed.
    """

    _KEEP_BLOCKS = 4

    def __init__(self, cache: DiskCache, path: str, info: dict[str, Any], store: CacheStore):
        super().__init__(cache, path, mode="rb", block_size=cache.block_size, cache_type="none", size=int(info["size"]))
        self.object_info, self.store = info, store
        self._whole: _Got | None = None
        self._blocks: OrderedDict[int, _Got] = OrderedDict()
        self._by_blocks: bool | None = None

    def _get(self, block: int | None) -> _Got:
        fs: DiskCache = self.fs
        try:
            return fs._entry(self.store, self.path, self.object_info, block)
        except _VersionChanged:
            self.close()
            raise OSError(errno.ESTALE, f"{fs.unstrip_protocol(self.path)} changed while it was open; open it again") from None

    def _fetch_range(self, start: int, end: int) -> bytes:
        fs: DiskCache = self.fs
        if self._by_blocks is None:
            self._by_blocks = not (start == 0 and self.size <= fs.whole_max)
        if not self._by_blocks:
            if self._whole is None:
                self._whole = self._get(None)
                fs.counters.add(hits=int(self._whole.hit))
            chunk = self._whole.read(start, end)
            if self._whole.hit:
                fs.counters.add(bytes_local=len(chunk))
            return chunk
        bs, parts = fs.block_size, []
        for block in range(start // bs, (end - 1) // bs + 1):
            got = self._blocks.get(block)
            if got is None:
                got = self._blocks[block] = self._get(block)
                fs.counters.add(hits=int(got.hit))
                while len(self._blocks) > self._KEEP_BLOCKS:
                    self._blocks.popitem(last=False)[1].close()
            else:
                self._blocks.move_to_end(block)
            chunk = got.read(max(start, block * bs) - block * bs, min(end, (block + 1) * bs) - block * bs)
            if got.hit:
                fs.counters.add(bytes_local=len(chunk))
            parts.append(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def close(self) -> None:
        if self._whole is not None:
            self._whole.close()
        for got in self._blocks.values():
            got.close()
        self._blocks.clear()
        super().close()
