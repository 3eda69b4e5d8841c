"""Registries of storage schemes and data formats: name -> lazily imported "module:Class".

Kept sorted (a test checks). A scheme that is not listed falls back to any fsspec protocol that
is installed; a missing package is reported with the command that installs it.
"""
from __future__ import annotations

import importlib
import os
from typing import Any
from urllib.parse import urlsplit

from dataflow.errors import ConnectorError

__all__ = ["FORMATS", "STORAGE", "filesystem", "format_connector", "join", "line_reader", "list_files", "parquet_parts", "read_parquet_part", "scheme_of", "strip_scheme"]

STORAGE: dict[str, dict[str, str]] = {
    "file": {"class": "connectors.storage.local:LocalStorage"},
    "gs": {"class": "gcsfs:GCSFileSystem", "err": "pip install gcsfs"},
    "hdfs": {"class": "connectors.storage.hdfs:HdfsStorage", "err": "pip install pyarrow (and libhdfs on the node)"},
    "memory": {"class": "fsspec.implementations.memory:MemoryFileSystem"},
    "s3": {"class": "connectors.storage.s3:S3Storage", "err": "pip install s3fs"},
    "webhdfs": {"class": "fsspec.implementations.webhdfs:WebHDFS", "err": "pip install requests"},
}

FORMATS: dict[str, dict[str, str]] = {
    "files": {"class": "connectors.formats.files:FilesFormat"},
    "jsonl": {"class": "connectors.formats.jsonl:JsonlFormat"},
    "parquet": {"class": "connectors.formats.parquet:ParquetFormat"},
}

_ALIASES = {"s3a": "s3", "local": "file", "abfs": "az", "gcs": "gs"}


def _load(entry: dict[str, str], what: str) -> Any:
    module, _, attr = entry["class"].partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        hint = entry.get("err", f"pip install the package providing '{module}'")
        raise ConnectorError(f"{what} needs a package that is not installed ({exc.name}); run: {hint}") from exc


def scheme_of(uri: str) -> str:
    """Return the storage scheme of a URI ("file" for plain paths)."""
    if "://" not in uri:
        return "file"
    scheme = urlsplit(uri).scheme.lower()
    return _ALIASES.get(scheme, scheme)


def strip_scheme(uri: str) -> str:
    """Return the path part the filesystem understands (``bucket/key`` for s3)."""
    if "://" not in uri:
        return os.path.abspath(os.path.expanduser(uri))
    scheme, rest = uri.split("://", 1)
    return rest if scheme_of(uri) != "file" else "/" + rest.lstrip("/")


def join(base: str, *parts: str) -> str:
    """Join URI path segments with '/'."""
    out = base.rstrip("/")
    for p in parts:
        out = f"{out}/{p.strip('/')}"
    return out


def filesystem(uri: str, storage_options: dict[str, dict[str, Any]] | None = None):
    """Return the fsspec filesystem for ``uri``, built with the pipeline's options for its scheme.

    Raises:
        ConnectorError: unknown scheme, or its package is not installed.
    """
    import fsspec

    scheme = scheme_of(uri)
    options = dict((storage_options or {}).get(scheme, {}))
    entry = STORAGE.get(scheme)
    if entry is not None:
        return _load(entry, f"storage '{scheme}://'")(**options)
    try:
        cls = fsspec.get_filesystem_class(scheme)
    except ValueError as exc:
        known = ", ".join(sorted(STORAGE))
        raise ConnectorError(f"unknown storage scheme '{scheme}://' in '{uri}' (expected one of: {known}, or an installed fsspec protocol)") from exc
    except ImportError as exc:
        raise ConnectorError(f"storage '{scheme}://' needs a package that is not installed: {exc}") from exc
    return cls(**options)


def format_connector(name: str):
    """Return the writer class of a sink format.

    Raises:
        ConnectorError: unknown format.
    """
    entry = FORMATS.get(name)
    if entry is None:
        raise ConnectorError(f"unknown sink format '{name}' (expected one of: {', '.join(sorted(FORMATS))})")
    return _load(entry, f"format '{name}'")


def list_files(uri: str, fmt: str, options: dict[str, Any], storage_options: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """Return the sorted input URIs of a source (see ``connectors.listing.list_files``)."""
    from connectors.listing import list_files as _list

    return _list(filesystem(uri, storage_options), uri, strip_scheme(uri), fmt, options)


def parquet_parts(uri: str, storage_options: dict[str, dict[str, Any]] | None = None) -> list[tuple[int, int, int]]:
    """Return the row groups of a Parquet file as ``(row_group, first_row, num_rows)``."""
    from connectors.formats.parquet import row_groups

    return row_groups(filesystem(uri, storage_options), strip_scheme(uri))


def read_parquet_part(uri: str, row_group: int, storage_options: dict[str, dict[str, Any]] | None = None, columns: list[str] | None = None):
    """Read one row group of a Parquet file as an Arrow table."""
    from connectors.formats.parquet import read_row_group

    return read_row_group(filesystem(uri, storage_options), strip_scheme(uri), row_group, columns)


def line_reader(fmt: str):
    """Return the parser for a line-based source format (text, jsonl, csv)."""
    from connectors.formats import lines

    return {"text": lines.read_text, "jsonl": lines.read_jsonl, "csv": lines.read_csv}[fmt]
