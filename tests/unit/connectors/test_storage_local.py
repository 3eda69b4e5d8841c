"""Local and in-memory storage, and the cache tier over local files, against the storage contract."""
from __future__ import annotations

import uuid

import pytest

from connectors.registry import filesystem
from connectors.storage.disk_cache import DiskCache
from tests.contracts.storage import StorageContract


class TestLocalStorage(StorageContract):
    @pytest.fixture
    def storage(self):
        return filesystem("/")

    @pytest.fixture
    def root(self, tmp_path):
        return str(tmp_path / "root")


class TestMemoryStorage(StorageContract):
    @pytest.fixture
    def storage(self):
        return filesystem("memory://")

    @pytest.fixture
    def root(self):
        return f"/contract-{uuid.uuid4().hex[:8]}"


class TestDiskCacheOverLocal(StorageContract):
    @pytest.fixture
    def storage(self, tmp_path):
        return DiskCache(inner=filesystem("/"), dir=str(tmp_path / "cache"), block_size=4096)

    @pytest.fixture
    def root(self, tmp_path):
        return str(tmp_path / "root")
