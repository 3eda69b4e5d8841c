"""Writing sink files through local scratch, and the process-wide I/O counters."""
from __future__ import annotations

import threading

import fsspec
import numpy as np
import pyarrow.parquet as pq

from connectors.formats.files import FilesFormat
from connectors.formats.parquet import ParquetFormat, read_row_group
from connectors.storage.io_counters import COUNTERS, IOCounters
from connectors.storage.scratch import write_through_scratch


def test_each_written_file_is_uploaded_whole_under_the_target(monkeypatch, tmp_path):
    monkeypatch.setenv("DATAFLOW_SCRATCH_DIR", str(tmp_path / "scratch"))
    remote = fsspec.filesystem("memory")
    remote.store.clear()
    cols = {"__source__": np.array(["s3://b/a.jpg", "s3://b/c.jpg"], dtype=object), "bytes": np.array([b"AA", b"CCC"], dtype=object)}
    written = write_through_scratch(remote, "/sink/files-0123abcd-k", lambda lfs, path: FilesFormat.write(lfs, path, cols, {"extension": "jpg"}))
    assert sorted(w.path.rsplit("/", 1)[1].split("-", 1)[0] for w in written) == ["a", "c", "index.jsonl"]
    assert all(w.path.startswith("/sink/files-0123abcd-k/") for w in written)
    assert sorted(remote.cat_file(w.path) for w in written if w.rows) == [b"AA", b"CCC"]
    assert list((tmp_path / "scratch").iterdir()) == []  # the scratch copy is gone after the upload


def test_a_failing_writer_uploads_nothing(tmp_path):
    remote = fsspec.filesystem("memory")
    remote.store.clear()

    def broken(lfs, path):
        with lfs.open(path, "wb") as f:
            f.write(b"half a file")
        raise OSError("disk full")

    try:
        write_through_scratch(remote, "/sink/part-0123abcd-k.parquet", broken)
    except OSError:
        pass
    assert not remote.exists("/sink/part-0123abcd-k.parquet")


def test_counters_add_up_across_threads():
    counters = IOCounters()
    threads = [threading.Thread(target=lambda: [counters.add(retries=1, bytes_read=10) for _ in range(1000)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counters.snapshot() == {"requests": 0, "retries": 4000, "bytes_read": 40000}


def test_reading_a_row_group_counts_its_compressed_column_chunks(tmp_path):
    fs = fsspec.filesystem("file")
    cols = {"a": np.arange(100), "b": np.array([b"x" * 50] * 100, dtype=object)}
    ParquetFormat.write(fs, str(tmp_path / "t.parquet"), cols, {})
    before = COUNTERS.snapshot()["bytes_read"]
    table = read_row_group(fs, str(tmp_path / "t.parquet"), 0, columns=["a"])
    chunk = pq.ParquetFile(tmp_path / "t.parquet").metadata.row_group(0).column(0)
    assert table.num_rows == 100 and chunk.path_in_schema == "a"
    assert COUNTERS.snapshot()["bytes_read"] - before == chunk.total_compressed_size
