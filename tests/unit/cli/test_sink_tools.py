"""``dataflow lineage`` and ``dataflow errors`` over hand-written committed sinks (no engine)."""
from __future__ import annotations

import json

from click.testing import CliRunner

from dataflow.cli.main import cli


def _sink(tmp_path, shards, files):
    sink = tmp_path / "sink"
    sink.mkdir()
    (sink / "_manifest.json").write_text(json.dumps({"files": files, "shards": shards, "errors": []}))
    (sink / "_SUCCESS").write_text("")
    return sink


def test_lineage_of_a_global_step_output_names_every_map_shard_input(tmp_path):
    shards = [
        {"shard": "00000-of-00002-aa", "phase": "map", "inputs": ["/in/a.jsonl", "/in/b.jsonl"], "files": ["ckpt-0.parquet"]},
        {"shard": "00001-of-00002-bb", "phase": "map", "inputs": ["/in/c.jsonl"], "files": ["ckpt-1.parquet"]},
        {"shard": "00002-of-00002-cc", "phase": "global", "inputs": ["global"], "files": ["part-x.parquet"]},
    ]
    sink = _sink(tmp_path, shards, [{"path": "part-x.parquet", "rows": 4, "bytes": 10}])
    result = CliRunner().invoke(cli, ["lineage", str(sink), "part-x.parquet"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "part-x.parquet: 4 rows, from shard(s) 00002-of-00002-cc",
        "  (written by a global step: every input of the run may have fed it)",
        "  /in/a.jsonl",
        "  /in/b.jsonl",
        "  /in/c.jsonl",
    ]


def test_lineage_refuses_a_sink_without_success(tmp_path):
    sink = _sink(tmp_path, [], [])
    (sink / "_SUCCESS").unlink()
    result = CliRunner().invoke(cli, ["lineage", str(sink), "part-x.parquet"])
    assert result.exit_code == 1 and "holds no committed output (no _SUCCESS / _manifest.json)" in result.output


def test_errors_on_a_sink_without_errors_says_so(tmp_path):
    sink = _sink(tmp_path, [], [])
    result = CliRunner().invoke(cli, ["errors", str(sink)])
    assert result.exit_code == 0 and result.output == f"{sink}: no row errors\n"
