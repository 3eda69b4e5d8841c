"""Input columns of an unexpected type: a plan error naming column, type and expectation when the
schema is known (Parquet), a row error in ``_errors/`` when it is not; a Hugging Face ``Image``
column is decoded by ``image.decode``. Runs ``dataflow run`` in process on the session's engines."""
from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from dataflow.cli.main import cli
from tests.datagen import encode, gradient, write_jsonl

HF_IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def _pipeline(tmp_path: pathlib.Path, engine: str, source: str, fmt: str, steps: str) -> pathlib.Path:
    path = tmp_path / "p.yaml"
    path.write_text(
        f"name: typed\nengine: {engine}\nsource: {{uri: '{source}', format: {fmt}}}\n"
        f"steps:\n{steps}"
        f"sink: {{uri: '{tmp_path / 'out'}', format: parquet, mode: overwrite}}\nerrors: {{max_error_ratio: 0.9}}\n"
    )
    return path


def _errors(out: pathlib.Path) -> list[dict]:
    return [json.loads(line) for f in sorted((out / "_errors").rglob("*")) if f.is_file() for line in f.read_text().splitlines()]


def test_hugging_face_image_parquet_is_decoded_on_ray(ray_local, tmp_path):
    images = [{"bytes": encode(gradient(40, 30), "PNG"), "path": "a.png"}, {"bytes": None, "path": "b.png"}, {"bytes": encode(gradient(20, 10), "JPEG"), "path": None}]
    pq.write_table(pa.table({"image": pa.array(images, HF_IMAGE), "label": [1, 2, 3]}), tmp_path / "train.parquet")
    pipeline = _pipeline(tmp_path, "ray", str(tmp_path / "train.parquet"), "parquet", "  - {op: image.decode, params: {column: image, output: pixels}}\n  - {op: table.select, params: {columns: [label, width, height]}}\n")
    result = CliRunner().invoke(cli, ["run", str(pipeline), "--quiet"])
    assert result.exit_code == 0, result.output
    rows = sorted(pq.read_table(tmp_path / "out", columns=["label", "width", "height"]).to_pylist(), key=lambda r: r["label"])
    assert rows == [{"label": 1, "width": 40, "height": 30}, {"label": 3, "width": 20, "height": 10}]
    [error] = _errors(tmp_path / "out")
    assert error["op"] == "image.decode" and "Hugging Face Image without bytes (path='b.png')" in error["reason"]


def _list_column_plan_error(tmp_path: pathlib.Path, engine: str, name: str, op: str) -> None:
    """The step on line 6 of the YAML reads a list<string> column where text is expected: nothing runs."""
    pq.write_table(pa.table({"text": pa.array([["a", "b"], ["c"]], pa.list_(pa.string())), "n": [1, 2]}), tmp_path / "rows.parquet")
    pipeline = _pipeline(tmp_path, engine, str(tmp_path / "rows.parquet"), "parquet", "  - {op: table.filter_rows, params: {where: 'n > 0'}}\n" + op)
    result = CliRunner().invoke(cli, ["run", str(pipeline), "--quiet"])
    assert result.exit_code == 2, result.output
    assert f"{pipeline}:6:5: steps[1]: {name} reads column 'text' of type list<element: string>, but expects string" in result.stderr
    assert not (tmp_path / "out").exists()


def test_list_column_for_a_text_op_is_a_plan_error_on_ray(ray_local, tmp_path):
    _list_column_plan_error(tmp_path, "ray", "text.normalize", "  - {op: text.normalize}\n")


def test_list_column_for_parse_json_is_a_plan_error_on_spark(spark_local, tmp_path):
    _list_column_plan_error(tmp_path, "spark", "table.parse_json", "  - {op: table.parse_json, params: {fields: {a: long}}}\n")


def test_wrong_typed_text_values_without_a_schema_are_row_errors_on_ray(ray_local, tmp_path):
    write_jsonl(tmp_path / "docs.jsonl", [{"text": "  keep  me "}, {"text": ["a", "list"]}, {"text": 7}, {"text": "also kept"}])
    pipeline = _pipeline(tmp_path, "ray", str(tmp_path / "docs.jsonl"), "jsonl", "  - {op: text.normalize}\n")
    result = CliRunner().invoke(cli, ["run", str(pipeline), "--quiet"])
    assert result.exit_code == 0, result.output
    assert sorted(pq.read_table(tmp_path / "out", columns=["text"]).column("text").to_pylist()) == ["also kept", "keep me"]
    reasons = sorted(e["reason"] for e in _errors(tmp_path / "out"))
    assert reasons == ["wrong input type: column 'text' holds int, expected string", "wrong input type: column 'text' holds list, expected string"]
