"""``CachedFile``: a read-only file ``DiskCache`` serves from cache entries, and the entry in hand (``Got``)."""
from __future__ import annotations

import errno
import os
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from fsspec.spec import AbstractBufferedFile

if TYPE_CHECKING:
    from connectors.storage.cache_store import CacheStore
    from connectors.storage.disk_cache import DiskCache

__all__ = ["CachedFile", "Got", "VersionChanged", "read_fd"]


class VersionChanged(Exception):
    """The object changed between its listing and the fetch."""


def read_fd(fd: int, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of an open file (fewer at its end)."""
    parts, offset = [], start
    while offset < end:
        chunk = os.pread(fd, end - offset, offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


class Got:
    """An entry in hand: a pinned local fd (a hit, or a fresh fill) or the fetched bytes."""

    __slots__ = ("data", "fd", "hit")

    def __init__(self, fd: int | None, data: bytes | None, hit: bool):
        self.fd, self.data, self.hit = fd, data, hit

    def read(self, start: int, end: int) -> bytes:
        return read_fd(self.fd, start, end) if self.fd is not None else self.data[start:end]

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None



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
        self._whole: Got | None = None
        self._blocks: OrderedDict[int, Got] = OrderedDict()
        self._by_blocks: bool | None = None

    def _get(self, block: int | None) -> Got:
        fs: DiskCache = self.fs
        try:
            return fs._entry(self.store, self.path, self.object_info, block)
        except VersionChanged:
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
