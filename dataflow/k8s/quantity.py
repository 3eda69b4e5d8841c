"""Kubernetes resource quantities and Spark memory strings: parse, compare, format."""
from __future__ import annotations

import math
import re

__all__ = ["format_memory", "is_spark_memory", "parse_quantity", "spark_memory", "spark_memory_bytes"]

_QUANTITY_RE = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_SUFFIX = {
    "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}
_SPARK_RE = re.compile(r"^([0-9]+)(b|k|kb|m|mb|g|gb|t|tb|p|pb)?$", re.IGNORECASE)
_SPARK_UNIT = {"": 2**20, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
_MIB = 2**20


def parse_quantity(value: str | int | float) -> float:
    """Return a Kubernetes quantity (``"500m"``, ``"16Gi"``, ``4``) as a plain number.

    Raises:
        ValueError: not a quantity.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _QUANTITY_RE.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a Kubernetes quantity (expected e.g. 2, 500m, 16Gi)")
    number, suffix = float(match.group(1)), match.group(2) or ""
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return number * 10 ** int(suffix[1:])
    return number * _SUFFIX[suffix]


def format_memory(num_bytes: float) -> str:
    """Format bytes as a quantity: whole GiB when exact, else MiB rounded up."""
    mib = math.ceil(num_bytes / _MIB)
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def is_spark_memory(value: str) -> bool:
    """Tell whether ``value`` is a Spark size string such as ``512m`` or ``4g``."""
    return bool(_SPARK_RE.match(value))


def spark_memory_bytes(value: str) -> int:
    """Return the bytes of a Spark size string (``4g`` is 4 GiB; a bare number is MiB, as in ``spark.executor.memory``).

    Raises:
        ValueError: not a Spark size string.
    """
    match = _SPARK_RE.match(value)
    if not match:
        raise ValueError(f"{value!r} is not a Spark size (expected e.g. 512m, 4g)")
    return int(match.group(1)) * _SPARK_UNIT[(match.group(2) or "")[:1].lower()]


def spark_memory(num_bytes: float) -> str:
    """Format bytes as a Spark size: whole ``g`` when exact, else ``m`` rounded up."""
    mib = math.ceil(num_bytes / _MIB)
    return f"{mib // 1024}g" if mib % 1024 == 0 else f"{mib}m"
