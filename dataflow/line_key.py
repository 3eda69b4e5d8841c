"""A JSON-lines row's ``path#line=N`` source as a BIGINT that sorts as those strings do.

An aggregate keeps each group's smallest ``__source__`` string. Building that string for every
row and comparing strings costs more than the rest of the lineage, so the engines' fast JSON-lines
reads carry this key instead and only the aggregate's minima become strings.

The key is ``rank << LINE_BITS | padded << 4 | digits``: ``rank`` is the file's place among the
sorted paths, ``padded`` the line number's digits right-padded with zeros to ``DIGITS`` digits,
``digits`` their count. Within a file the numbers compare as digit strings do ("1" < "10" < "100"
< "2": by the first differing digit, then a string before its extensions). Across files the
paths decide where no path is another's prefix followed by a character at or below ``#``
(``ranks_sort``): then ``path#`` sorts as ``path`` does among the paths.
"""
from __future__ import annotations

__all__ = ["DIGITS", "LINE_BITS", "decode", "padded_terms", "ranks_sort"]

DIGITS = 10  # line numbers below 10**DIGITS
LINE_BITS = 38  # padded (below 10**10 < 2**34) and digits (4 bits)


def padded_terms() -> list[tuple[int, int, int]]:
    """``(bound, scale, digits)``: a line below ``bound`` (and at or above the previous one) has key bits ``line * scale + digits``; at or above the last bound, ``(line << 4) + DIGITS``."""
    return [(10**d, 10 ** (DIGITS - d) << 4, d) for d in range(1, DIGITS)]


def ranks_sort(paths: list[str]) -> bool:
    """Whether ``paths`` (sorted) rank as their ``path#line=N`` sources sort: no path is followed, in the next one it is a prefix of, by a character at or below ``#``."""
    return all(not b.startswith(a) or (len(b) > len(a) and b[len(a)] > "#") for a, b in zip(paths, paths[1:]))


def decode(key: int) -> tuple[int, int]:
    """The ``(rank, line)`` a key stands for."""
    low = key & ((1 << LINE_BITS) - 1)
    digits = low & 15
    return key >> LINE_BITS, (low >> 4) // 10 ** (DIGITS - digits)
