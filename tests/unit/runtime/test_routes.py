"""Shard routing of a streamed run: every row goes to the shard that holds its input file."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataflow.errors import RunError
from dataflow.runtime.shards import cut_count
from dataflow.runtime.routes import ShardRoutes, input_key

_NAME = st.text(alphabet="ab #!-._ ~zZ09é=", min_size=1, max_size=6)


def make_shards(files, count):
    return cut_count([(f, {}) for f in files], count)


def _routes(shards):
    live = [s for s in shards if s.inputs]
    return ShardRoutes([s.inputs[0] for s in live], [s.index for s in live])


def test_scheme_and_reader_fragments_are_left_out_of_the_key():
    keys = input_key(["s3://b/x.jsonl#line=3", "/d/a.parquet#row=10", "/d/s.tar#key=00#match=2", "file:///d/y.wav#t=1.000,2.500", "/d/p#q.jpg"])
    assert list(keys) == ["b/x.jsonl", "/d/a.parquet", "/d/s.tar", "/d/y.wav", "/d/p#q.jpg"]


def test_a_file_whose_name_ends_like_a_fragment_is_its_own_input():
    """Names legal on POSIX and S3: only the fragments dataflow appends, with the values it writes, are taken off a row's source."""
    files = ["/d/logs!.jsonl", "/d/logs#part=1.jsonl", "/d/logs#part=2.jsonl", "/d/x#key=a.tar", "/d/x#t=1.jpg"]
    assert list(input_key([f"{f}#line=4" for f in files])) == files
    assert list(input_key(["/d/x#key=a.tar#key=dir.d/s01#match=3", "/d/w.parquet#row=2#window=-3600"])) == ["/d/x#key=a.tar", "/d/w.parquet"]
    routes = _routes(make_shards(files, count=len(files)))
    assert list(routes.route([f"{f}#row=0" for f in files])) == [0, 1, 2, 3, 4]


def test_rows_route_to_their_shard_and_groups_keep_shard_order():
    files = [f"/in/f{i:03d}.jsonl" for i in range(10)]
    routes = _routes(make_shards(files, count=3))
    rows = [f"{files[9]}#line=1", f"{files[0]}#line=4", files[4], f"{files[3]}#line=2"]
    assert list(routes.route(rows)) == [2, 0, 1, 0]
    assert [(p, list(i)) for p, i in routes.groups(pa.array(rows))] == [(0, [1, 3]), (1, [2]), (2, [0])]
    assert routes.groups(rows[:1]) == [(2, None)]  # one shard: the batch as it is
    assert routes.groups([]) == []


def test_a_row_from_outside_the_run_is_refused_with_its_source():
    routes = _routes(make_shards(["/in/b", "/in/c", "/in/d"], count=2))
    with pytest.raises(RunError, match="'/in/a'"):
        routes.route(["/in/a"])


def test_boundaries_must_increase():
    with pytest.raises(ValueError, match="strictly increasing"):
        ShardRoutes(["/b", "/a"], [0, 1])


@settings(max_examples=150, deadline=None)
@given(
    names=st.sets(_NAME, min_size=1, max_size=40),
    count=st.integers(1, 12),
    fragment=st.sampled_from(["", "#row=7", "#line=12", "#key=k1", "#t=0.000,1.250", "#line=3#match=2"]),
    scheme=st.sampled_from(["", "s3://bucket", "file://"]),
)
def test_every_input_and_its_rows_route_to_the_shard_that_holds_it(names, count, fragment, scheme):
    files = sorted(f"{scheme}/d/{n}" for n in names)
    shards = make_shards(files, count=count)
    live = [s for s in shards if s.inputs]
    routes = _routes(shards)
    rows = [f + fragment for s in live for f in s.inputs]
    expected = [pos for pos, s in enumerate(live) for _ in s.inputs]
    order = np.random.default_rng(len(rows)).permutation(len(rows))
    got = routes.route(np.array(rows, dtype=object)[order])
    assert list(got) == list(np.array(expected)[order])
    assert [routes.payloads[p] for p in got] == [live[e].index for e in np.array(expected)[order]]
