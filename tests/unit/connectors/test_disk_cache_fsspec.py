"""fsspec's own abstract filesystem suites (copy, get, put, open, pipe) run on the cache tier.

``DiskCache`` wraps a real ``LocalFileSystem``: reads (``get``, ``cat``) go through the cache
directory, everything else through the wrapped filesystem. (fsspec's ``mv`` module holds plain tests of
LocalFileSystem, not a suite class; ``StorageContract`` covers rename.)
"""
from __future__ import annotations

import pytest
from fsspec.implementations.local import LocalFileSystem
from fsspec.tests import abstract

from connectors.storage.disk_cache import DiskCache


class CacheFixtures(abstract.AbstractFixtures):
    @pytest.fixture(scope="class")
    def fs(self, tmp_path_factory):
        return DiskCache(inner=LocalFileSystem(auto_mkdir=True), dir=str(tmp_path_factory.mktemp("cache")), block_size=4096)

    @pytest.fixture
    def fs_path(self, tmpdir):
        return str(tmpdir)


class TestDiskCacheCopy(abstract.AbstractCopyTests, CacheFixtures):
    pass


class TestDiskCacheGet(abstract.AbstractGetTests, CacheFixtures):
    pass


class TestDiskCachePut(abstract.AbstractPutTests, CacheFixtures):
    pass


class TestDiskCacheOpen(abstract.AbstractOpenTests, CacheFixtures):
    pass


class TestDiskCachePipe(abstract.AbstractPipeTests, CacheFixtures):
    pass
