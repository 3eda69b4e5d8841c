"""The cache tier over real local files: fills, block reads, versions, integrity, eviction, crashes, degrade.

The "remote" side here is a LocalFileSystem that counts its reads (``cat_file`` calls); the S3
tests in tests/integration/connectors count requests at a real HTTP server instead.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fsspec.implementations.local import LocalFileSystem

from connectors.storage import cache_store
from connectors.storage.cache_store import open_store
from connectors.storage.disk_cache import DiskCache, object_version


class CountingLocal(LocalFileSystem):
    """A local filesystem that counts the bytes and calls of reads going to it."""

    cachable = False

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.fetches: list[tuple[str, int | None, int | None]] = []

    def cat_file(self, path, start=None, end=None, **kwargs):
        self.fetches.append((self._strip_protocol(path), start, end))
        return super().cat_file(path, start=start, end=end, **kwargs)


def _cache(tmp_path, name="cache", **kwargs) -> DiskCache:
    return DiskCache(inner=CountingLocal(), dir=str(tmp_path / name), skip_instance_cache=True, **kwargs)


def _entries(root) -> list[str]:
    out = []
    for folder, _, names in os.walk(os.path.join(root, "objects")):
        out += [os.path.join(folder, n) for n in names if not n.endswith(".meta")]
    return sorted(out)


def _write(path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


def test_whole_object_is_fetched_once_then_served_locally(tmp_path):
    src = _write(tmp_path / "src/a.bin", os.urandom(300_000))
    fs = _cache(tmp_path)
    assert fs.cat_file(src) == open(src, "rb").read()
    assert fs.cat_file(src) == open(src, "rb").read()
    with fs.open(src, "rb") as f:
        assert f.read() == open(src, "rb").read()
    assert fs.inner.fetches == [(src, None, None)]
    c = fs.counters.snapshot()
    assert (c["misses"], c["hits"], c["bytes_remote"], c["bytes_local"]) == (1, 2, 300_000, 600_000)


def test_parquet_footer_and_one_row_group_do_not_pull_the_whole_file(tmp_path):
    n = 200_000
    table = pa.table({"id": pa.array(range(n), pa.int64()), "blob": pa.array([os.urandom(8).hex() * 2 for _ in range(n)])})
    path = str(tmp_path / "src/t.parquet")
    os.makedirs(os.path.dirname(path))
    pq.write_table(table, path, row_group_size=20_000, compression="none")
    size = os.path.getsize(path)
    fs = _cache(tmp_path, block_size=64 * 1024)
    with fs.open(path, "rb") as f:
        pf = pq.ParquetFile(f)
        assert pf.metadata.num_row_groups == 10
        footer_bytes = fs.counters.bytes_remote
        assert pf.read_row_group(3, columns=["id"]).column("id")[0].as_py() == 60_000
    assert footer_bytes <= 2 * 64 * 1024
    assert fs.counters.bytes_remote < size / 4, (fs.counters.bytes_remote, size)
    assert all(start is not None for _, start, _ in fs.inner.fetches)  # only ranges, never the whole file
    # the same row group again comes from the cached blocks
    before = fs.counters.bytes_remote
    with fs.open(path, "rb") as f:
        assert pq.ParquetFile(f).read_row_group(3, columns=["id"]).num_rows == 20_000
    assert fs.counters.bytes_remote == before


def test_unaligned_range_reads_match_the_source(tmp_path):
    data = os.urandom(50_000)
    src = _write(tmp_path / "src/r.bin", data)
    fs = _cache(tmp_path, block_size=4096)
    for start, end in ((0, 10), (4090, 4100), (12_000, 30_001), (49_990, 50_000), (-7, None)):
        assert fs.cat_file(src, start, end) == data[start:end]


def test_a_changed_object_is_fetched_again_never_served_stale(tmp_path):
    path = tmp_path / "src/v.bin"
    _write(path, b"A" * 1000)
    fs = _cache(tmp_path)
    assert fs.cat_file(str(path)) == b"A" * 1000
    path.write_bytes(b"B" * 1000)  # same size: the version is mtime + inode
    later = time.time() + 5
    os.utime(path, (later, later))
    assert fs.cat_file(str(path)) == b"B" * 1000
    fs.store().flush()
    assert fs.counters.misses == 2 and len(_entries(tmp_path / "cache")) == 2


def test_listed_version_that_no_longer_matches_is_refetched(tmp_path):
    path = tmp_path / "src/v.bin"
    _write(path, b"old")
    fs = _cache(tmp_path)
    listed = fs.info(str(path))
    path.write_bytes(b"newer!")  # the listing says 3 bytes, the store now holds 6
    assert fs.cat_file(str(path), info=listed) == b"newer!"


@pytest.mark.parametrize("damage", ["flip_a_byte", "truncate"], ids=["same-size-corruption", "truncated"])
def test_corrupt_entry_is_dropped_and_fetched_again(tmp_path, damage, caplog):
    data = os.urandom(20_000)
    src = _write(tmp_path / "src/c.bin", data)
    fs = _cache(tmp_path)
    fs.cat_file(src)
    fs.store().flush()  # entries are written behind the read
    (entry,) = _entries(tmp_path / "cache")
    raw = bytearray(open(entry, "rb").read())
    if damage == "flip_a_byte":
        raw[1234] ^= 0xFF
    else:
        raw = raw[:5000]
    with open(entry, "r+b") as f:
        f.truncate(0)
        f.write(raw)
    with caplog.at_level(logging.WARNING, logger="dataflow.cache"):
        assert fs.cat_file(src) == data
    assert fs.counters.corrupt == 1 and fs.counters.misses == 2
    assert "corrupt" in caplog.text
    fs.store().flush()
    assert open(_entries(tmp_path / "cache")[0], "rb").read() == data


def test_lru_eviction_keeps_recent_and_pinned_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_store, "_TOUCH_EVERY_S", 0.0)  # LRU is kept to the minute; exact here
    size = 100_000
    srcs = [_write(tmp_path / f"src/{i:02d}.bin", bytes([i]) * size) for i in range(12)]
    fs = _cache(tmp_path, max_bytes=1_000_000)
    for s in srcs[:10]:
        fs.cat_file(s)
    fs.store().flush()
    metas = sorted(p + ".meta" for p in _entries(tmp_path / "cache"))
    assert len(metas) == 10
    # age the entries in fill order, as if filled long ago
    order = [fs._key(s, object_version(fs.info(s))) for s in srcs[:10]]
    store = fs.store()
    for i, key in enumerate(order):
        old = time.time() - 10_000 + i
        os.utime(store._data_path(key) + ".meta", (old, old))
    pinned = fs.open(srcs[0], "rb")
    assert pinned.read(1) == b"\x00"  # entry 0 is the oldest, but in use
    fs.cat_file(srcs[1])  # entry 1 is used again: now the most recent
    for s in srcs[10:]:
        fs.cat_file(s)
    fs.store().flush()
    kept = {os.path.basename(p) for p in _entries(tmp_path / "cache")}
    assert order[0] in kept and order[1] in kept
    assert order[2] not in kept and order[3] not in kept
    assert store.used_bytes() <= 1_000_000 and fs.counters.evictions >= 3
    assert pinned.read(10) == b"\x00" * 10
    pinned.close()


def test_stale_temp_files_are_swept_and_live_fills_kept(tmp_path):
    import fcntl

    store = open_store(str(tmp_path / "cache"))
    stale = tmp_path / "cache/tmp/deadbeef.99999.0000"
    stale.write_bytes(b"half a download")
    live = tmp_path / "cache/tmp/cafef00d.1.0000"
    live.write_bytes(b"being written")
    fd = os.open(live, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # what a filling process holds
    try:
        assert store.sweep_temps() == 1
        assert not stale.exists() and live.exists()
    finally:
        os.close(fd)


def test_a_killed_filler_releases_its_lock_and_another_process_fills(tmp_path):
    data = os.urandom(10_000)
    src = _write(tmp_path / "src/k.bin", data)
    fs = _cache(tmp_path)
    key = fs._key(src, object_version(fs.info(src)))
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys, time; from connectors.storage.cache_store import open_store\n"
            f"lock = open_store({str(tmp_path / 'cache')!r}).fill_lock({key!r}).__enter__()\n"
            "print('locked', flush=True); time.sleep(600)\n"
        )],
        stdout=subprocess.PIPE, text=True, cwd=os.getcwd(),
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "locked"
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fs.cat_file(src)))
    reader.start()
    time.sleep(0.5)
    assert reader.is_alive() and not fs.inner.fetches  # waiting for the other process's fill
    holder.kill()  # a crash mid-download: the kernel drops its flock
    holder.wait()
    reader.join(timeout=30)
    assert got == [data] and fs.inner.fetches == [(src, None, None)]
    fs.store().flush()
    assert not os.listdir(tmp_path / "cache/tmp")


def test_unusable_cache_dir_reads_directly_with_one_warning(tmp_path, caplog):
    src = _write(tmp_path / "src/d.bin", b"payload")
    (tmp_path / "not-a-dir").write_text("a file where the cache folder should go")
    fs = DiskCache(inner=CountingLocal(), dir=str(tmp_path / "not-a-dir/cache"), skip_instance_cache=True)
    with caplog.at_level(logging.WARNING, logger="dataflow.cache"):
        assert [fs.cat_file(src) for _ in range(3)] == [b"payload"] * 3
        with fs.open(src, "rb") as f:
            assert f.read() == b"payload"
    assert len([r for r in caplog.records if r.name == "dataflow.cache"]) == 1
    assert "unusable" in caplog.text
    assert fs.counters.direct_reads == 4 and fs.counters.hits == 0
