"""Read tasks of the Ray engine: fetch source files through the (cached) URI layer.

Files are listed at the driver; each task gets a batch of URIs with their listing entries, so
workers do not ask the store for metadata again. ``FetchFiles`` returns whole files (bytes) for
the row adapter; ``ReadStream`` streams line files (decompressing ``.gz``/``.bz2``/``.xz``/``.zst``)
line by line and WebDataset tar shards member by member into rows. Both report what the cache
tier did for their batch under ``<shard tmp>/_cache/``.
"""
from __future__ import annotations

import json
import posixpath
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pyarrow as pa

from connectors.formats import GONE, BadRecord, gone
from connectors.formats.lines import LineRun
from dataflow.columns import SOURCE, is_working, working_column_reason
from dataflow.runtime.report import CACHE_COUNTERS_DIR
from dataflow.batch import Columns, from_rows
from dataflow.runtime.error_sink import ErrorRecord
from dataflow.runtime.io_stats import IoSpan, record_io, shard_tmp_of
from dataflow.runtime.stage import StepStats
from dataflow.runtime.stats import SideOutputs, batch_key

if TYPE_CHECKING:
    from dataflow.runtime.settings import CacheSettings

__all__ = ["FILES_PER_TASK", "FetchFiles", "ReadStream", "cache_dir_of", "listing_items", "record_cache", "rows_block"]

READ_STEP = -1
FILES_PER_TASK = 16
SAMPLES_PER_BATCH = 64
LINES_PER_BATCH = 4096
_VERSION_KEYS = ("name", "size", "ETag", "mtime", "LastModified", "ino", "modificationTime")


def listing_items(uris: list[str], storage_options: dict, cache: CacheSettings | None) -> list[dict[str, str]]:
    """Return the read items of a shard: each URI with its listing entry (JSON) when the cache needs one.

    The entry comes from the driver's listing cache, so no extra request is made for remote
    stores that list with metadata (S3).
    """
    from connectors.registry import filesystem, strip_scheme

    if not cache or not uris:
        return [{"uri": u, "info": ""} for u in uris]
    fs = filesystem(uris[0], storage_options)
    items = []
    for u in uris:
        info = fs.info(strip_scheme(u))
        items.append({"uri": u, "info": json.dumps({k: info[k] for k in _VERSION_KEYS if info.get(k) is not None}, default=str)})
    return items


def cache_dir_of(side: SideOutputs) -> str:
    """Where a shard's read tasks leave their cache counters: next to its ``_stats``."""
    return posixpath.join(posixpath.dirname(side.stats_dir.rstrip("/")), CACHE_COUNTERS_DIR)


def record_cache(side: SideOutputs, name: str, key: str, before: dict[str, int] | None, after: dict[str, int] | None) -> None:
    """Write the cache counters a batch added (nothing without a cache, or when it did nothing)."""
    from connectors.registry import filesystem

    if before is None or after is None:
        return
    delta = {k: after[k] - before.get(k, 0) for k in after}
    if not any(delta.values()):
        return
    fs = filesystem(side.uri, side.storage_options)
    with fs.open(posixpath.join(cache_dir_of(side), f"{name}-{key}.json"), "wb") as f:
        f.write(json.dumps(delta).encode("utf-8"))


def _lineage_name(uri: str) -> str:
    """A line's file as the whole-file readers name it: a plain path for local files."""
    from connectors.registry import scheme_of, strip_scheme

    return strip_scheme(uri) if scheme_of(uri) == "file" else uri


def _path_of(uri: str) -> str:
    """The ``path`` the row adapter turns back into the URI (it prefixes ``scheme://``)."""
    from connectors.registry import scheme_of, strip_scheme

    return strip_scheme(uri) if scheme_of(uri) == "file" else uri.split("://", 1)[1]


class FetchFiles:
    """Read whole files: ``{uri, info}`` items in, ``{path, bytes}`` out (the shape of ``read_binary_files``).

    A file gone (or closed to this process) since it was listed is a read error of its own. A file
    of more than ``MAX_ROW`` bytes (more than an Arrow or Parquet value holds) is a ``FileTooLarge``
    read error: never fetched where its size is known without a request (a local file, a listing
    entry the cache passes), else once fetched (no ranged read: S3 refuses one of an empty object).
    """

    def __init__(self, source_uri: str, storage_options: dict, cache: CacheSettings | None, side: SideOutputs):
        self.source_uri, self.storage_options, self.cache, self.side = source_uri, storage_options, cache, side

    def __call__(self, batch: Columns) -> Columns:
        from connectors.formats.lines import MAX_ROW
        from connectors.registry import cache_counters, count_bytes_read, filesystem, io_counters, scheme_of, strip_scheme

        fs = filesystem(self.source_uri, self.storage_options, self.cache)
        before, io_before = cache_counters(fs), io_counters()
        local = scheme_of(self.source_uri) == "file"
        uris = [str(u) for u in batch["uri"]]
        kept, data, errors = [], [], []
        for uri, info in zip(uris, batch["info"]):
            path, entry = strip_scheme(uri), json.loads(info) if info else {}
            try:
                size = entry["size"] if "size" in entry else fs.size(path) if local else None
                got = None
                if size is None or size <= MAX_ROW:
                    got = fs.cat_file(path, info=entry) if before is not None and entry else fs.cat_file(path)
                    count_bytes_read(len(got))
            except GONE as exc:
                errors.append(ErrorRecord.of_read(gone(uri, exc)))
                continue
            if got is None or len(got) > MAX_ROW:
                errors.append(ErrorRecord(uri, "read", "FileTooLarge", f"file of more than {MAX_ROW} bytes: larger than one row holds (a value of Arrow and Parquet stays below 2 GiB)"))
                continue
            kept.append(uri)
            data.append(got)
        key = batch_key(uris)
        if errors:  # counted here; the adapter counts the files kept
            self.side.write("fetch", key, errors, {READ_STEP: StepStats(rows_in=len(errors), rows_errored=len(errors))})
        record_cache(self.side, "read", key, before, cache_counters(fs))
        record_io(self.side.uri, self.side.storage_options, shard_tmp_of(self.side), "read", key, io_before, io_counters())
        out_bytes = np.empty(len(data), dtype=object)
        out_bytes[:] = data
        return {"path": np.array([_path_of(u) for u in kept], dtype=object), "bytes": out_bytes}


def rows_block(rows: list[dict[str, Any]]) -> pa.Table | Columns:
    """Read rows (``__source__`` first) as the Arrow block Ray Data makes of their columns (``from_rows``), built by Arrow from the values themselves.

    Ray Data types each column with ``pa.array`` over its values, as this does, without the numpy
    columns between (a fifth of an untyped JSON-lines read). A column Arrow cannot type (a boolean
    beside an integer) is left to Ray's conversion of the columns, which keeps such a column as
    Python objects.
    """
    names = list(dict.fromkeys([SOURCE, *(k for r in rows for k in r)]))
    try:
        return pa.table([pa.array([r.get(k) for r in rows]) for k in names], names=names)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return from_rows(rows, [SOURCE])


def _runs(run: LineRun, batch: int, aligned) -> Iterator[pa.Table | dict | BadRecord | None]:
    """The rows of a run of JSON lines: a whole batch as one Arrow table where ``aligned()`` (no rows are pending) and Arrow gives what Python does (``arrow_batch``), else each line parsed by Python.

    A batch holds the same lines either way, so the columns' types are inferred over the same rows.
    After a batch Arrow does not take, at least ``batch`` lines are parsed by Python before it is
    asked again (a file of bad lines costs at most one try per batch of them).
    """
    from connectors.formats.jsonl_runs import arrow_batch
    from connectors.formats.lines import jsonl_row

    i, n = 0, len(run.lines)
    while i < n:
        floor = i
        if n - i >= batch and aligned():
            if (table := arrow_batch(run, i, batch)) is not None:
                yield table
                i += batch
                continue
            floor = i + batch
        while i < n:
            yield jsonl_row(run.src(i), run.lines[i], int64=True)
            i += 1
            if i >= floor and aligned():
                break


def _refused(row: dict[str, Any]) -> str | None:
    """Why a read row is refused (a value in a column spelled like dataflow's working columns), else None; such columns holding null are left out."""
    working = [k for k in row if is_working(k)]
    for k in working:
        if row[k] is not None:
            return working_column_reason(k)
    for k in working:
        del row[k]
    return None


class ReadStream:
    """Stream files into rows: UTF-8 typed jsonl and text lines a block at a time, untyped UTF-8 jsonl a batch at a time where Arrow reads it as Python does (``_runs``), other line formats line by line, WebDataset shards sample by sample.

    A bad line (or damaged member, or the damaged end of a compressed file) is a row error; the
    rows before it are kept. ``fmt`` is the source format (``text``, ``jsonl``, ``csv`` or
    ``webdataset``).
    """

    def __init__(self, source_uri: str, fmt: str, options: dict[str, Any], storage_options: dict, cache: CacheSettings | None, side: SideOutputs):
        self.source_uri, self.fmt, self.options, self.side = source_uri, fmt, options, side
        self.storage_options, self.cache = storage_options, cache

    def _records(self, uri: str, f):
        from connectors.formats.lines import read_text_blocks
        from connectors.registry import decompressed, jsonl_runs_reader, line_reader, typed_jsonl_reader, webdataset_reader

        if self.fmt == "webdataset":
            yield from webdataset_reader()(uri, f, self.options)
            return
        # UTF-8 lines (decompressed or plain) a block at a time; a damaged compressed file keeps every line before the damage
        utf8 = self.options.get("encoding", "utf-8").lower() in ("utf-8", "utf8")
        if self.fmt == "jsonl" and self.options.get("schema"):  # the declared columns, as Arrow tables
            read = typed_jsonl_reader(blocks=utf8)
        elif self.fmt == "jsonl" and utf8:  # runs of lines, a batch of them parsed at once where Arrow can (``__call__``)
            read = jsonl_runs_reader(LINES_PER_BATCH)
        else:
            read = read_text_blocks if utf8 and self.fmt == "text" and self.options.get("split") == "line" else line_reader(self.fmt)
        with decompressed(f, uri) as lines:
            yield from read(_lineage_name(uri), lines, self.options)

    def __call__(self, batch: Columns) -> Iterator[Columns]:
        from connectors.registry import cache_counters, count_bytes_read, filesystem, io_counters, strip_scheme

        fs = filesystem(self.source_uri, self.storage_options, self.cache)
        before, span = cache_counters(fs), IoSpan(io_counters)
        per_batch = SAMPLES_PER_BATCH if self.fmt == "webdataset" else LINES_PER_BATCH
        uris = [str(u) for u in batch["uri"]]
        st, rows, errors = StepStats(), [], []
        for uri, info in zip(uris, batch["info"]):
            kwargs = {"info": json.loads(info)} if before is not None and info else {}
            try:
                with fs.open(strip_scheme(uri), "rb", **kwargs) as f:
                    for rec in (r for item in self._records(uri, f) for r in (_runs(item, per_batch, lambda: not rows) if isinstance(item, LineRun) else (item,))):
                        if rec is None:  # a blank line
                            continue
                        if isinstance(rec, BadRecord):
                            errors.append(ErrorRecord.of_read(rec))
                            continue
                        if isinstance(rec, pa.Table):  # a block of text lines, already columns
                            span.pause()
                            if rows:
                                yield rows_block(rows)
                            yield rec
                            span.resume()
                            st.rows_out, rows = st.rows_out + len(rows) + rec.num_rows, []
                            continue
                        # One search over the keys first: a third of the cost of looking at each key (most rows have none)
                        if "__df_" in "\0".join(rec) and (reason := _refused(rec)) is not None:
                            errors.append(ErrorRecord(rec[SOURCE], "read", "ValueError", reason))
                            continue
                        rows.append(rec)
                        if len(rows) >= per_batch:
                            st.rows_out += len(rows)
                            span.pause()
                            yield rows_block(rows)
                            span.resume()
                            rows = []
                    count_bytes_read(f.tell())
            except GONE as exc:  # gone (or closed) since it was listed: the rows read before stay
                errors.append(ErrorRecord.of_read(gone(_lineage_name(uri), exc)))
        span.pause()
        if rows:
            st.rows_out += len(rows)
            yield rows_block(rows)
        st.rows_errored = len(errors)
        st.rows_in = st.rows_out + st.rows_errored
        key = batch_key(uris)
        self.side.write("read", key, errors, {READ_STEP: st})
        record_cache(self.side, "read", key, before, cache_counters(fs))
        record_io(self.side.uri, self.side.storage_options, shard_tmp_of(self.side), "read", key, {}, span.total)
