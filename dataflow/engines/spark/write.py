"""Write Spark partitions as our part files and error records, from ``mapInArrow`` tasks.

Every task names its files after the run and its partition, so a retried task overwrites its
own files. Data lands under the run's temporary folder, errors under the same ``_errors`` side
folder the Ray engine uses; the runner commits both.
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
    from dataflow.runtime.batch import from_rows

    if fmt == "parquet":
        # Arrow straight from Spark keeps nullable integers and exact types.
        with fs.open(path, "wb") as f:
            pq.write_table(table, f, compression=options.get("compression", "zstd"))
        return [WrittenFile(path, table.num_rows, fs.size(path))]
    cols = from_rows(table.to_pylist(), table.column_names)
    return format_connector(fmt).write(fs, path, cols, options)


def part_writer(sink_uri: str, fmt: str, options: dict[str, Any], storage_options: dict, tmp_data: str, run_id: str, rows_per_file: int):
    """Return the ``mapInArrow`` function writing one partition's rows as part files."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from connectors.registry import filesystem, format_connector

        fs = filesystem(sink_uri, storage_options)
        ext = format_connector(fmt).extension
        partition = TaskContext.get().partitionId()
        pending: list[pa.RecordBatch] = []
        count, number = 0, 0
        written = []

        def flush() -> None:
            nonlocal pending, count, number
            if not count:
                return
            table = pa.Table.from_batches(pending)
            stem = f"part-{run_id[:8]}-{partition:05d}-{number:04d}"
            name = f"{stem}.{ext}" if ext else f"files-{run_id[:8]}-{partition:05d}-{number:04d}"
            written.extend(_write_part(fs, fmt, posixpath.join(tmp_data, name), table, options))
            pending, count, number = [], 0, number + 1

        for batch in batches:
            start = 0
            while start < batch.num_rows:
                take = min(batch.num_rows - start, rows_per_file - count)
                pending.append(batch.slice(start, take))
                count += take
                start += take
                if count >= rows_per_file:
                    flush()
        flush()
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
