"""Byte sizes as people write them: ``200GB``, ``1.5 TiB``, ``512MB``, or a plain integer."""
from __future__ import annotations

import re

__all__ = ["parse_size"]

_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12, "p": 10**15, "pb": 10**15,
    "ki": 2**10, "kib": 2**10, "mi": 2**20, "mib": 2**20, "gi": 2**30, "gib": 2**30, "ti": 2**40, "tib": 2**40, "pi": 2**50, "pib": 2**50,
}  # fmt: skip
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: int | float | str) -> int:
    """Return a byte count: ``KB``/``MB``/``GB``/``TB`` are powers of 1000, ``KiB``/``MiB``/... of 1024.

    Raises:
        ValueError: not a size (the message shows the expected form).

    Examples:
        >>> parse_size("200GB"), parse_size("1.5KiB"), parse_size(4096)
        (200000000000, 1536, 4096)
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a size such as 200GB or a byte count, got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"a size cannot be negative, got {value!r}")
        return int(value)
    match = _SIZE.match(str(value))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(f"expected a size such as 200GB, 512MiB or a byte count, got {value!r}")
    return int(float(match.group(1)) * _UNITS[unit])
