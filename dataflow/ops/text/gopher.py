"""Gopher / C4 text-quality measures (Rae et al. 2021, "Scaling Language Models", appendix A)."""
from __future__ import annotations

import re
from collections import Counter

__all__ = ["STOP_WORDS", "duplicate_ngram_chars", "duplicates", "top_ngram_chars"]

STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
BULLETS = ("•", "●", "○", "▪", "◦", "‣", "⁃", "-", "*", "–")
PARAGRAPHS = re.compile(r"\n{2,}")


def duplicates(parts: list[str]) -> tuple[int, int]:
    """(number of parts seen before, characters in them)."""
    seen: set[str] = set()
    count = chars = 0
    for p in parts:
        if p in seen:
            count += 1
            chars += len(p)
        else:
            seen.add(p)
    return count, chars


def top_ngram_chars(words: list[str], n: int) -> int:
    """Characters covered by the most frequent word n-gram (its length times its count)."""
    grams = Counter(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    if not grams:
        return 0
    gram, count = grams.most_common(1)[0]
    return len(gram) * count if count > 1 else 0


def duplicate_ngram_chars(words: list[str], n: int) -> int:
    """Characters in word n-grams that repeat an earlier n-gram (non-overlapping, as in Gopher)."""
    seen: set[tuple[str, ...]] = set()
    chars, i = 0, 0
    while i + n <= len(words):
        gram = tuple(words[i : i + n])
        if gram in seen:
            chars += sum(len(w) for w in gram)
            i += n
        else:
            seen.add(gram)
            i += 1
    return chars
