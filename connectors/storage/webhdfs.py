"""WebHDFS (the NameNode's REST API) through fsspec's WebHDFS client.

``webhdfs://namenode:9870/path`` (``swebhdfs://`` for HTTPS): the host, port and user come from
the URI unless the pipeline's ``storage.options.webhdfs`` sets them.
"""
from __future__ import annotations

from typing import Any

from fsspec.implementations.webhdfs import WebHDFS

from dataflow.errors import ConnectorError

__all__ = ["WEBHDFS_OPTIONS", "WebHdfsStorage", "webhdfs_arguments"]

DEFAULT_PORT = 9870  # Hadoop 3; Hadoop 2 NameNodes listen on 50070

WEBHDFS_OPTIONS: dict[str, str] = {
    "data_proxy": "map of DataNode addresses to addresses reachable from the workers",
    "host": "NameNode host",
    "kerberos": "authenticate with Kerberos (needs requests-kerberos)",
    "password": "password for HTTP basic auth (with user)",
    "port": f"NameNode HTTP port (default {DEFAULT_PORT})",
    "proxy_to": "the user to act for (needs proxy rights)",
    "session_verify": "verify the HTTPS certificate (true, false or a CA bundle path)",
    "token": "a delegation token",
    "use_https": "use HTTPS (set by swebhdfs:// URIs)",
    "user": "the HDFS user to act as (user.name)",
}


def webhdfs_arguments(options: dict[str, Any]) -> dict[str, Any]:
    """Return the keyword arguments of fsspec's ``WebHDFS`` for the pipeline's options.

    Raises:
        ConnectorError: a missing host, or an option that WebHDFS does not take.
    """
    unknown = sorted(set(options) - set(WEBHDFS_OPTIONS))
    if unknown:
        allowed = ", ".join(f"{k} ({v})" for k, v in WEBHDFS_OPTIONS.items())
        raise ConnectorError(f"storage.options.webhdfs: unknown option(s) {', '.join(unknown)} (expected: {allowed})")
    if not options.get("host"):
        raise ConnectorError("webhdfs:// needs a NameNode host: write webhdfs://namenode:9870/path or set storage.options.webhdfs.host")
    out = {k: v for k, v in options.items() if v is not None}
    out["port"] = int(out.get("port", DEFAULT_PORT))
    return out


class WebHdfsStorage(WebHDFS):
    """``webhdfs://namenode:port/path``; options are those of :data:`WEBHDFS_OPTIONS`."""

    is_local = False
    read_through_cache = True
    atomic_rename = True

    def __init__(self, **options):
        super().__init__(**webhdfs_arguments(options))
