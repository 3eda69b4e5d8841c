"""Shards cut from a listing's pages while the listing goes on: sized from the cluster, named by their files.

The lister thread pushes the source's sorted pages (``connectors.listing.list_pages``) into a
:class:`ShardFeed`; the runner takes them as *waves* (every shard cut so far) once the engine is
up, so the first shards run while later pages are still listed. A shard's id is its index and a
hash of its files' names, sizes and versions, so a resumed run, which lists the whole input first,
finds the shards of the run it resumes by id, however that run was cut short. The input's
fingerprint (the same hash over every file) is known when the listing ends.
"""
from __future__ import annotations

import hashlib
import math
import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from dataflow.runtime.progress import MIN_FILES_PER_SHARD, Shard

__all__ = ["FILES_PER_CPU", "MAX_FILES_PER_SHARD", "ShardCutter", "ShardFeed", "cut_count", "shard_size"]

FILES_PER_CPU = 256  # files a shard holds per CPU of the cluster: a shard is about one round of work for every CPU
MAX_FILES_PER_SHARD = 100_000  # bounds a shard's marker (it lists the shard's inputs)


def shard_size(cpus: float | None, *, files_per_shard: int | None = None, min_files: int = MIN_FILES_PER_SHARD) -> int:
    """Files per shard: ``files_per_shard`` when the user set it, else ``FILES_PER_CPU`` per CPU of the cluster.

    At least ``min_files`` (the smallest shard worth one job of the engine), at most
    ``MAX_FILES_PER_SHARD`` (unless ``min_files`` is larger).
    """
    if files_per_shard:
        return int(files_per_shard)
    return max(min_files, min(MAX_FILES_PER_SHARD, math.ceil(FILES_PER_CPU * (cpus or 1))))


def _version(info: Mapping[str, Any]) -> Any:
    return info.get("ETag") or info.get("etag") or info.get("mtime") or info.get("LastModified") or ""


class ShardCutter:
    """Cut sorted ``(uri, info)`` entries into shards of ``size`` files, in order, as they come.

    Args:
        size: Files per shard (the last one may hold fewer).
        path_of: The path a URI with a scheme is hashed by (the scheme left out).
    """

    def __init__(self, size: int, path_of: Callable[[str], str] = str):
        self.size, self.path_of = size, path_of
        self._uris: list[str] = []
        self._digest = hashlib.sha1()
        self._whole = hashlib.sha256()
        self.count = 0  # shards cut so far

    def add(self, entries: Iterable[tuple[str, Mapping[str, Any]]]) -> list[Shard]:
        """Take the next entries; return the shards they complete."""
        entries = list(entries)
        out, at, path_of = [], 0, self.path_of
        while at < len(entries):
            take = entries[at : at + self.size - len(self._uris)]
            # A URI without a scheme is a local path already (the listing's are absolute and normalized).
            text = "".join([f"{path_of(u) if '://' in u else u}\0{i.get('size')}\0{_version(i)}\n" for u, i in take]).encode("utf-8", "surrogatepass")
            self._digest.update(text)
            self._whole.update(text)
            self._uris += [u for u, _ in take]
            at += len(take)
            if len(self._uris) == self.size:
                out.append(self._cut())
        return out

    def finish(self) -> list[Shard]:
        """The last, partial shard: the files left, or none; an empty one when the input had no file (a run still commits)."""
        return [self._cut()] if self._uris or not self.count else []

    @property
    def fingerprint(self) -> str:
        """The hash of every entry taken so far (the input fingerprint once the listing ended)."""
        return self._whole.hexdigest()[:16]

    def _cut(self) -> Shard:
        shard = Shard(self.count, None, tuple(self._uris), digest=self._digest.hexdigest()[:12])
        self.count += 1
        self._uris, self._digest = [], hashlib.sha1()
        return shard


def cut_count(entries: list[tuple[str, Mapping[str, Any]]], count: int, path_of: Callable[[str], str] = str, cutter: ShardCutter | None = None) -> list[Shard]:
    """Exactly ``count`` shards of the sorted ``entries`` (``--shard i/N``; empty ones when ``count`` exceeds the files).

    ``cutter``: a new one to cut with, resized (its fingerprint is then the whole listing's, as for a plain run).
    """
    size = max(1, math.ceil(len(entries) / count))
    if cutter is None:
        cutter = ShardCutter(size, path_of)
    cutter.size = size
    shards = [s for s in cutter.add(entries) + cutter.finish() if s.inputs]
    return [replace(s, count=count) for s in shards] + [Shard(i, count, ()) for i in range(len(shards), count)]


class ShardFeed:
    """A source's listing pages, listed on a thread; cut into shards by the consumer (see the module docstring).

    Args:
        pages: Yields the source's listing pages, ``(entries, skipped)`` (``connectors.listing.Listing``), in URI order.
    """

    _END = object()

    @classmethod
    def of_source(cls, source, storage: dict[str, Any]) -> ShardFeed:
        """List ``source`` (a ``SourceSpec``) on a new thread: its files, or an in-memory source as its one input."""
        from connectors.registry import list_source_pages

        from dataflow.runtime.held import held_pages

        if source.in_memory:
            return cls(lambda: held_pages(source.uri))
        return cls(lambda: list_source_pages(source.uri, source.format, source.options, storage))

    def __init__(self, pages: Callable[[], Iterator[tuple[list, dict[str, int]]]]):
        self._pages: queue.Queue = queue.Queue()
        self.skipped: Counter[str] = Counter()  # extension -> files left out, complete once the listing ended
        self._thread = threading.Thread(target=self._list, args=(pages,), name="dataflow-lister", daemon=True)
        self._thread.start()

    def _list(self, pages: Callable[[], Iterator[Any]]) -> None:
        try:
            for page in pages():
                self._pages.put(tuple(page))
            self._pages.put(self._END)
        except BaseException as exc:  # noqa: BLE001 - raised again on the consumer's thread
            self._pages.put(exc)

    def _take(self, block: bool, timeout: float | None = None):
        item = self._pages.get(block=block, timeout=timeout)
        if isinstance(item, BaseException):
            raise item
        return item

    def waves(self, cutter: ShardCutter, ready: threading.Event | None = None) -> Iterator[list[Shard]]:
        """Lists of shards in order: each wave every shard cut since the last one (waiting for at least one); the last one when the listing ends.

        ``ready``: the first wave waits, while the listing goes on, until it is set (the engine's
        warm-up: paid beside the listing rather than by the first shard).
        """
        ended, first = False, True
        while not ended:
            wave: list[Shard] = []
            while not ended:
                hold = first and ready is not None and not ready.is_set()
                try:
                    page = self._take(True, 0.05) if hold and wave else self._take(not wave)
                except queue.Empty:
                    if hold:
                        continue
                    break
                if page is self._END:
                    ended = True
                    wave += cutter.finish()
                    break
                entries, skipped = page
                self.skipped.update(skipped)
                wave += cutter.add(entries)
            if wave:
                first = False
                yield wave

    def first_shards(
        self, cutter: ShardCutter, *, streamed: bool, count: int | None = None, ready: threading.Event | None = None
    ) -> tuple[list[Shard], Iterator[list[Shard]]]:
        """The shards to start with, and the waves after them: the first wave when ``streamed`` (see :meth:`waves`), else every shard (exactly ``count`` when given)."""
        if streamed:
            waves = self.waves(cutter, ready)
            return next(waves), waves
        if count is not None:
            return cut_count(self.entries(), count, cutter=cutter), iter(())
        return [s for wave in self.waves(cutter) for s in wave], iter(())

    def entries(self) -> list[tuple[str, Mapping[str, Any]]]:
        """Every entry, once the listing ended."""
        out: list[tuple[str, Mapping[str, Any]]] = []
        while (page := self._take(True)) is not self._END:
            entries, skipped = page
            self.skipped.update(skipped)
            out += entries
        return out
