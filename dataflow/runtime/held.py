"""What this process holds for in-memory pipelines: the objects of in-memory sources, and its staging folder.

``dataflow.memory`` registers a source's object (a ``pyarrow.Table``, ``ray.data.Dataset`` or
Spark DataFrame) under its URI ``held://<name>/<key>``; the engines read it from here. The
staging folder takes what still goes through files: a handoff between engines, and the
counters and row errors of a run for in-memory results.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

from dataflow.errors import RunError

__all__ = ["HELD_SCHEME", "first_rows", "hold", "held", "held_pages", "held_schema", "release", "staging_folder"]

HELD_SCHEME = "held"
_STAGING: list[str] = []
_HELD: dict[str, Any] = {}  # source URI -> the object it names


def staging_folder(kind: str) -> str:
    """A new, empty-named folder under this process's staging area (created on first use, removed at exit)."""
    if not _STAGING:
        root = tempfile.mkdtemp(prefix="dataflow-memory-")
        _STAGING.append(root)
        atexit.register(shutil.rmtree, root, True)
    return os.path.join(_STAGING[0], f"{kind}-{uuid.uuid4().hex[:12]}")


def hold(name: str, obj: Any) -> str:
    """Hold ``obj`` for the life of this process (or until ``release``); return its source URI."""
    uri = f"{HELD_SCHEME}://{name}/{uuid.uuid4().hex[:12]}"
    _HELD[uri] = obj
    return uri


def held(uri: str) -> Any:
    """The object an in-memory source URI names.

    Raises:
        RunError: this process does not hold it (another process, or released).
    """
    try:
        return _HELD[uri]
    except KeyError:
        raise RunError(f"source '{uri}': the in-memory rows are held by the process that made them (from_pandas, from_ray, ...), not this one") from None


def held_pages(uri: str) -> Iterator[tuple[list[tuple[str, dict[str, Any]]], dict[str, int]]]:
    """The runner's listing of an in-memory source, as one page: the source itself is its one input (one shard)."""
    held(uri)
    yield [(uri, {})], {}


def release(uri: str) -> None:
    """Drop the object held under ``uri``."""
    _HELD.pop(uri, None)


def first_rows(uri: str, name: str, n: int):
    """The first ``n`` rows of a held source as a ``pyarrow.Table`` with ``__source__`` (``Pipeline.preview``)."""
    import pyarrow as pa

    from dataflow.columns import SOURCE
    from dataflow.lineage import ROW

    obj = held(uri)
    if isinstance(obj, pa.Table):
        table = obj.slice(0, n)
    elif hasattr(obj, "toArrow"):  # a Spark DataFrame
        table = obj.limit(n).toArrow()
    else:  # a Ray Dataset: n rows to this process
        table = pa.Table.from_pylist(obj.take(n))
    if SOURCE not in table.column_names:
        table = table.append_column(SOURCE, pa.array([f"memory:{name}{ROW}{i}" for i in range(table.num_rows)], pa.string()))
    return table


def held_schema(uri: str):
    """The Arrow schema of a held Arrow table (what the plan's input type check reads), else None (a Ray or Spark dataset: known only by running it)."""
    import pyarrow as pa

    obj = held(uri)
    return obj.schema if isinstance(obj, pa.Table) else None
