"""A Spark Python data source over the connectors layer: remote, compressed and CSV files read through fsspec.

Spark's wheel has no ``hadoop-aws``, so ``s3://`` and other remote storage is read here, in Python
workers, with the same filesystems and cache tier (``job["cache"]``) the Ray engine uses. Each
file's task leaves what the cache tier and the storage client did (hits, retries, bytes read)
next to the shard's ``_stats``, as Ray's read tasks do. Line formats yield one
row per line (file number, line number, text), decoded in the source's ``encoding`` (an
undecodable line goes to the error sink); the engine builds ``__source__`` and parses natively.
CSV and Parquet yield rows with the Ray reader's semantics; bad records go to the error sink.
Line files are streamed (``.gz``, ``.bz2``, ``.xz``, ``.zst`` decompressed as they are read),
with the Ray engine's readers, so lines are numbered alike and a damaged compressed file keeps
the lines before the damage.
"""
from __future__ import annotations

import io
import json
import posixpath
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from connectors.formats import GONE, gone
from dataflow.columns import SOURCE
from dataflow.lineage import LINE, ROW, ROW_GROUP

__all__ = ["DataflowSource", "LINES_SCHEMA", "WHOLE_SCHEMA", "write_read_errors"]

LINES_SCHEMA = "file int, line long, text string"
WHOLE_SCHEMA = "file int, text string"
_BATCH_ROWS = 65536
_BATCH_BYTES = 64 << 20  # text in one batch: far below Arrow's 2 GiB of a string column, whatever the lines' length


def write_read_errors(side, name: str, key: str, records, counted: bool) -> None:
    """Write a read's bad records (``BadRecord``) to the error sink as ``<name>-<key>``, with their counters.

    Step -1 counts the run's input rows (``counted``); a named source's bad records count as errors only (-2).
    """
    from dataflow.runtime.error_sink import ErrorRecord
    from dataflow.runtime.stage import StepStats

    if not records:
        return
    errors = [ErrorRecord.of_read(r) for r in records]
    index = -1 if counted else -2
    side.write(name, key, errors, {index: StepStats(rows_in=len(errors) if counted else 0, rows_errored=len(errors))})


class DataflowSource(DataSource):
    """``spark.read.format("dataflow").option("job", <json>)``: files, kind, reader and storage options."""

    @classmethod
    def name(cls) -> str:
        return "dataflow"

    def schema(self):
        return StructType.fromJson(json.loads(self.options["schema"]))

    def reader(self, schema) -> DataSourceReader:
        return _Reader(json.loads(self.options["job"]))


class _Reader(DataSourceReader):
    def __init__(self, job: dict[str, Any]):
        self.job = job

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(i) for i in range(len(self.job["files"]))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from connectors.registry import cache_counters, count_bytes_read, decompressed, filesystem, io_counters, strip_scheme

        index = partition.value
        uri = self.job["files"][index]
        kind = self.job["kind"]
        fs = filesystem(uri, self.job["storage_options"], self.job.get("cache"))
        before, io_before = cache_counters(fs), io_counters()
        try:
            if kind == "parquet":
                yield from self._parquet(uri)
            else:
                with fs.open(strip_scheme(uri), "rb") as raw, decompressed(raw, uri) as f:
                    if kind == "whole":
                        yield from self._whole(uri, index, f)
                    elif kind == "lines":
                        yield from self._text(uri, index, f, "line")
                    else:
                        yield from self._csv(uri, f)
                    count_bytes_read(raw.tell())
        except GONE as exc:  # gone (or closed) since it was listed: the rows read before stay
            self._errors(uri, [gone(uri, exc)])
        self._counters(uri, fs, before, io_before)

    def _counters(self, uri: str, fs, before: dict | None, io_before: dict) -> None:
        """Leave what this file's read added to the cache and I/O counters (see ``dataflow.runtime.io_stats``)."""
        from connectors.registry import cache_counters, io_counters
        from dataflow.runtime.report import CACHE_COUNTERS_DIR
        from dataflow.runtime.io_stats import record_io
        from dataflow.runtime.stats import batch_key

        side = self.job["side"]
        shard_tmp = posixpath.dirname(side["stats_dir"].rstrip("/"))
        key = batch_key([uri])
        record_io(side["uri"], side["storage_options"], shard_tmp, "spark-read", key, io_before, io_counters())
        if before is not None:
            record_io(side["uri"], side["storage_options"], shard_tmp, "spark-read", key, before, cache_counters(fs), folder=CACHE_COUNTERS_DIR)

    def _errors(self, uri: str, records) -> None:
        from dataflow.runtime.stats import SideOutputs, batch_key

        write_read_errors(SideOutputs(**self.job["side"]), "spark-read", batch_key([uri]), records, self.job["counted"])

    def _batches(self, uri: str, records, columns, size=lambda rec: 0) -> Iterator[pa.RecordBatch]:
        """Stream a reader's rows as record batches of ``columns(chunk)``, at most ``_BATCH_ROWS`` rows and about ``_BATCH_BYTES`` (``size(row)``) each; its bad records go to the error sink at the end."""
        from connectors.formats import BadRecord

        rows, bad, held = [], [], 0
        for rec in records:
            if isinstance(rec, BadRecord):
                bad.append(rec)
                continue
            rows.append(rec)
            held += size(rec)
            if len(rows) >= _BATCH_ROWS or held >= _BATCH_BYTES:
                yield columns(rows)
                rows, held = [], 0
        if rows:
            yield columns(rows)
        self._errors(uri, bad)

    def _text(self, uri: str, index: int, f, split: str) -> Iterator[pa.RecordBatch]:
        """Lines (or the whole file) decoded in the source's ``encoding`` by the Ray engine's reader; undecodable ones are row errors."""
        from connectors.formats.lines import MAX_LINE
        from connectors.registry import line_reader

        source = self.job["options"]
        options = {"encoding": source.get("encoding", "utf-8"), "split": split, "skip_empty": False, "max_line_bytes": source.get("max_line_bytes", MAX_LINE)}

        def columns(chunk: list[dict]) -> pa.RecordBatch:
            out = [pa.array([index] * len(chunk), pa.int32())]
            if split == "line":  # the reader's sources end in "#line=N"
                out.append(pa.array([int(r[SOURCE].rsplit(LINE, 1)[1]) for r in chunk], pa.int64()))
            out.append(pa.array([r["text"] for r in chunk], pa.string()))
            return pa.record_batch(out, names=["file", "line", "text"] if split == "line" else ["file", "text"])

        yield from self._batches(uri, line_reader("text")(uri, f, options), columns, lambda rec: len(rec["text"]))

    def _whole(self, uri: str, index: int, f) -> Iterator[pa.RecordBatch]:
        """The file as one row; one of more than the job's ``whole_row_bytes`` is a row error, read no further (the JVM holds a row whole, a few times)."""
        from connectors.formats import BadRecord
        from connectors.formats.lines import read_whole

        data = read_whole(uri, f, self.job["whole_row_bytes"], "larger than one row of Spark holds; read it with split: line, or on Ray")
        if isinstance(data, BadRecord):
            self._errors(uri, [data])
            return
        yield from self._text(uri, index, io.BytesIO(data), "file")

    def _csv(self, uri: str, f) -> Iterator[pa.RecordBatch]:
        from connectors.registry import line_reader

        names = self.job["columns"]

        def columns(chunk: list[dict]) -> pa.RecordBatch:
            return pa.record_batch([pa.array([r.get(n) for r in chunk], pa.string()) for n in names], names=names)

        yield from self._batches(uri, line_reader("csv")(uri, f, self.job["options"]), columns)

    def _parquet(self, uri: str) -> Iterator[pa.RecordBatch]:
        """The file's rows, a row group at a time; a footer that does not read is one row error, as is each row group that does not (``<file>#row_group=N``, as on Ray)."""
        from connectors.registry import parquet_parts, read_parquet_part, unreadable_parquet

        names, storage, cache = self.job["columns"], self.job["storage_options"], self.job.get("cache")
        try:
            parts = parquet_parts(uri, storage, cache)
        except (pa.ArrowException, OSError) as exc:
            self._errors(uri, [unreadable_parquet(uri, exc)])
            return
        bad = []
        for group, first, _ in parts:
            try:
                table = read_parquet_part(uri, group, storage, cache=cache)
            except (pa.ArrowException, OSError) as exc:  # a corrupt page: the file's other row groups are read
                bad.append(unreadable_parquet(f"{uri}{ROW_GROUP}{group}", exc))
                continue
            own = pa.array([f"{uri}{ROW}{first + i}" for i in range(table.num_rows)], pa.string())
            if SOURCE in table.column_names and self.job["options"].get("keep_lineage"):
                own = table.column(SOURCE)
            if SOURCE in table.column_names:  # an earlier pipeline's lineage: replaced unless kept
                table = table.drop_columns([SOURCE])
            table = table.append_column(SOURCE, own)
            yield from table.select(names).to_batches()
        self._errors(uri, bad)

