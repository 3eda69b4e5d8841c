"""URI routing and option mapping of the connector registry.

HDFS cannot run on these machines (no NameNode, JVM or libhdfs): its tests check routing, the
mapping of pipeline options onto pyarrow's HadoopFileSystem, and the error that names what is
missing. WebHDFS clients are built for real (no request is sent).
"""
from __future__ import annotations

import pytest

from connectors.registry import FORMATS, STORAGE, filesystem, format_connector, parse_size, scheme_of, strip_scheme, to_uri
from connectors.storage.disk_cache import DiskCache
from connectors.storage.hdfs import hdfs_arguments
from connectors.storage.s3 import S3Storage
from connectors.storage.webhdfs import WebHdfsStorage
from dataflow.errors import ConnectorError


def test_tables_are_sorted():
    assert list(STORAGE) == sorted(STORAGE)
    assert list(FORMATS) == sorted(FORMATS)


@pytest.mark.parametrize(
    ("uri", "scheme", "path"),
    [
        ("/data/x.jpg", "file", "/data/x.jpg"),
        ("file:///data/x.jpg", "file", "/data/x.jpg"),
        ("s3://bucket/a/b.jpg", "s3", "bucket/a/b.jpg"),
        ("s3a://bucket/a", "s3", "bucket/a"),
        ("hdfs://namenode:8020/warehouse/t/", "hdfs", "/warehouse/t/"),
        ("webhdfs://etl@nn:9870/data/x.tar", "webhdfs", "/data/x.tar"),
        ("swebhdfs://nn/data", "webhdfs", "/data"),
        ("gcs://bucket/k", "gs", "bucket/k"),
    ],
    ids=["plain", "file", "s3", "s3a", "hdfs", "webhdfs", "swebhdfs", "gcs"],
)
def test_uris_route_to_a_scheme_and_path(uri, scheme, path):
    assert scheme_of(uri) == scheme
    assert strip_scheme(uri) == path


def test_paths_turn_back_into_uris_of_the_same_server():
    assert to_uri("/warehouse/t/p.parquet", "hdfs://namenode:8020/warehouse/") == "hdfs://namenode:8020/warehouse/t/p.parquet"
    assert to_uri("bucket/k/x.jpg", "s3://bucket/k/") == "s3://bucket/k/x.jpg"
    assert to_uri("/data/x.jpg", "/data") == "/data/x.jpg"


def test_hdfs_options_map_onto_pyarrow_hadoop_arguments():
    args = hdfs_arguments({"host": "nn", "port": "8020", "user": "etl", "replication": "2", "extra_conf": {"dfs.client.use.datanode.hostname": True}})
    assert args == {"host": "nn", "port": 8020, "user": "etl", "replication": 2, "extra_conf": {"dfs.client.use.datanode.hostname": "True"}}
    assert hdfs_arguments({}) == {"host": "default", "port": 0}
    with pytest.raises(ConnectorError, match=r"storage.options.hdfs: unknown option\(s\) kerberos .*kerb_ticket"):
        hdfs_arguments({"kerberos": True})


def test_hdfs_without_libhdfs_names_what_the_node_needs():
    with pytest.raises(ConnectorError, match=r"hdfs://.*could not be set up.*(JAVA_HOME|libhdfs)") as info:
        filesystem("hdfs://namenode:8020/data", {"hdfs": {"user": "etl"}})
    assert len(str(info.value)) < 700  # one line, not the JVM search list


def test_webhdfs_takes_host_port_and_user_from_the_uri():
    fs = filesystem("webhdfs://etl@nn.example:9871/data", {"webhdfs": {"token": None}})
    assert isinstance(fs, WebHdfsStorage)
    assert fs.url == "http://nn.example:9871/webhdfs/v1" and fs.pars == {"user.name": "etl"}
    secure = filesystem("swebhdfs://nn.example/data", {"webhdfs": {"user": "svc"}})
    assert secure.url == "https://nn.example:9870/webhdfs/v1" and secure.pars == {"user.name": "svc"}
    with pytest.raises(ConnectorError, match="unknown option"):
        filesystem("webhdfs://nn/data", {"webhdfs": {"hostname": "x"}})


def test_s3_options_and_endpoint_environment(monkeypatch):
    fs = filesystem("s3://bucket/k", {"s3": {"endpoint_url": "http://127.0.0.1:1", "key": "k", "secret": "s", "skip_instance_cache": True}})
    assert isinstance(fs, S3Storage) and fs.client_kwargs.get("endpoint_url", fs.endpoint_url) == "http://127.0.0.1:1"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:2")
    assert filesystem("s3://bucket/k", {"s3": {"skip_instance_cache": True}}).endpoint_url == "http://127.0.0.1:2"


def test_missing_packages_and_unknown_schemes_say_what_to_do():
    with pytest.raises(ConnectorError, match="pip install adlfs"):
        filesystem("az://container/x")
    with pytest.raises(ConnectorError, match=r"unknown storage scheme 'nope://'.*expected one of: az, file"):
        filesystem("nope://x")
    with pytest.raises(ConnectorError, match="unknown sink format 'tarball'.*webdataset"):
        format_connector("tarball")


def test_the_cache_tier_wraps_remote_schemes_only(tmp_path):
    cache = {"dir": str(tmp_path / "c"), "max_bytes": 10**9}
    remote = filesystem("s3://bucket/k", {"s3": {"endpoint_url": "http://127.0.0.1:1", "key": "k", "secret": "s"}}, cache)
    assert isinstance(remote, DiskCache) and isinstance(remote.inner, S3Storage)
    assert remote.max_bytes == 10**9 and remote.cache_dir == cache["dir"]
    assert not isinstance(filesystem(str(tmp_path), None, cache), DiskCache)
    assert not isinstance(filesystem("s3://bucket/k", None, None), DiskCache)


@pytest.mark.parametrize(("text", "expected"), [("200GB", 200 * 10**9), ("512MiB", 512 * 2**20), ("1.5k", 1500), (4096, 4096), ("7", 7)])
def test_sizes_parse(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["12 parsecs", "-1", "GB", True], ids=["unit", "negative", "no-number", "bool"])
def test_bad_sizes_are_refused(bad):
    with pytest.raises(ValueError, match="expected a size"):
        parse_size(bad)
