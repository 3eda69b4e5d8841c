"""text.filter_quality: each Gopher rule drops its own kind of bad document, counted by name."""
from __future__ import annotations

import random

import numpy as np
import pytest

from dataflow.ops.text.filter_quality import filter_text_quality
from dataflow.ops.text.gopher import STOP_WORDS
from examples.generate_text import ENGLISH, document


def _good(seed: int = 0, words: int = 120) -> str:
    return document(random.Random(seed), ENGLISH, words)


BAD = {
    "min_words": "Far too short.",
    "max_mean_word_length": " ".join(["the", "incomprehensibilities"] * 40),
    "max_symbol_word_ratio": "#hashtag " * 30 + _good(1, 60),
    "max_bullet_lines_ratio": "\n".join(f"- {_good(i, 12)}" for i in range(12)),
    "max_ellipsis_lines_ratio": "\n".join(f"{_good(i, 12)}..." for i in range(12)),
    "min_alpha_words_ratio": " ".join(f"{i:06d}" for i in range(80)) + " the and of to",
    "min_stop_words": document(random.Random(3), [w for w in ENGLISH if w not in STOP_WORDS], 100),
    "max_duplicate_line_fraction": "\n".join(["Prices are the best with the deals of this season and more."] * 10),
    "max_top_ngram_char_fraction": (" the market " * 40) + _good(4, 60),
    "max_duplicate_ngram_char_fraction": _good(5, 40) + " " + _good(5, 40) + " " + _good(6, 30),
}


def test_good_documents_pass():
    keep, reasons = filter_text_quality({"text": np.array([_good(s, 150) for s in range(5)], dtype=object)})
    assert keep.all() and set(reasons) == {""}


@pytest.mark.parametrize("rule", sorted(BAD), ids=str)
def test_each_rule_drops_its_document(rule):
    keep, reasons = filter_text_quality({"text": np.array([BAD[rule]], dtype=object)}, min_words=10)
    assert not keep[0]
    assert reasons[0] == f"text.filter_quality:{rule}"


def test_thresholds_are_params():
    text = np.array([BAD["min_stop_words"]], dtype=object)
    assert filter_text_quality({"text": text}, min_stop_words=0)[0][0]
    with pytest.raises(Exception, match="max_top_ngram_char_fraction"):
        filter_text_quality.params(max_top_ngram_char_fraction="lots")


_LONG_LINE = _good(7, 60)
_SHORT_LINES = [_good(10 + i, 6) for i in range(9)]
_PARAGRAPH_LINES = "\n".join(_good(20 + i, 14) for i in range(8))
_RELAXED_LINES = {"max_duplicate_line_fraction": 1.0, "max_duplicate_line_char_fraction": 1.0}

MORE_BAD = {
    "max_words": (_good(0, 150), {"max_words": 100}),
    "min_mean_word_length": (" ".join(["to", "be", "of", "a", "it", "is", "the", "and"] * 10), {}),
    # one long line twice among short ones: few repeated lines (1 of 11), many repeated characters
    "max_duplicate_line_char_fraction": ("\n".join([_LONG_LINE, *_SHORT_LINES, _LONG_LINE]), {}),
    # a one-line paragraph repeated around an 8-line one: 1 of 3 paragraphs, 1 of 10 lines
    "max_duplicate_paragraph_fraction": ("\n\n".join([_good(30, 5), _PARAGRAPH_LINES, _good(30, 5)]), {}),
    # a long paragraph repeated once among five: 1 of 5 paragraphs, but most of the characters
    "max_duplicate_paragraph_char_fraction": (
        "\n\n".join([_good(40, 80), _good(41, 8), _good(42, 8), _good(43, 8), _good(40, 80)]), _RELAXED_LINES
    ),
}


@pytest.mark.parametrize("rule", sorted(MORE_BAD), ids=str)
def test_more_rules_drop_their_document_and_pass_when_relaxed(rule):
    text, params = MORE_BAD[rule]
    batch = {"text": np.array([text], dtype=object)}
    keep, reasons = filter_text_quality(batch, min_words=10, **params)
    assert not keep[0] and reasons[0] == f"text.filter_quality:{rule}"
    relaxed = {rule: 10**6 if rule == "max_words" else (0.0 if rule.startswith("min_") else 1.0)}
    assert filter_text_quality(batch, min_words=10, **{**params, **relaxed})[1][0] != reasons[0]
