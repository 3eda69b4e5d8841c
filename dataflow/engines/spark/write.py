"""Write Spark partitions as our part files and error records, from ``mapInArrow`` tasks.

Every task names its files after the run and its partition, so a retried task overwrites its
own files. Local data lands under the run's temporary folder; on remote storage each file is
written on local scratch and uploaded whole, once, to its final name under ``publish_root`` (or
the temporary folder when the runner gives none), so a failed task leaves no partial object.
Errors go to the same ``_errors`` side folder the Ray engine uses; the runner commits both.
"""
from __future__ import annotations

import posixpath
from typing import Any, Iterator

import pyarrow as pa

__all__ = ["error_writer", "part_writer", "WRITTEN_SCHEMA"]

WRITTEN_SCHEMA = "path string, rows long, bytes long"


def _write_part(fs, fmt: str, path: str, table: pa.Table, options: dict[str, Any]):
    import pyarrow.parquet as pq

    from connectors.formats import WrittenFile
    from connectors.registry import format_connector
    from dataflow.batch import from_rows

    if fmt == "parquet":
        # Arrow straight from Spark keeps nullable integers and exact types.
        with fs.open(path, "wb") as f:
            pq.write_table(table, f, compression=options.get("compression", "zstd"))
        return [WrittenFile(path, table.num_rows, fs.size(path))]
    cols = from_rows(table.to_pylist(), table.column_names)
    return format_connector(fmt).write(fs, path, cols, options)


def _room(count: int, size: float, per_row: float, rows_per_file: int, max_file_bytes: int | None) -> int:
    """Rows that still fit in the open file by count and by estimated bytes (an empty file takes at least one)."""
    room = rows_per_file - count
    if max_file_bytes and per_row:
        room = min(room, int((max_file_bytes - size) // per_row))
    return room if room > 0 or count else 1


def part_writer(
    sink_uri: str, fmt: str, options: dict[str, Any], storage_options: dict, tmp_data: str, run_id: str, rows_per_file: int,
    publish_root: str | None = None, max_file_bytes: int | None = None,
):
    """Return the ``mapInArrow`` function writing one partition's rows as part files (see the module docstring).

    A file ends at ``rows_per_file`` rows or when the rows' Arrow size reaches ``max_file_bytes``
    (the estimate the Ray engine's writer uses too).
    """

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from connectors.registry import filesystem, format_connector, io_counters, storage_traits, write_through_scratch
        from dataflow.runtime.io_stats import record_io

        fs = filesystem(sink_uri, storage_options)
        local = storage_traits(sink_uri).is_local
        folder = tmp_data if local else (publish_root or tmp_data)
        before = io_counters()
        ext = format_connector(fmt).extension
        partition = TaskContext.get().partitionId()
        pending: list[pa.RecordBatch] = []
        count, number, size = 0, 0, 0.0
        written = []

        def flush() -> None:
            nonlocal pending, count, number, size
            if not count:
                return
            table = pa.Table.from_batches(pending)
            stem = f"part-{run_id[:8]}-{partition:05d}-{number:04d}"
            name = f"{stem}.{ext}" if ext else f"files-{run_id[:8]}-{partition:05d}-{number:04d}"
            if local:
                written.extend(_write_part(fs, fmt, posixpath.join(folder, name), table, options))
            else:
                written.extend(write_through_scratch(fs, posixpath.join(folder, name), lambda lfs, path: _write_part(lfs, fmt, path, table, options)))
            pending, count, number, size = [], 0, number + 1, 0.0

        for batch in batches:
            per_row = batch.nbytes / batch.num_rows if batch.num_rows else 0.0
            start = 0
            while start < batch.num_rows:
                take = min(batch.num_rows - start, _room(count, size, per_row, rows_per_file, max_file_bytes))
                if take <= 0:
                    flush()
                    continue
                pending.append(batch.slice(start, take))
                count, size, start = count + take, size + take * per_row, start + take
                if _room(count, size, per_row, rows_per_file, max_file_bytes) <= 0:
                    flush()
        flush()
        record_io(sink_uri, storage_options, posixpath.dirname(tmp_data), "write", f"spark-{run_id[:8]}-{partition:05d}", before, io_counters())
        yield pa.record_batch(
            [pa.array([w.path for w in written], pa.string()), pa.array([w.rows for w in written], pa.int64()), pa.array([w.bytes for w in written], pa.int64())],
            names=["path", "rows", "bytes"],
        )

    return write


def error_writer(side: dict[str, Any]):
    """Return the ``mapInArrow`` function writing one partition's error rows as JSONL records."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from connectors.registry import filesystem
        from dataflow.runtime.error_sink import ErrorRecord, write_error_records
        from dataflow.runtime.stats import batch_key

        records = [ErrorRecord(str(r["source"]), r["op"], r["error_type"], r["reason"]) for b in batches for r in b.to_pylist()]
        if records:
            path = posixpath.join(side["errors_dir"], f"spark-{batch_key(r.source for r in records)}.jsonl")
            write_error_records(filesystem(side["uri"], side["storage_options"]), path, records)
        yield pa.record_batch([pa.array([len(records)], pa.int64())], names=["rows"])

    return write
