"""S3Storage and the cache tier over it, on moto's S3 server over real HTTP (127.0.0.1)."""
from __future__ import annotations

import boto3
import pytest

from connectors.registry import filesystem
from connectors.storage.disk_cache import DiskCache
from connectors.storage.s3 import S3Storage
from tests.contracts.storage import StorageContract


class TestS3Storage(StorageContract):
    @pytest.fixture
    def storage(self, s3_options):
        return filesystem("s3://", {"s3": s3_options})

    @pytest.fixture
    def root(self, bucket):
        return f"{bucket}/root"


class TestDiskCacheOverS3(StorageContract):
    @pytest.fixture
    def storage(self, s3_options, tmp_path):
        fs = filesystem("s3://", {"s3": s3_options}, {"dir": str(tmp_path / "cache")})
        assert isinstance(fs, DiskCache)
        return fs

    @pytest.fixture
    def root(self, bucket):
        return f"{bucket}/root"


def test_object_changed_behind_the_listing_is_fetched_again(s3_options, bucket, tmp_path):
    """Another client overwrites the object after our listing: If-Match makes the fill refetch it."""
    fs = DiskCache(inner=S3Storage(**s3_options), dir=str(tmp_path / "cache"), skip_instance_cache=True)
    fs.pipe_file(f"{bucket}/obj", b"version one")
    assert fs.cat_file(f"{bucket}/obj") == b"version one"
    listed = fs.find(bucket, detail=True)[f"{bucket}/obj"]
    boto3.client("s3", endpoint_url=s3_options["endpoint_url"], aws_access_key_id="testing", aws_secret_access_key="testing").put_object(
        Bucket=bucket, Key="obj", Body=b"version two"
    )
    fresh = DiskCache(inner=S3Storage(**s3_options, skip_instance_cache=True), dir=str(tmp_path / "cache"), skip_instance_cache=True)
    assert fresh.cat_file(f"{bucket}/obj") == b"version two"  # new ETag: a new entry, never the old bytes
    assert fresh.counters.misses == 1
    stale = DiskCache(inner=S3Storage(**s3_options, skip_instance_cache=True), dir=str(tmp_path / "cache2"), skip_instance_cache=True)
    assert stale.cat_file(f"{bucket}/obj", info=listed) == b"version two"  # 412 on the old ETag, then a fresh info
