"""StorageContract: what every storage class (and the cache tier over it) must do, fsspec-suite style.

A test class subclasses ``StorageContract`` and provides two fixtures: ``storage`` (the
filesystem under test) and ``root`` (an empty folder or prefix on it, without scheme).
"""
from __future__ import annotations

import pytest

from connectors.registry import join_under
from dataflow.errors import ConnectorError

PAYLOAD = bytes(range(256)) * 64  # 16 KiB with a recognisable pattern


class StorageContract:
    """List, read ranges, write atomically, commit by rename, refuse names outside the root."""

    @pytest.fixture
    def storage(self):
        raise NotImplementedError("a StorageContract subclass provides the filesystem under test")

    @pytest.fixture
    def root(self):
        raise NotImplementedError("a StorageContract subclass provides an empty root folder")

    def _put(self, fs, path: str, data: bytes = PAYLOAD) -> str:
        with fs.open(path, "wb") as f:
            f.write(data)
        return path

    def test_lists_recursively_and_by_glob(self, storage, root):
        for name in ("a.bin", "sub/b.bin", "sub/deep/c.txt"):
            self._put(storage, f"{root}/{name}", b"x")
        found = sorted(p.rsplit(root.rstrip("/"), 1)[1] for p in storage.find(root))
        assert found == ["/a.bin", "/sub/b.bin", "/sub/deep/c.txt"]
        assert sorted(p.rsplit("/", 1)[1] for p in storage.glob(f"{root}/**/*.bin")) == ["a.bin", "b.bin"]
        assert storage.info(f"{root}/sub/b.bin")["size"] == 1

    def test_reads_byte_ranges(self, storage, root):
        path = self._put(storage, f"{root}/r.bin")
        assert storage.cat_file(path) == PAYLOAD
        assert storage.cat_file(path, start=100, end=1100) == PAYLOAD[100:1100]
        assert storage.cat_file(path, start=-10) == PAYLOAD[-10:]
        with storage.open(path, "rb") as f:
            f.seek(5000)
            assert f.read(300) == PAYLOAD[5000:5300]
            f.seek(-4, 2)
            assert f.read() == PAYLOAD[-4:]

    def test_write_in_a_transaction_is_all_or_nothing(self, storage, root):
        path = f"{root}/t.bin"
        with pytest.raises(RuntimeError):
            with storage.transaction:
                self._put(storage, path)
                raise RuntimeError("task failed mid-write")
        assert not storage.exists(path)
        with storage.transaction:
            self._put(storage, path)
        assert storage.cat_file(path) == PAYLOAD

    def test_rename_commits_a_finished_file(self, storage, root):
        tmp = self._put(storage, f"{root}/_tmp/run/part-0.bin")
        final = f"{root}/part-0.bin"
        storage.mv(tmp, final)
        assert storage.cat_file(final) == PAYLOAD
        assert not storage.exists(tmp)

    def test_refuses_names_outside_the_root(self, storage, root):
        inside = join_under(root, "a/../b/c.bin")
        self._put(storage, inside, b"ok")
        assert storage.cat_file(f"{root}/b/c.bin") == b"ok"
        for name in ("../escape.bin", "a/../../escape.bin", "/etc/passwd", "s3://other/key"):
            with pytest.raises(ConnectorError, match="not inside"):
                join_under(root, name)
