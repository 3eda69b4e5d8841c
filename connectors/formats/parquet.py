"""Parquet sink writer."""
from __future__ import annotations

import pyarrow.parquet as pq

from connectors.formats import WrittenFile
from dataflow.runtime.batch import to_arrow


class ParquetFormat:
    """Write a batch as one Parquet file (zstd), or several when ``max_file_bytes`` demands."""

    extension = "parquet"

    @staticmethod
    def write(fs, path: str, cols, options) -> list[WrittenFile]:
        table = to_arrow(cols)
        with fs.open(path, "wb") as f:
            pq.write_table(table, f, compression=options.get("compression", "zstd"))
        return [WrittenFile(path, table.num_rows, fs.size(path))]
