"""The numba MinHash kernel reads Arrow bytes and must give the numpy path's integers on any text."""
from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dataflow.ops.text.minhash import EMPTY, minhash_signatures

pytest.importorskip("numba")

SPACES = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())
# Near-misses of the multi-byte spaces: same lead bytes, other code points.
NEAR = "\u00a1\u0084\u1681\u200b\u200c\u2027\u202a\u205e\u2060\u3001\u00c2\u00e9"
WORDS = st.text(alphabet=st.sampled_from(list("abcXYZ\u00e9\u00c9\u03a3\u0130") + list(NEAR)), min_size=1, max_size=6)
DOCS = st.lists(st.one_of(st.none(), st.lists(st.tuples(WORDS, st.text(alphabet=SPACES, min_size=1, max_size=3)), max_size=12).map(lambda ws: "".join(a + b for a, b in ws))), max_size=8)


def _both(texts, **kw):
    return minhash_signatures(texts, backend="numba", **kw), minhash_signatures(texts, backend="numpy", **kw)


@given(DOCS, st.integers(1, 4), st.booleans())
def test_numba_equals_numpy_on_any_whitespace_and_case(texts, ngram, lowercase):
    fast, ref = _both(texts, ngram=ngram, num_perm=16, lowercase=lowercase)
    np.testing.assert_array_equal(fast, ref)


def test_every_python_whitespace_splits_words_and_near_misses_do_not():
    split = minhash_signatures(["alpha" + s + "beta" for s in SPACES] + ["alpha beta"], ngram=1, backend="numba")
    assert (split == split[-1]).all()
    joined = minhash_signatures(["alpha" + c + "beta" for c in NEAR], ngram=1, backend="numba")
    assert not (joined == split[-1]).all(axis=1).any()


def test_arrow_inputs_chunked_sliced_and_null_read_like_python_strings():
    texts = ["The quick brown fox", None, "JUMPS over the lazy dog", "", "naïve café"]
    ref = minhash_signatures(np.array(texts, dtype=object), backend="numba")
    chunked = pa.chunked_array([pa.array(texts[:2]), pa.array(texts[2:])])
    np.testing.assert_array_equal(minhash_signatures(chunked, backend="numba"), ref)
    np.testing.assert_array_equal(minhash_signatures(pa.array(["x"] + texts, pa.large_string())[1:], backend="numba"), ref)
    assert (ref[1] == EMPTY).all() and (ref[3] == EMPTY).all()
    np.testing.assert_array_equal(ref[0], minhash_signatures(["the QUICK brown FOX"], backend="numba")[0])


def test_lone_surrogates_are_hashed_not_refused():
    fast, ref = _both(["abc \ud800 def", "plain words here"])
    np.testing.assert_array_equal(fast, ref)
    assert not (fast[0] == EMPTY).all()
