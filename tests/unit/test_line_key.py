"""Line keys (``dataflow.line_key``) sort as the ``path#line=N`` sources they stand for, where ``ranks_sort`` holds."""
from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from dataflow import line_key
from dataflow.lineage import LINE


def _key(rank: int, line: int) -> int:
    """The key as the scans' SQL computes it."""
    for bound, scale, digits in line_key.padded_terms():
        if line < bound:
            return (rank << line_key.LINE_BITS) + line * scale + digits
    return (rank << line_key.LINE_BITS) + (line << 4) + line_key.DIGITS


@given(st.lists(st.text("a.# ", min_size=1, max_size=3), min_size=1, max_size=4, unique=True),
       st.lists(st.tuples(st.integers(0, 3), st.integers(1, 10**10 - 1) | st.integers(1, 120)), min_size=2, max_size=8))
def test_keys_sort_as_sources_and_decode_back(names, rows):
    paths = sorted(names)
    assume(line_key.ranks_sort(paths))
    rows = [(r % len(paths), n) for r, n in rows]
    keys = {_key(r, n): f"{paths[r]}{LINE}{n}" for r, n in rows}
    assert [keys[k] for k in sorted(keys)] == sorted(keys.values())
    assert all(line_key.decode(_key(r, n)) == (r, n) for r, n in rows)


def test_ranks_sort_refuses_a_prefix_followed_by_a_character_below_the_fragment():
    assert line_key.ranks_sort(["/d/a", "/d/a.1", "/d/b"]) and line_key.ranks_sort(["/d/a"])
    assert not line_key.ranks_sort(["/d/a", "/d/a b"]) and not line_key.ranks_sort(["/d/a", "/d/a#1"])
