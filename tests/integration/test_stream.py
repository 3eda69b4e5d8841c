"""A Ray run over several shards is one streaming Dataset that still commits shard by shard."""
from __future__ import annotations

import json

import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline
from dataflow.runtime.progress import Progress
from dataflow.runtime.stats import read_stats
from tests.datagen import write_jsonl

FILES, ROWS, PER_SHARD = 12, 5, 3


@pytest.fixture
def corpus(tmp_path):
    """12 JSON-lines files of 5 rows (n = 0..59): every 7th ``s`` is not a number, every 4th file has a bad line."""
    expected = []
    for f in range(FILES):
        rows = [{"n": f * ROWS + i, "s": "x" if (f * ROWS + i) % 7 == 0 else str(f * ROWS + i)} for i in range(ROWS)]
        bad = [b"{not json"] if f % 4 == 0 else []
        write_jsonl(tmp_path / "in" / f"f{f:02d}.jsonl", rows, bad)
        expected.append((rows, len(bad)))
    return expected


def _spec(tmp_path):
    return parse_pipeline({
        "name": "streamed", "engine": "ray",
        "source": {"uri": str(tmp_path / "in"), "format": "jsonl", "options": {"files_per_shard": PER_SHARD}},
        "steps": [{"op": "table.filter_rows", "params": {"where": "n >= 5"}}, {"op": "table.cast", "params": {"columns": {"s": "long"}}}],
        "sink": {"uri": str(tmp_path / "out"), "format": "parquet", "rows_per_file": 4},
    })


def test_a_multi_shard_run_is_one_stream_that_commits_every_shard_with_its_own_counts(ray_local, corpus, tmp_path, monkeypatch):
    from dataflow.engines.ray import stream
    from dataflow.engines.ray.engine import RayEngine

    streams, staged = [], []
    real_stream, real_stage = stream.stream_shards, Progress.stage

    def one_stream(*args, **kwargs):
        streams.append(len(args[1]))
        return real_stream(*args, **kwargs)

    def stage(self, shard, *args, **kwargs):
        marker = real_stage(self, shard, *args, **kwargs)
        stats = read_stats(self.fs, self.side_dirs([marker], "_stats"))
        staged.append((shard.index, shard.inputs, stats, sum(f["rows"] for f in marker["files"])))
        return marker

    def per_shard(*_):
        raise AssertionError("a shard ran as its own Dataset")

    monkeypatch.setattr(stream, "stream_shards", one_stream)
    monkeypatch.setattr(Progress, "stage", stage)
    monkeypatch.setattr(RayEngine, "execute", per_shard)
    report = run_pipeline(_spec(tmp_path), RunOptions(progress=False, stream_shards=True))

    assert streams == [FILES // PER_SHARD], "one stream over every shard"
    assert [s[0] for s in staged] == list(range(FILES // PER_SHARD)), "each shard staged once, in order"
    for index, inputs, stats, written in staged:
        files = corpus[index * PER_SHARD : (index + 1) * PER_SHARD]
        assert [p.rsplit("/", 1)[1] for p in inputs] == [f"f{index * PER_SHARD + i:02d}.jsonl" for i in range(PER_SHARD)]
        rows = [r for rs, _ in files for r in rs]
        kept = [r for r in rows if r["n"] >= 5]
        bad_numbers = sum(1 for r in kept if r["s"] == "x")
        assert stats[-1].rows_in == len(rows) + sum(b for _, b in files) and stats[-1].rows_errored == sum(b for _, b in files)
        assert (stats[0].rows_in, stats[0].rows_out) == (len(rows), len(kept))
        assert (stats[1].rows_in, stats[1].rows_errored, stats[1].rows_out) == (len(kept), bad_numbers, len(kept) - bad_numbers)
        assert written == len(kept) - bad_numbers
    assert report.published and report.rows_out == sum(s[3] for s in staged)
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert len(manifest["shards"]) == FILES // PER_SHARD and manifest["rows_out"] == report.rows_out
    assert all(f["rows"] <= 4 for f in manifest["files"]), "the fused writers keep to sink.rows_per_file"


def test_a_single_shard_takes_the_per_shard_path(ray_local, corpus, tmp_path, monkeypatch):
    from dataflow.engines.ray import stream

    monkeypatch.setattr(stream, "stream_shards", lambda *a, **k: pytest.fail("a single shard was streamed"))
    spec = _spec(tmp_path)
    spec.source.options["files_per_shard"] = FILES
    assert run_pipeline(spec, RunOptions(progress=False, stream_shards=True)).published


@pytest.mark.parametrize("batch_size", [1000, 16384])
def test_a_table_step_of_a_stream_takes_the_batch_size_it_was_given(ray_local, tmp_path, batch_size):
    """Rows per batch, not files per read task, and a size equal to the engine's default is still the user's."""
    import pyarrow.parquet as pq

    rows = batch_size + 500
    for f in range(2):
        write_jsonl(tmp_path / "in" / f"f{f}.jsonl", [{"n": f * rows + i} for i in range(rows)])
    spec = parse_pipeline({
        "name": "sized", "engine": "ray",
        "source": {"uri": str(tmp_path / "in"), "format": "jsonl", "options": {"files_per_shard": 1}},
        "steps": [{"op": "tests.opfixtures:batch_rows", "resources": {"batch_size": batch_size}}],
        "sink": {"uri": str(tmp_path / "out"), "format": "parquet"},
    })
    assert run_pipeline(spec, RunOptions(progress=False, stream_shards=True)).rows_out == 2 * rows
    sizes = pq.read_table(tmp_path / "out", columns=["batch_rows"]).column("batch_rows").to_pylist()
    assert len(sizes) == 2 * rows and max(sizes) == batch_size


def test_files_whose_names_end_like_a_fragment_route_as_themselves(ray_local, tmp_path):
    """``logs#part=1.jsonl`` is a file of its own (legal on POSIX and S3), not ``logs`` with a fragment: each of its rows goes to its shard."""
    import pyarrow.parquet as pq

    names = ["logs!.jsonl", "logs#part=1.jsonl", "logs#part=2.jsonl"]
    for f, name in enumerate(names):
        write_jsonl(tmp_path / "in" / name, [{"n": f * 10 + i} for i in range(3)])
    spec = parse_pipeline({
        "name": "hashes", "engine": "ray",
        "source": {"uri": str(tmp_path / "in"), "format": "jsonl", "options": {"files_per_shard": 1}},
        "steps": [{"op": "table.filter_rows", "params": {"where": "n >= 0"}}],
        "sink": {"uri": str(tmp_path / "out"), "format": "parquet"},
    })
    report = run_pipeline(spec, RunOptions(progress=False, stream_shards=True))
    assert report.published and report.rows_out == 9
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert len(manifest["shards"]) == 3 and sorted(pq.read_table(tmp_path / "out").column("n").to_pylist()) == [f * 10 + i for f in range(3) for i in range(3)]


@pytest.mark.parametrize("options", [RunOptions(progress=False), RunOptions(progress=False, stream_shards=False)], ids=["default", "per-shard"])
def test_runs_stream_by_default_and_go_per_shard_when_told(ray_local, corpus, tmp_path, monkeypatch, options):
    from dataflow.engines.ray import stream
    from dataflow.engines.ray.engine import RayEngine

    streams, datasets = [], []
    real_stream, real_execute = stream.stream_shards, RayEngine.execute

    def one_stream(*args, **kwargs):
        streams.append(len(args[1]))
        return real_stream(*args, **kwargs)

    def execute(self, job, ctx, *args, **kwargs):
        datasets.append(ctx.inputs)
        return real_execute(self, job, ctx, *args, **kwargs)

    monkeypatch.setattr(stream, "stream_shards", one_stream)
    monkeypatch.setattr(RayEngine, "execute", execute)
    report = run_pipeline(_spec(tmp_path), options)
    shards = FILES // PER_SHARD
    assert (streams, len(datasets)) == (([shards], 0) if options.stream_shards else ([], shards))
    assert report.published and len(json.loads((tmp_path / "out" / "_manifest.json").read_text())["shards"]) == shards


def test_a_stream_of_fewer_read_tasks_than_its_concurrency_is_quiet(ray_local, tmp_path, monkeypatch):
    """Ray Data's warning that an operator got fewer inputs than its concurrency is about dataflow's own maps: left out."""
    import warnings

    from dataflow.engines.ray import stream

    streams, real_stream = [], stream.stream_shards
    monkeypatch.setattr(stream, "stream_shards", lambda *args, **kwargs: streams.append(len(args[1])) or real_stream(*args, **kwargs))
    for f in range(6):  # 3 shards of 2 files: 3 read tasks, fewer than the stream's concurrency (2 per CPU)
        write_jsonl(tmp_path / "in" / f"f{f}.jsonl", [{"n": f * 10 + i} for i in range(3)])
    spec = parse_pipeline({
        "name": "few", "engine": "ray",
        "source": {"uri": str(tmp_path / "in"), "format": "jsonl", "options": {"files_per_shard": 2}},
        "steps": [{"op": "table.filter_rows", "params": {"where": "n >= 0"}}],
        "sink": {"uri": str(tmp_path / "out"), "format": "parquet"},
    })
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert run_pipeline(spec, RunOptions(progress=False)).rows_out == 18
    assert streams == [3]
    assert not [str(w.message) for w in seen if "concurrent tasks" in str(w.message)]
