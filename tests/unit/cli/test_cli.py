"""CLI argument and error paths with click's CliRunner (no engine started)."""
from __future__ import annotations

import pathlib

import pytest
from click.testing import CliRunner

from dataflow.cli.main import cli

ROOT = pathlib.Path(__file__).parents[3]
BAD = """\
version: 1
name: bad
source: {uri: ./images, format: image}
steps:
  - op: image.decode
  - op: image.resise
    params: {max_sid: 1}
sink: {uri: ./out}
"""


def _write(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_validate_misspelt_op_and_param_exits_2_naming_both_lines(tmp_path):
    path = _write(tmp_path, BAD.replace("op: image.resise", "op: image.resize").replace("image.decode", "image.decod"))
    result = CliRunner().invoke(cli, ["validate", path])
    assert result.exit_code == 2
    assert f"{path}:5:5: steps[0].op: unknown op 'image.decod'; did you mean 'image.decode'?" in result.output
    assert f"{path}:7:14: steps[1].params.max_sid:" in result.output
    assert "did you mean 'max_side'?" in result.output


SQL = """name: t
source: {uri: /d/x.parquet, format: parquet}
steps:
  - op: table.filter_rows
    params:
      where: "rx > AND 1"
  - op: table.with_columns
    params:
      columns: {a: "flor(rx)", b: "to_timestamp(ts) > '2024-01-01'"}
sink: {uri: /o}
"""


def test_validate_names_the_line_of_a_bad_expression_and_the_column_inside_it(tmp_path):
    path = _write(tmp_path, SQL)
    result = CliRunner().invoke(cli, ["validate", path])
    assert result.exit_code == 2
    assert f"{path}:6:7: steps[0].params.where: value error, at column 6: incomplete GT (an operand is missing) in 'rx > AND 1'" in result.output
    assert f"{path}:9:17: steps[1].params.columns.a: value error, unknown function 'flor' in 'flor(rx)'; did you mean 'floor'?" in result.output
    assert "to_timestamp" not in result.output


def test_misspelt_op_and_its_misspelt_param_in_one_step_are_both_reported(tmp_path):
    path = _write(tmp_path, BAD)
    result = CliRunner().invoke(cli, ["validate", path])
    assert result.exit_code == 2
    assert f"{path}:6:5: steps[1].op: unknown op 'image.resise'; did you mean 'image.resize'?" in result.output
    assert f"{path}:7:14: steps[1].params.max_sid: unknown key of op 'image.resize' params, assuming 'op: image.resize'" in result.output
    assert result.output.rstrip().endswith("did you mean 'max_side'?")


def test_an_unknown_op_without_a_close_name_skips_its_params_check(tmp_path):
    result = CliRunner().invoke(cli, ["validate", _write(tmp_path, BAD.replace("image.resise", "video.zoom"))])
    assert result.exit_code == 2
    assert "steps[1].op: unknown op 'video.zoom'; run 'dataflow ops' to list ops" in result.output
    assert "max_sid" not in result.output


def test_validate_ok_and_plan_errors(tmp_path):
    good = BAD.replace("image.resise", "image.resize").replace("max_sid", "max_side")
    assert CliRunner().invoke(cli, ["validate", _write(tmp_path, good)]).exit_code == 0
    no_decode = good.replace("  - op: image.decode\n", "")
    path = _write(tmp_path, no_decode, "q.yaml")
    result = CliRunner().invoke(cli, ["validate", path])
    assert result.exit_code == 2
    assert result.output.startswith(f"{path}:5:5: steps[0]: image.resize needs column 'image', ")
    assert result.output.rstrip().endswith("; add image.decode before it")


def test_validate_counts_the_steps_of_stages_and_names_the_engines(tmp_path):
    text = """\
name: mixed
source: {uri: ./meta, format: parquet}
stages:
  - name: select
    engine: spark
    steps:
      - op: table.filter_rows
        params: {where: "keep"}
  - name: thumbs
    steps:
      - op: image.decode
      - op: image.resize
sink: {uri: ./out}
"""
    path = _write(tmp_path, text)
    result = CliRunner().invoke(cli, ["validate", path])
    assert result.exit_code == 0, result.output
    assert result.output == f"{path}: valid (3 steps in 2 stages; engine: spark -> ray)\n"


def test_plan_errors_of_several_steps_come_together_with_their_lines(tmp_path):
    text = BAD.replace("image.resise", "image.resize").replace("max_sid", "max_side").replace("  - op: image.decode\n", "")
    text = text.replace("name: bad\n", "name: bad\nengine: spark\n") + "errors: {max_errors: 0}\n"
    text = text.replace("sink:", "  - op: text.filter_length\nsink:")
    path = _write(tmp_path, text)
    result = CliRunner().invoke(cli, ["validate", path])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert [line.split(": ")[0:2] for line in lines[1:]] == [[f"{path}:6:5", "steps[0]"]] * 2 + [[f"{path}:8:5", "steps[1]"]] * 2
    assert lines[0].startswith(f"{path}:4:25: source.format: engine 'spark' cannot read a 'image' source") and "engines that can: ray" in lines[0]
    assert "image.resize needs column 'image'" in lines[1] and "engine 'spark' cannot run image.resize" in lines[2]
    assert "text.filter_length needs column 'text'" in lines[3] and "engines that can: ray" in lines[4]


def test_explain_shows_three_sections_and_the_fused_stage():
    result = CliRunner().invoke(cli, ["explain", str(ROOT / "pipelines" / "thumbnails.yaml"), "--set", "source.uri=/data"])
    assert result.exit_code == 0, result.output
    for section in ("== Logical plan ==", "== Optimized plan (engine per step) ==", "== Ray job =="):
        assert section in result.output
    assert "FusedMap[image.decode -> image.filter_size -> image.resize -> image.encode -> table.select]" in result.output
    # What build_dataset really runs: listed files through from_items, fetched by FetchFiles tasks.
    assert "read: ray.data.from_items(files listed under /data) -> map_batches[FetchFiles, 16+ files per task] -> one row per file" in result.output


@pytest.mark.parametrize(
    "source, read",
    [
        ("{uri: /t, format: jsonl}", "ray.data.from_items(files listed under /t) -> map_batches[ReadStream, 16+ files per task] streams (and decompresses) jsonl lines into rows"),
        ("{uri: /t, format: parquet}", "ray.data.from_items(row groups listed from the Parquet footers under /t) -> map_batches[read one row group per task]"),
        ("{uri: /t, format: webdataset}", "ray.data.from_items(tar shards listed under /t) -> map_batches[ReadStream, 1 shard per task]"),
    ],
    ids=["lines", "parquet", "webdataset"],
)
def test_explain_names_the_ray_read_that_runs(tmp_path, source, read):
    text = f"name: r\nengine: ray\nsource: {source}\nsteps: [{{op: table.select, params: {{columns: [source]}}}}]\nsink: {{uri: /o}}\n"
    result = CliRunner().invoke(cli, ["explain", _write(tmp_path, text)])
    assert result.exit_code == 0, result.output
    assert f"read: {read}" in result.output


def test_explain_shows_each_shuffle_of_the_ray_global_steps(tmp_path):
    text = """\
name: g
engine: ray
source: {uri: /t, format: parquet}
sources: {labels: {uri: /l.csv, format: csv}}
steps:
  - {op: table.join, params: {right: labels, keys: [link], how: left}}
  - {op: table.aggregate, params: {keys: [link], aggregations: {n: "count(*)"}}}
  - {op: table.aggregate, params: {aggregations: {n: "count(DISTINCT link)"}}}
sink: {uri: /o}
"""
    result = CliRunner().invoke(cli, ["explain", _write(tmp_path, text)])
    assert result.exit_code == 0, result.output
    shuffles = [line.strip() for line in result.output.splitlines() if line.strip().startswith("shuffle:")]
    assert shuffles == [
        "shuffle: a named source up to DATAFLOW_RAY_BROADCAST_BYTES (default 64 MiB) is broadcast: each left block joins it, no shuffle; "
        "else groupby(partition).map_groups of both sides on hash(link), P partitions (--shuffle-partitions; default 2 per CPU)",
        "shuffle: partial aggregation per block (map-side combine) -> states up to DATAFLOW_RAY_MERGE_TASK_BYTES (default 64 MiB) merge in one task, "
        "no shuffle; else groupby(partition).map_groups of the states on hash(link), P partitions (--shuffle-partitions; default 2 per CPU): merged per group",
        "shuffle: groupby(partition).map_groups into 1 partition: one Ray task holds all rows (not the driver)",
    ]
    assert "gathered at the driver" not in result.output


def test_explain_shows_the_semantic_dedups_kmeans_and_cluster_shuffle(tmp_path):
    text = "name: s\nengine: ray\nsource: {uri: /t, format: parquet}\nsteps: [{op: text.dedup_semantic, params: {clusters: 100}}]\nsink: {uri: /o}\n"
    result = CliRunner().invoke(cli, ["explain", _write(tmp_path, text)])
    assert result.exit_code == 0, result.output
    shuffle = next(line.strip() for line in result.output.splitlines() if line.strip().startswith("shuffle:"))
    assert "fit k-means centroids" in shuffle and "on the cluster id" in shuffle


def test_set_override_reaches_the_plan():
    result = CliRunner().invoke(cli, ["explain", str(ROOT / "pipelines" / "thumbnails.yaml"), "--set", "steps[2].params.max_side=99"])
    assert "max_side=99" in result.output


def test_ops_lists_and_describes():
    runner = CliRunner()
    listing = runner.invoke(cli, ["ops"])
    assert listing.exit_code == 0 and "image.resize" in listing.output
    one = runner.invoke(cli, ["ops", "image.resize"])
    from dataflow.ops import get_op

    doc = get_op("image.resize").params.model_fields["max_side"].description
    assert f"max_side (" in one.output and doc in one.output
    missing = runner.invoke(cli, ["ops", "image.resise"])
    assert missing.exit_code == 2 and "did you mean 'image.resize'?" in missing.output


def test_usage_errors_exit_2_and_version_prints():
    runner = CliRunner()
    assert runner.invoke(cli, ["run"]).exit_code == 2
    assert runner.invoke(cli, ["frobnicate"]).exit_code == 2
    assert runner.invoke(cli, ["version"]).output.startswith("dataflow 0.1.0")


def test_help_has_examples():
    for command in ("run", "ops"):
        assert "Examples:" in CliRunner().invoke(cli, [command, "--help"]).output


@pytest.mark.parametrize(("flags", "streamed"), [((), True), (("--stream-shards",), True), (("--no-stream-shards",), False)])
def test_run_streams_shards_unless_told_not_to(tmp_path, monkeypatch, flags, streamed):
    import dataflow.runner
    from dataflow.errors import RunError

    seen = []

    def run_pipeline(spec, options, **_):
        seen.append(options.stream_shards)
        raise RunError("stopped before any engine started")

    monkeypatch.setattr(dataflow.runner, "run_pipeline", run_pipeline)
    result = CliRunner().invoke(cli, ["run", str(ROOT / "pipelines" / "thumbnails.yaml"), "--quiet", *flags])
    assert seen == [streamed] and result.exit_code == 1, result.output
