"""text.normalize: Unicode forms, control characters, whitespace and mojibake repair."""
from __future__ import annotations

import numpy as np
import pytest

from dataflow.errors import RowError
from dataflow.ops.text.normalize import fix_mojibake, normalize_text


def _batch(*texts):
    return {"text": np.array(texts, dtype=object)}


def test_nfc_controls_and_whitespace():
    raw = "Cafe\u0301\u200b  au\tlait\x00\r\n\r\n\r\n\r\nsecond   line  "
    assert normalize_text(_batch(raw))["text"][0] == "Caf\u00e9 au lait\n\nsecond line"


def test_mojibake_is_repaired_only_when_asked_and_only_where_it_is():
    bad = "The caf\u00c3\u00a9 serves cr\u00c3\u00a8me br\u00c3\u00bbl\u00c3\u00a9e \u00e2\u20ac\u201c d\u00e9j\u00e0 vu"
    assert normalize_text(_batch(bad))["text"][0] == bad
    assert normalize_text(_batch(bad), fix_mojibake=True)["text"][0] == "The café serves crème brûlée \u2013 déjà vu"


def test_real_utf8_decoded_as_latin1_round_trips():
    original = "naïve façade — “quoted” ünïcödé"
    assert fix_mojibake(original.encode("utf-8").decode("latin-1")) == original
    assert fix_mojibake(original.encode("utf-8").decode("cp1252", errors="ignore")) != original.encode("utf-8").decode("cp1252", errors="ignore")
    assert fix_mojibake("déjà vu") == "déjà vu"


def test_nfkc_folds_compatibility_characters():
    assert normalize_text(_batch("\ufb01le \u2460"), form="NFKC")["text"][0] == "file 1"


def test_null_text_is_a_row_error():
    with pytest.raises(RowError, match="expected a string"):
        normalize_text(_batch(None))
