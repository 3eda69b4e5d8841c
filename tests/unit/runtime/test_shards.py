"""Deterministic input shards: sizes by default, by option and per engine."""
from __future__ import annotations

from dataflow.runtime.progress import make_shards


def _sizes(shards):
    return [len(s.inputs) for s in shards]


def test_default_shards_hold_16_files_or_an_eighth_of_the_input():
    assert _sizes(make_shards([f"f{i:03d}" for i in range(21)])) == [16, 5]
    assert _sizes(make_shards([f"f{i:03d}" for i in range(400)])) == [50] * 8


def test_an_engine_minimum_and_the_option_set_the_size():
    files = [f"f{i:03d}" for i in range(21)]
    assert _sizes(make_shards(files, min_files_per_shard=64)) == [21]  # Spark: one job for a small input
    assert _sizes(make_shards(files, files_per_shard=4, min_files_per_shard=64)) == [4, 4, 4, 4, 4, 1]


def test_shards_are_sorted_and_cover_every_input_once():
    files = [f"f{i:03d}" for i in range(40)]
    shards = make_shards(list(reversed(files)), count=3)
    assert [f for s in shards for f in s.inputs] == files and [s.index for s in shards] == [0, 1, 2]


def test_shard_size_follows_the_cluster_size():
    files = [f"f{i:05d}" for i in range(4000)]
    assert _sizes(make_shards(files, cpus=2)) == [500] * 8  # an eighth of the input is more than 8 per CPU
    assert _sizes(make_shards(files, cpus=250)) == [2000] * 2  # at least 8 files per CPU
    big = [f"f{i:06d}" for i in range(100_000)]
    assert _sizes(make_shards(big, cpus=1)) == [10_000] * 10  # capped at 10,000 files
    assert _sizes(make_shards(big, cpus=1600)) == [12_800] * 7 + [10_400]  # a larger cluster lifts the cap
