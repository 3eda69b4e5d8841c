"""Drop low-quality text with the Gopher quality and repetition rules (C4-style heuristics)."""
from __future__ import annotations

import string

import numpy as np

from dataflow.ops.declare import op
from dataflow.ops.text.gopher import BULLETS, PARAGRAPHS, STOP_WORDS, duplicate_ngram_chars, duplicates, top_ngram_chars

_PUNCTUATION = frozenset(string.punctuation + "“”‘’«»…—–")
_PREFIX = "text.filter_quality:"


def _first_failure(text: str, p: dict) -> str:
    """The name of the first threshold ``text`` fails, or "" when it passes them all."""
    words = text.split()
    n = len(words)
    if n < p["min_words"]:
        return "min_words"
    if n > p["max_words"]:
        return "max_words"
    content = [w for w in words if not all(c in _PUNCTUATION for c in w)]
    mean = sum(len(w) for w in content) / len(content) if content else 0.0
    if mean < p["min_mean_word_length"]:
        return "min_mean_word_length"
    if mean > p["max_mean_word_length"]:
        return "max_mean_word_length"
    symbols = text.count("#") + text.count("...") + text.count("…")
    if symbols / n > p["max_symbol_word_ratio"]:
        return "max_symbol_word_ratio"
    lines = [line for line in text.split("\n") if line.strip()]
    if lines and sum(line.lstrip().startswith(BULLETS) for line in lines) / len(lines) > p["max_bullet_lines_ratio"]:
        return "max_bullet_lines_ratio"
    if lines and sum(line.rstrip().endswith(("...", "…")) for line in lines) / len(lines) > p["max_ellipsis_lines_ratio"]:
        return "max_ellipsis_lines_ratio"
    if sum(any(c.isalpha() for c in w) for w in words) / n < p["min_alpha_words_ratio"]:
        return "min_alpha_words_ratio"
    lowered = [w.lower().strip(string.punctuation) for w in words]
    if sum(w in STOP_WORDS for w in lowered) < p["min_stop_words"]:
        return "min_stop_words"
    chars = max(len(text), 1)
    dup_lines, dup_line_chars = duplicates(lines)
    if lines and dup_lines / len(lines) > p["max_duplicate_line_fraction"]:
        return "max_duplicate_line_fraction"
    if dup_line_chars / chars > p["max_duplicate_line_char_fraction"]:
        return "max_duplicate_line_char_fraction"
    paragraphs = [x for x in PARAGRAPHS.split(text) if x.strip()]
    dup_paras, dup_para_chars = duplicates(paragraphs)
    if paragraphs and dup_paras / len(paragraphs) > p["max_duplicate_paragraph_fraction"]:
        return "max_duplicate_paragraph_fraction"
    if dup_para_chars / chars > p["max_duplicate_paragraph_char_fraction"]:
        return "max_duplicate_paragraph_char_fraction"
    for size, limit in p["max_top_ngram_char_fraction"]:
        if top_ngram_chars(lowered, size) / chars > limit:
            return "max_top_ngram_char_fraction"
    for size, limit in p["max_duplicate_ngram_char_fraction"]:
        if duplicate_ngram_chars(lowered, size) / chars > limit:
            return "max_duplicate_ngram_char_fraction"
    return ""


@op(
    name="text.filter_quality",
    modality="text",
    inputs=("{column}",),
    input_types={"{column}": "string"},
    outputs=(),
    kind="filter",
    batch_format="numpy",
)
def filter_text_quality(
    batch: dict,
    *,
    min_words: int = 50,
    max_words: int = 100_000,
    min_mean_word_length: float = 3.0,
    max_mean_word_length: float = 10.0,
    max_symbol_word_ratio: float = 0.1,
    max_bullet_lines_ratio: float = 0.9,
    max_ellipsis_lines_ratio: float = 0.3,
    min_alpha_words_ratio: float = 0.8,
    min_stop_words: int = 2,
    max_duplicate_line_fraction: float = 0.3,
    max_duplicate_line_char_fraction: float = 0.2,
    max_duplicate_paragraph_fraction: float = 0.3,
    max_duplicate_paragraph_char_fraction: float = 0.2,
    max_top_ngram_char_fraction: tuple[tuple[int, float], ...] = ((2, 0.20), (3, 0.18), (4, 0.16)),
    max_duplicate_ngram_char_fraction: tuple[tuple[int, float], ...] = ((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10)),
    column: str = "text",
) -> tuple[np.ndarray, np.ndarray]:
    """Keep documents that pass the Gopher quality and repetition rules; defaults are Gopher's.

    Rules run in the order of the params and a document is dropped for the first it fails; each
    drop is counted under ``text.filter_quality:<param name>``. Words are whitespace tokens.

    Args:
        min_words: Fewest words.
        max_words: Most words.
        min_mean_word_length: Shortest mean length of non-punctuation words.
        max_mean_word_length: Longest mean length of non-punctuation words.
        max_symbol_word_ratio: Most ('#' + ellipses) per word.
        max_bullet_lines_ratio: Largest share of lines starting with a bullet.
        max_ellipsis_lines_ratio: Largest share of lines ending with an ellipsis.
        min_alpha_words_ratio: Smallest share of words holding a letter.
        min_stop_words: Fewest English stop words (the, be, to, of, and, that, have, with).
        max_duplicate_line_fraction: Largest share of lines repeating an earlier line.
        max_duplicate_line_char_fraction: Largest share of characters in repeated lines.
        max_duplicate_paragraph_fraction: Largest share of paragraphs repeating an earlier one.
        max_duplicate_paragraph_char_fraction: Largest share of characters in repeated paragraphs.
        max_top_ngram_char_fraction: (n, limit) pairs: largest share of characters covered by the
            most frequent word n-gram.
        max_duplicate_ngram_char_fraction: (n, limit) pairs: largest share of characters in word
            n-grams that repeat an earlier one.
        column: Column holding the text.
    """
    params = {k: v for k, v in locals().items() if k not in ("batch", "column")}
    reasons = np.empty(len(batch[column]), dtype=object)
    for i, text in enumerate(batch[column]):
        failed = _first_failure(text or "", params)
        reasons[i] = _PREFIX + failed if failed else ""
    return reasons == "", reasons
