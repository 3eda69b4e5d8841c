"""CLI argument and error paths with click's CliRunner (no engine started)."""
from __future__ import annotations

import pathlib

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


def test_unknown_op_hides_its_params_check_but_is_reported(tmp_path):
    result = CliRunner().invoke(cli, ["validate", _write(tmp_path, BAD)])
    assert result.exit_code == 2
    assert ":6:5: steps[1].op: unknown op 'image.resise'; did you mean 'image.resize'?" in result.output


def test_validate_ok_and_plan_errors(tmp_path):
    good = BAD.replace("image.resise", "image.resize").replace("max_sid", "max_side")
    assert CliRunner().invoke(cli, ["validate", _write(tmp_path, good)]).exit_code == 0
    no_decode = good.replace("  - op: image.decode\n", "")
    result = CliRunner().invoke(cli, ["validate", _write(tmp_path, no_decode, "q.yaml")])
    assert result.exit_code == 2
    assert "needs column 'image'" in result.output and "add image.decode before it" in result.output


def test_explain_shows_three_sections_and_the_fused_stage():
    result = CliRunner().invoke(cli, ["explain", str(ROOT / "pipelines" / "thumbnails.yaml"), "--set", "source.uri=/data"])
    assert result.exit_code == 0, result.output
    for section in ("== Logical plan ==", "== Optimized plan (engine per step) ==", "== Ray job =="):
        assert section in result.output
    assert "FusedMap[image.decode -> image.filter_size -> image.resize -> image.encode -> table.select]" in result.output
    assert "read: ray.data.read_binary_files(/data)" in result.output


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
