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
