"""Parquet sink writer."""
from __future__ import annotations

import pyarrow.parquet as pq

from connectors.formats import WrittenFile
from dataflow.batch import to_arrow


class ParquetFormat:
    """Write a batch as one Parquet file (zstd), or several when ``max_file_bytes`` demands."""

    extension = "parquet"

    @staticmethod
    def write(fs, path: str, cols, options) -> list[WrittenFile]:
        table = to_arrow(cols)
        with fs.open(path, "wb") as f:
            pq.write_table(table, f, compression=options.get("compression", "zstd"))
        return [WrittenFile(path, table.num_rows, fs.size(path))]


def row_groups(fs, path: str) -> list[tuple[int, int, int]]:
    """Return ``(row_group, first_row, num_rows)`` for each row group of a Parquet file (footer only)."""
    with fs.open(path, "rb") as f:
        meta = pq.ParquetFile(f).metadata
    out, offset = [], 0
    for i in range(meta.num_row_groups):
        n = meta.row_group(i).num_rows
        out.append((i, offset, n))
        offset += n
    return out


def schema(fs, path: str):
    """Return a Parquet file's Arrow schema (footer only)."""
    with fs.open(path, "rb") as f:
        return pq.ParquetFile(f).schema_arrow


def read_row_group(fs, path: str, row_group: int, columns: list[str] | None = None):
    """Read one row group as an Arrow table (its column chunks count as bytes read)."""
    from connectors.storage.io_counters import COUNTERS

    with fs.open(path, "rb") as f:
        parquet = pq.ParquetFile(f)
        table = parquet.read_row_group(row_group, columns=columns)
    group = parquet.metadata.row_group(row_group)
    wanted = set(table.column_names)
    chunks = (group.column(i) for i in range(group.num_columns))
    COUNTERS.add(bytes_read=sum(c.total_compressed_size for c in chunks if c.path_in_schema.split(".", 1)[0] in wanted))
    return table
