"""HDFS through pyarrow's HadoopFileSystem (needs libhdfs and a Hadoop client config on the node).

``hdfs://namenode:8020/path``: the host, port and user come from the URI unless the pipeline's
``storage.options.hdfs`` sets them. No NameNode can run on the development machines, so the
tests check the URL routing and this option mapping only.
"""
from __future__ import annotations

from typing import Any

from fsspec.implementations.arrow import HadoopFileSystem

from dataflow.errors import ConnectorError

__all__ = ["HDFS_OPTIONS", "HdfsStorage", "hdfs_arguments"]

HDFS_OPTIONS: dict[str, str] = {
    "extra_conf": "dict of Hadoop configuration keys, e.g. {dfs.client.use.datanode.hostname: 'true'}",
    "host": "NameNode host, or 'default' to read fs.defaultFS from the Hadoop config",
    "kerb_ticket": "path of the Kerberos ticket cache",
    "port": "NameNode RPC port (0 reads it from the Hadoop config)",
    "replication": "replication factor of written files",
    "user": "the HDFS user to act as",
}


def hdfs_arguments(options: dict[str, Any]) -> dict[str, Any]:
    """Return the keyword arguments of pyarrow's ``HadoopFileSystem`` for the pipeline's options.

    Raises:
        ConnectorError: an option that HDFS does not take (the message lists those it does).
    """
    unknown = sorted(set(options) - set(HDFS_OPTIONS))
    if unknown:
        allowed = ", ".join(f"{k} ({v})" for k, v in HDFS_OPTIONS.items())
        raise ConnectorError(f"storage.options.hdfs: unknown option(s) {', '.join(unknown)} (expected: {allowed})")
    out: dict[str, Any] = {"host": options.get("host", "default"), "port": int(options.get("port", 0))}
    for key in ("user", "kerb_ticket", "extra_conf"):
        if options.get(key) is not None:
            out[key] = options[key]
    if "replication" in options:
        out["replication"] = int(options["replication"])
    if "extra_conf" in out:
        out["extra_conf"] = {str(k): str(v) for k, v in out["extra_conf"].items()}
    return out


class HdfsStorage(HadoopFileSystem):
    """``hdfs://namenode:port/path``; options are those of :data:`HDFS_OPTIONS`."""

    is_local = False
    read_through_cache = True
    atomic_rename = True

    def __init__(self, **options):
        super().__init__(**hdfs_arguments(options))
