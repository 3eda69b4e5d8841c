"""Walk a folder tree in sorted path order, listing several folders at once.

A folder's files sort among its subfolders as if each subfolder were named ``name/``, so a tree's
sorted listing is each folder's sorted entries with every subfolder replaced, in place, by its own
listing. :func:`ordered` keeps that order on a stack of *segments*: a listed batch of files, or a
:class:`Folder` still to list. Given a way to start folders elsewhere, it starts the next ``ahead``
folders in that order while the consumer takes the ones before them, and takes each in order: the
batches are the serial walk's whatever finishes first, and an error comes where the serial walk
would meet it.

Local folders are scanned by worker processes (:class:`connectors.folder_scan.ScanPool`) once a
walk has met ``PARALLEL_AFTER`` files, while they prove faster than the walk alone (they do not
when the machine's other cores are busy: see :class:`LocalTree`). Threads lose there, every stat
releases and retakes the GIL (``benchmarks/listing_workers.py``, listing and shard cut of 100,000
files on 2 cores, load 1.5-2: one after another 5.16 us/file, 2 threads 7.22, 4 threads 9.05, 2
processes 3.09, 4 processes 3.58; with the other core busy: 4.55, 4.74, 5.35, 5.13, 6.07).
Object-store prefixes are found by threads, which wait on requests (``benchmarks/s3_listing.py``).
"""
from __future__ import annotations

import os
import posixpath
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from connectors.extensions import ExtensionFilter
from connectors.folder_scan import Scan, ScanPool, scan

__all__ = ["Batch", "Folder", "LocalTree", "RemoteTree", "listed", "ordered"]

Batch = tuple[list[tuple[str, dict[str, Any]]], dict[str, int]]  # (path, info) in path order; extension -> files skipped
LOCAL_WORKERS = max(2, min(4, os.cpu_count() or 1))  # processes scanning local folders (2 measured best on 2 cores)
PARALLEL_AFTER = 20_000  # files a local walk lists alone before it starts them (a small tree pays no process start)
REMOTE_WORKERS = 16  # threads listing object-store prefixes
AHEAD = 4  # folders started ahead of the consumer, per worker


class Folder:
    """A folder still to list: ``fetch(path)`` reads it (here or in a worker), ``then(path, read)`` turns that into segments in path order."""

    __slots__ = ("fetch", "future", "path", "then")

    def __init__(self, path: str, fetch: Callable[[str], Any], then: Callable[[str, Any], list[Any]]):
        self.path, self.fetch, self.then = path, fetch, then
        self.future: Future | None = None

    def take(self) -> list[Any]:
        """The segments: read now, or by the worker it was started on (its error raised here)."""
        return self.then(self.path, self.fetch(self.path) if self.future is None else self.future.result())


def ordered(segments: list[Any], start: Callable[[Folder], Future | None] | None = None, ahead: int = 1) -> Iterator[Batch]:
    """The batches of ``segments`` in path order, each folder's listing in its place (see the module docstring).

    ``start(folder)``: a future of ``folder.fetch(folder.path)`` run elsewhere, or None to read it
    in line when it is taken.
    """
    stack = segments[::-1]
    while stack:
        segment = stack.pop()
        if type(segment) is not Folder:
            yield segment
            continue
        if start is not None:
            _start(segment, start)
            left = ahead
            for waiting in reversed(stack):  # the stack's top is taken next
                if type(waiting) is Folder:
                    _start(waiting, start)
                    left -= 1
                    if not left:
                        break
        stack += segment.take()[::-1]


def _start(folder: Folder, start: Callable[[Folder], Future | None]) -> None:
    if folder.future is None:
        folder.future = start(folder)


def listed(rel: str, published: set[str] | None) -> bool:
    """Whether a path relative to a committed sink's root is in its manifest (always, for a plain folder)."""
    return published is None or rel in published or any(rel.startswith(f"{entry}/") for entry in published)


class LocalTree:
    """A local folder tree's listing (``os.scandir``), hidden names (``.x``, ``_x``) left out.

    The worker processes start once the walk has met ``parallel_after`` files, and are kept only if
    they list faster than the walk did alone: on a machine whose other cores are busy they lose
    (a trial over the next ``2 * parallel_after`` files, then the rest in line).

    Args:
        keep: The extension filter (skipped files are counted).
        recursive: List subfolders too.
        published: A committed sink's manifest paths (relative to the root), or None.
        cut: Characters of the root and its slash (what makes a path relative).
        workers: Processes that scan folders (1: none).
        parallel_after: Files listed in line first (default ``PARALLEL_AFTER``; 0: workers from
            the first folder, no trial).
    """

    def __init__(self, keep: ExtensionFilter, recursive: bool, published: set[str] | None, cut: int, workers: int = LOCAL_WORKERS,
                 parallel_after: int | None = None):  # fmt: skip
        self.keep, self.recursive, self.published, self.cut = keep, recursive, published, cut
        self.workers, self.seen = workers, 0
        self.parallel_after = PARALLEL_AFTER if parallel_after is None else parallel_after
        self._pool: ScanPool | None = None
        self._began = 0.0
        self._trial: tuple[int, float, float] | None = None  # files and time when the workers started, files/s before

    @contextmanager
    def walk(self, root: str) -> Iterator[Iterator[Batch]]:
        """The tree's batches in path order; the worker processes, if started, stop on exit."""
        self._began = time.perf_counter()
        try:
            yield ordered([Folder(root, scan, self.segments)], self._start if self.workers > 1 else None, AHEAD * self.workers)
        finally:
            if self._pool is not None:
                self._pool.close()

    def _start(self, folder: Folder) -> Future | None:
        if self.seen < self.parallel_after or self.workers <= 1:
            return None
        if self._pool is None:
            try:
                self._pool = ScanPool(self.workers)
            except OSError:  # no process can be started here: the same listing, in line
                self.workers = 1
                return None
            if self.parallel_after:
                now = time.perf_counter()
                self._trial = (self.seen, now, self.seen / max(now - self._began, 1e-9))
        elif self._trial is not None and self.seen >= self._trial[0] + 2 * self.parallel_after:
            files, began, alone = self._trial
            self._trial = None
            if (self.seen - files) / max(time.perf_counter() - began, 1e-9) < alone:
                self.workers = 1  # they lost: the folders they took come back in order, the rest are read in line
                return None
        return self._pool.submit(folder.path)

    def segments(self, folder: str, parts: Scan) -> list[Any]:
        """A scanned folder's segments in path order: batches of its files, and a :class:`Folder` per subfolder.

        The extension filter is asked once per distinct suffix pair of a run of files, and the
        run's listing entries are built in one comprehension.
        """
        out: list[Any] = []
        for part in parts:
            if type(part) is str:
                if self.recursive:
                    out.append(Folder(part, scan, self.segments))
                continue
            paths, sizes, mtimes, keys = part
            self.seen += len(paths)
            if self.published is not None:
                at = [i for i, path in enumerate(paths) if listed(path[self.cut:], self.published)]
                paths, sizes, mtimes, keys = ([column[i] for i in at] for column in part)
            verdicts = {key: self.keep.verdict(key) for key in set(keys)}
            skipped: dict[str, int] = {}
            files = zip(paths, sizes, mtimes)
            if any(v is not None for v in verdicts.values()):
                for key in keys:
                    if (ext := verdicts[key]) is not None:
                        skipped[ext] = skipped.get(ext, 0) + 1
                files = (f for f, key in zip(files, keys) if verdicts[key] is None)
            entries = [(p, {"name": p, "size": s, "type": "file", "mtime": m}) for p, s, m in files]
            if entries or skipped:
                out.append((entries, skipped))
        return out


class RemoteTree:
    """A folder on another filesystem (object stores, HDFS): its files, then each subfolder's whole subtree (``fs.find``).

    One ``find`` per top-level subfolder keeps the store's own paged listing (a thousand keys a
    request on S3) and runs ``workers`` of them at once, on threads.

    Args:
        fs: The fsspec filesystem.
        keep: The extension filter.
        root: The listed folder, without a trailing slash.
        published: A committed sink's manifest paths (relative to ``root``), or None.
        workers: Threads.
    """

    def __init__(self, fs, keep: ExtensionFilter, root: str, published: set[str] | None, workers: int = REMOTE_WORKERS):
        self.fs, self.keep, self.root, self.published, self.workers = fs, keep, root, published, workers

    @contextmanager
    def walk(self) -> Iterator[Iterator[Batch]]:
        """The tree's batches in path order; subtrees not yet started are dropped on exit."""
        executor = ThreadPoolExecutor(self.workers, thread_name_prefix="dataflow-listing")
        try:
            yield ordered(self.top(), lambda f: executor.submit(f.fetch, f.path), AHEAD * self.workers)
        finally:
            executor.shutdown(wait=False, cancel_futures=True)

    def top(self) -> list[Any]:
        """The root's segments in path order: a batch per run of its files, a :class:`Folder` per subfolder (its subtree)."""
        keyed = []
        for info in self.fs.ls(self.root, detail=True):
            path = info["name"].rstrip("/")
            name = posixpath.basename(path)
            if name[:1] not in (".", "_"):
                keyed.append((name + "/", path) if info.get("type") == "directory" else (name, info))
        keyed.sort(key=lambda k: k[0])
        out: list[Any] = []
        files: dict[str, dict[str, Any]] = {}
        for key, item in keyed:
            if key[-1] != "/":
                files[item["name"]] = item
                continue
            if files:
                out.append(self.batch(files))
                files = {}
            out.append(Folder(item, self._find, lambda _, found: [self.batch(found)]))
        if files:
            out.append(self.batch(files))
        return out

    def _find(self, path: str) -> dict[str, dict[str, Any]]:
        return self.fs.find(path, detail=True)

    def batch(self, found: dict[str, dict[str, Any]]) -> Batch:
        """The files of ``found`` (path -> info) the source reads, sorted, and those the extension filter skipped."""
        under, published = self.root + "/", self.published
        entries = []
        for path, info in sorted(found.items()):
            if info.get("type") == "directory":
                continue
            rel = path[len(under):] if path.startswith(under) else posixpath.basename(path)
            if any(part[:1] in (".", "_") for part in rel.split("/")):
                continue
            if published is None or listed(posixpath.relpath(path, self.root), published):
                entries.append((path, info))
        return self.keep.split(entries)
