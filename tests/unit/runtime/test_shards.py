"""Shards cut from a paged listing: sizes from the cluster, every file in exactly one shard, stable ids."""
from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataflow.runtime.progress import Shard
from dataflow.runtime.shards import FILES_PER_CPU, MAX_FILES_PER_SHARD, ShardCutter, ShardFeed, cut_count, shard_size


def _entries(n, size=1, mtime=1.0):
    return [(f"/in/f{i:06d}", {"size": size, "mtime": mtime}) for i in range(n)]


def _pages(entries, page):
    return lambda: iter([(entries[i : i + page], {".txt": 1}) for i in range(0, len(entries), page)])


def _cut(entries, size, page):
    cutter = ShardCutter(size)
    feed = ShardFeed(_pages(entries, page))
    return [s for wave in feed.waves(cutter) for s in wave], cutter, feed


def test_shard_size_follows_the_cluster_cpus():
    assert shard_size(1) == FILES_PER_CPU
    assert shard_size(4) == 4 * FILES_PER_CPU
    assert shard_size(100 * 16) == MAX_FILES_PER_SHARD  # 100 nodes of 16 CPUs: capped (a shard's marker lists its inputs)
    assert shard_size(0.05) == 16  # a slice of a CPU: the smallest shard still worth a job
    assert shard_size(2, min_files=512) == 512  # Spark's minimum
    assert shard_size(64, files_per_shard=10) == 10  # the user's choice wins


def test_a_larger_cluster_cuts_fewer_larger_shards():
    entries = _entries(4000)
    small = _cut(entries, shard_size(1), 1000)[0]
    large = _cut(entries, shard_size(8), 1000)[0]
    assert [len(s.inputs) for s in small] == [256] * 15 + [160]
    assert [len(s.inputs) for s in large] == [2048, 1952]


@settings(max_examples=100, deadline=None)
@given(n=st.integers(0, 300), size=st.integers(1, 40), page=st.integers(1, 50))
def test_every_file_in_exactly_one_shard_in_order_whatever_the_pages(n, size, page):
    entries = _entries(n)
    shards, cutter, feed = _cut(entries, size, page)
    assert [f for s in shards for f in s.inputs] == [u for u, _ in entries]
    assert [s.index for s in shards] == list(range(len(shards))) and cutter.count == len(shards)
    assert all(len(s.inputs) == size for s in shards[:-1]) and 0 < len(shards[-1].inputs) <= size or n == 0
    assert len({s.id for s in shards}) == len(shards)
    # the ids and the fingerprint depend on the files, never on how the listing was paged
    again, other, _ = _cut(entries, size, max(1, page // 2 + 7))
    assert [s.id for s in again] == [s.id for s in shards] and other.fingerprint == cutter.fingerprint
    assert feed.skipped[".txt"] == -(-n // page)


def test_an_empty_input_is_one_empty_shard():
    shards, cutter, _ = _cut([], 4, 10)
    assert [s.inputs for s in shards] == [()] and cutter.count == 1


def test_a_shard_id_changes_with_its_files_sizes_and_versions():
    base = _cut(_entries(8), 4, 3)[0]
    assert [s.id for s in _cut(_entries(8, size=2), 4, 3)[0]] != [s.id for s in base]
    assert [s.id for s in _cut(_entries(8, mtime=2.0), 4, 3)[0]] != [s.id for s in base]
    renamed = [(u + "x", i) for u, i in _entries(8)]
    assert _cut(renamed, 4, 3)[0][0].id != base[0].id


def test_waves_start_before_the_listing_ends():
    taken = threading.Event()

    def pages():
        yield _entries(8)[:4], {}
        taken.wait(timeout=30)  # the second page comes only once the first wave is out
        yield _entries(8)[4:], {}

    waves = ShardFeed(pages).waves(ShardCutter(4))
    first = next(waves)
    taken.set()
    assert [s.index for s in first] == [0] and [s.index for s in next(waves)] == [1]


def test_a_listing_error_reaches_the_consumer():
    def pages():
        yield _entries(2), {}
        raise OSError("gone")

    with pytest.raises(OSError, match="gone"):
        list(ShardFeed(pages).waves(ShardCutter(1)))


def test_count_cuts_exactly_that_many_shards():
    shards = cut_count(_entries(10), 3)
    assert [len(s.inputs) for s in shards] == [4, 4, 2] and {s.count for s in shards} == {3}
    assert [len(s.inputs) for s in cut_count(_entries(2), 4)] == [1, 1, 0, 0]
    assert isinstance(shards[0], Shard)


def test_a_shard_i_of_n_run_records_the_same_input_fingerprint_as_a_plain_run():
    """``--shard i/N`` and a later plain run over the same files must agree, or the plain run discards the shard's progress."""
    entries = _entries(12)
    counted, plain = ShardCutter(6), ShardCutter(6)
    ShardFeed(_pages(entries, 5)).first_shards(counted, streamed=False, count=2)
    ShardFeed(_pages(entries, 5)).first_shards(plain, streamed=False)
    assert counted.fingerprint == plain.fingerprint != ShardCutter(6).fingerprint


def test_the_first_wave_waits_for_the_warm_up_only_while_the_listing_goes_on():
    ready, listed, taken = threading.Event(), threading.Event(), threading.Event()

    def pages():
        yield _entries(8)[:4], {}
        yield _entries(8)[4:6], {}
        listed.set()
        taken.wait(timeout=30)  # the listing goes on until the first wave is out
        yield _entries(8)[6:], {}

    waves = ShardFeed(pages).waves(ShardCutter(2), ready)
    threading.Thread(target=lambda: listed.wait(30) and ready.set()).start()  # the warm-up ends once two pages are listed
    first = next(waves)
    taken.set()
    assert ready.is_set() and [s.index for s in first] == [0, 1, 2]  # held back: every shard cut meanwhile
    assert [s.index for s in next(waves)] == [3]
    # the listing ends first: the wave goes without the warm-up
    assert [len(w) for w in ShardFeed(_pages(_entries(6), 2)).waves(ShardCutter(2), threading.Event())] == [3]
