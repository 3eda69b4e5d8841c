"""A Spark Python data source over the connectors layer: remote files (and CSV) read through fsspec.

Spark's wheel has no ``hadoop-aws``, so ``s3://`` and other remote storage is read here, in Python
workers, with the same filesystems (and cache tier) the Ray engine uses. Line formats yield one
row per line (file number, line number, text); the engine builds ``source`` and parses natively.
CSV and Parquet yield rows with the Ray reader's semantics; bad records go to the error sink.
"""
from __future__ import annotations

import json
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

__all__ = ["DataflowSource", "LINES_SCHEMA", "WHOLE_SCHEMA"]

LINES_SCHEMA = "file int, line long, text string"
WHOLE_SCHEMA = "file int, text string"
_BATCH_ROWS = 65536


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
        from connectors.registry import filesystem, strip_scheme

        index = partition.value
        uri = self.job["files"][index]
        kind = self.job["kind"]
        if kind == "parquet":
            yield from self._parquet(uri)
            return
        with filesystem(uri, self.job["storage_options"]).open(strip_scheme(uri), "rb") as f:
            data = f.read()
        if kind == "lines":
            yield from _lines(index, data)
        elif kind == "whole":
            yield pa.record_batch([pa.array([index], pa.int32()), pa.array([data.decode("utf-8", "replace")], pa.string())], names=["file", "text"])
        else:
            yield from self._csv(uri, data)

    def _errors(self, uri: str, records) -> None:
        from dataflow.runtime.error_sink import ErrorRecord
        from dataflow.runtime.stage import StepStats
        from dataflow.runtime.stats import SideOutputs, batch_key

        if not records:
            return
        errors = [ErrorRecord(r.source, "read", r.error_type, r.reason) for r in records]
        # Step -1 counts the run's input rows; a named source's bad records count as errors only (-2).
        index = -1 if self.job["counted"] else -2
        stats = {index: StepStats(rows_in=len(errors) if index == -1 else 0, rows_errored=len(errors))}
        SideOutputs(**self.job["side"]).write("spark-read", batch_key([uri]), errors, stats)

    def _csv(self, uri: str, data: bytes) -> Iterator[pa.RecordBatch]:
        from connectors.formats import BadRecord
        from connectors.registry import line_reader

        names = self.job["columns"]
        rows, bad = [], []
        for rec in line_reader("csv")(uri, data, self.job["options"]):
            (bad if isinstance(rec, BadRecord) else rows).append(rec)
        self._errors(uri, bad)
        for start in range(0, len(rows), _BATCH_ROWS):
            chunk = rows[start : start + _BATCH_ROWS]
            yield pa.record_batch([pa.array([r.get(n) for r in chunk], pa.string()) for n in names], names=names)

    def _parquet(self, uri: str) -> Iterator[pa.RecordBatch]:
        from connectors.registry import parquet_parts, read_parquet_part

        names = self.job["columns"]
        for group, first, _ in parquet_parts(uri, self.job["storage_options"]):
            table = read_parquet_part(uri, group, self.job["storage_options"])
            if "source" not in table.column_names:
                table = table.append_column("source", pa.array([f"{uri}#row={first + i}" for i in range(table.num_rows)], pa.string()))
            yield from table.select(names).to_batches()


def _lines(index: int, data: bytes) -> Iterator[pa.RecordBatch]:
    lines = data.splitlines()
    for start in range(0, len(lines), _BATCH_ROWS):
        chunk = lines[start : start + _BATCH_ROWS]
        yield pa.record_batch(
            [
                pa.array([index] * len(chunk), pa.int32()),
                pa.array(range(start + 1, start + 1 + len(chunk)), pa.int64()),
                pa.array([line.decode("utf-8", "replace") for line in chunk], pa.string()),
            ],
            names=["file", "line", "text"],
        )
