"""HDFS through pyarrow's HadoopFileSystem (needs libhdfs on the node)."""
from __future__ import annotations

from fsspec.implementations.arrow import HadoopFileSystem


class HdfsStorage(HadoopFileSystem):
    """``hdfs://namenode:port/path``; options are ``host``, ``port``, ``user``, ``kerb_ticket``."""
