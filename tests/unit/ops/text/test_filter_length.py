"""text.filter_length on texts parsed from a real UTF-8 JSONL file."""
from __future__ import annotations

import pytest

from dataflow.ops.text.filter_length import filter_text_length
from tests.unit.ops.text.conftest import jsonl_batch


def test_bounds_count_characters_not_bytes():
    batch = jsonl_batch(["short", "ünïcödé ✓✓", "x" * 40, None, ""])
    assert list(filter_text_length(batch, min_chars=6, max_chars=20)) == [False, True, False, False, False]  # 10 chars, 21 bytes
    assert list(filter_text_length(batch)) == [True] * 5  # no bounds by default
    assert list(filter_text_length(batch, max_chars=5)) == [True, False, False, True, True]  # null counts as 0


def test_bad_params_are_rejected():
    with pytest.raises(Exception, match="min_chars"):
        filter_text_length.params(min_chars="ten")
    with pytest.raises(Exception, match="max_chars"):
        filter_text_length.params(max_chars=[1, 2])
