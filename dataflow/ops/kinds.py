"""The vocabulary ``@op`` declares with: modality, kind, batch format and input column types."""
from __future__ import annotations

import enum
from typing import Any

__all__ = ["BatchFormat", "ColumnType", "Modality", "OpKind"]


class Modality(str, enum.Enum):
    """What kind of data an op works on, whatever its namespace.

    The planner reads it: table ops may run on Spark, every other modality is media and runs on
    Ray Data with media-sized batches. A namespace that is a modality's name (``video.*``) must
    declare that modality; any other namespace (``doc.*``, ``myplugin.*``) declares the one its
    data is.
    """

    IMAGE = "image"
    AUDIO = "audio"
    VIDEO = "video"
    TEXT = "text"
    TABLE = "table"


class OpKind(str, enum.Enum):
    """How an op maps rows: one to one, keep or drop, one to many, or over the whole dataset."""

    MAP = "map"
    FILTER = "filter"
    FLAT_MAP = "flat_map"
    GLOBAL = "global"


class ColumnType(str, enum.Enum):
    """The kind of value an op expects in an input column (``@op(input_types=...)``).

    Checked against a Parquet source's schema at plan time, and per value when the run meets
    one of another kind (that row goes to ``_errors/``; the op never sees it).
    """

    BINARY = "binary"  # bytes
    STRING = "string"  # str
    IMAGE_BYTES = "image_bytes"  # encoded image bytes, or a Hugging Face ``Image`` struct {bytes, path}

    def accepts(self, value: Any) -> bool:
        """Whether a cell value is of this kind (None is left to the op: it knows what a missing value means)."""
        if value is None:
            return True
        if self is ColumnType.STRING:
            return isinstance(value, str)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return True
        if isinstance(value, dict) and self is ColumnType.IMAGE_BYTES:
            return set(value) <= {"bytes", "path"} and (value.get("bytes") is None or isinstance(value["bytes"], bytes))
        return False


class BatchFormat(str, enum.Enum):
    """The shape of the batch an op's function receives and returns."""

    NUMPY = "numpy"
    PYARROW = "pyarrow"
    PANDAS = "pandas"
    ROW = "row"
