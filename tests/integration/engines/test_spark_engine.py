"""The Spark engine: lowering tables, session reuse, remote storage through the connectors, take().

``test_<x>_compiles`` inspects the lowered job; the ``_runs`` tests run real rows on the one local
Spark session of the test run (fixture ``spark_local``), and S3 is moto's server on 127.0.0.1.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataflow.cli.main import cli
from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.engines.spark.compile import compile_plan
from dataflow.engines.spark.s3a import s3a_settings
from dataflow.ops.registry import all_ops
from dataflow.runner import run_pipeline, take_rows
from dataflow.engines.registry import engine_caps
from dataflow.plan.planner import plan_pipeline

QUIET = RunOptions(progress=False)


def _spec(source: dict, steps: list, sink: str, **extra):
    return parse_pipeline({"name": "t", "engine": "spark", "source": source, "steps": steps, "sink": {"uri": sink, "format": "parquet"}, **extra})


def test_every_table_op_has_a_native_lowering(spark_local):
    from dataflow.engines.spark.lowerings import LOWERINGS

    # dataflow's own table ops (other tests register fixture ops in this process's registry)
    table_ops = {s.name for s in all_ops() if s.name.startswith("table.") and getattr(s.target, "__module__", "").startswith("dataflow.")}
    assert table_ops | {"text.dedup_semantic"} == set(LOWERINGS)
    assert all(callable(lowering.load()) for lowering in LOWERINGS.values())


def test_parse_json_and_window_compile_to_native_steps(tmp_path):
    steps = [{"op": "table.parse_json", "params": {"fields": {"ts": "long", "x": "double"}}},
             {"op": "table.window_aggregate", "params": {"size": "1h", "aggregations": {"n": "count(*)"}}}]
    _, optimized = plan_pipeline(_spec({"uri": str(tmp_path), "format": "text", "options": {"split": "line"}}, steps, str(tmp_path / "o")), engine_caps())
    job = compile_plan(optimized)
    assert [(s.index, s.name, s.kind) for s in job.steps] == [(0, "table.parse_json", "map"), (1, "table.window_aggregate", "global")]
    text = job.describe()
    assert f"read: text lines from {tmp_path} via native Spark reader" in text
    assert "steps[0] table.parse_json: from_json(<declared schema>)" in text and "write: Spark's Parquet writer rows_per_file=10000" in text


def test_spark_refuses_media_ops_at_validation_naming_the_step():
    pipeline = {"name": "t", "engine": "spark", "source": {"uri": "/x", "format": "parquet"}, "steps": [{"op": "image.decode"}], "sink": {"uri": "/o"}}
    runner = CliRunner()
    with runner.isolated_filesystem():
        with open("p.yaml", "w") as f:
            json.dump(pipeline, f)
        result = runner.invoke(cli, ["validate", "p.yaml"])
    assert result.exit_code == 2
    assert "p.yaml:1:90: steps[0]: engine 'spark' cannot run image.decode (engine: spark set in the pipeline); engines that can: ray" in result.output


def test_the_engine_joins_the_active_session(spark_local):
    from dataflow.engines.spark.session import ensure_spark

    assert ensure_spark() is spark_local
    assert spark_local.conf.get("spark.sql.shuffle.partitions") == "4"


def test_s3a_settings_come_from_the_s3_storage_options():
    settings = s3a_settings({"client_kwargs": {"endpoint_url": "http://127.0.0.1:9000"}, "key": "k", "secret": "s"})
    assert settings == {
        "fs.s3a.endpoint": "http://127.0.0.1:9000", "fs.s3a.path.style.access": "true", "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.access.key": "k", "fs.s3a.secret.key": "s",
    }


def test_jsonl_and_csv_sources_runs(spark_local, tmp_path):
    (tmp_path / "t.jsonl").write_text('{"link": "a", "rx": -3}\n\n{"link": "b", "rx": -2.5}\nnope\n[1]\n')
    (tmp_path / "labels.csv").write_text("link,label\na,gold\nb,silver,extra\n")
    steps = [{"op": "table.join", "params": {"right": "labels", "keys": ["link"], "how": "left"}}]
    sink = tmp_path / "out"
    spec = _spec({"uri": str(tmp_path / "t.jsonl"), "format": "jsonl"}, steps, str(sink),
                 sources={"labels": {"uri": str(tmp_path / "labels.csv"), "format": "csv"}})
    report = run_pipeline(spec, QUIET)
    rows = sorted((r for p in sink.glob("*.parquet") for r in pq.read_table(p).to_pylist()), key=lambda r: r["__source__"])
    assert rows == [
        {"__source__": f"{tmp_path}/t.jsonl#line=1", "link": "a", "rx": -3.0, "label": "gold"},
        {"__source__": f"{tmp_path}/t.jsonl#line=3", "link": "b", "rx": -2.5, "label": None},
    ]
    errors = sorted((e["source"].rsplit("/", 1)[1], e["op"], e["error_type"]) for p in (sink / "_errors").glob("*.jsonl") for e in map(json.loads, p.read_text().splitlines()))
    assert errors == [("labels.csv#line=3", "read", "ValueError"), ("t.jsonl#line=4", "read", "JSONDecodeError"), ("t.jsonl#line=5", "read", "TypeError")]
    assert (report.rows_in, report.rows_errored) == (4, 3)


def test_a_jsonl_read_persists_nothing_and_parses_again_for_its_row_errors(spark_local, tmp_path):
    from connectors.registry import list_files
    from dataflow.engines.registry import compile_pipeline
    from dataflow.engines.spark.run import build_frames, write_outputs
    from dataflow.runtime.stats import SideOutputs

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "t.jsonl").write_bytes(b'{"link": "a", "rx": 1}\n{"link": \n{"link": "\xff"}\n{"link": "b", "rx": 2}\n')
    spec = _spec({"uri": str(tmp_path / "in"), "format": "jsonl", "options": {"schema": {"link": "string", "rx": "long"}}}, [], str(tmp_path / "out"))
    _, _, _, job = compile_pipeline(spec)
    side = SideOutputs(uri=str(tmp_path / "out"), storage_options={}, stats_dir=str(tmp_path / "out" / "_stats"), errors_dir=str(tmp_path / "out" / "_errors"))
    frames = build_frames(spark_local, job, list_files(str(tmp_path / "in"), "jsonl", {}), side, {})
    assert frames.persisted == []  # every parsed row held for the error write cost more than parsing again when there are bad rows
    written = write_outputs(frames, job, side, {}, str(tmp_path / "out" / "data"), "run00001")
    assert sum(w.rows for w in written) == 2
    errors = sorted((e["source"].rsplit("/", 1)[1], e["error_type"]) for p in (tmp_path / "out" / "_errors").glob("*.jsonl") for e in map(json.loads, p.read_text().splitlines()))
    assert errors == [("t.jsonl#line=2", "JSONDecodeError"), ("t.jsonl#line=3", "UnicodeDecodeError")]


def _rows_and_errors(sink):
    rows = sorted((r for p in sink.glob("*.parquet") for r in pq.read_table(p).to_pylist()), key=lambda r: r["__source__"])
    errors = sorted((e["source"].rsplit("/", 1)[1], e["op"], e["error_type"]) for p in (sink / "_errors").glob("*.jsonl") for e in map(json.loads, p.read_text().splitlines()))
    return rows, errors


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"], ids=["native-utf8", "python-reader-latin1"])
def test_text_lines_honour_the_encoding_and_an_undecodable_line_is_one_row_error(spark_local, tmp_path, encoding):
    (tmp_path / "t.txt").write_bytes("caf\u00e9 ok\n".encode(encoding) + b"bad \x81\xff\n" + "\u00fcber".encode(encoding) + b"\r\n")
    steps = [{"op": "table.select", "params": {"columns": ["text"]}}]
    source = {"uri": str(tmp_path / "t.txt"), "format": "text", "options": {"split": "line", "encoding": encoding}}
    report = run_pipeline(_spec(source, steps, str(tmp_path / "out")), QUIET)
    rows, errors = _rows_and_errors(tmp_path / "out")
    if encoding == "utf-8":  # 0x81 and 0xff are not UTF-8: that line alone is an error
        assert [r["text"] for r in rows] == ["caf\u00e9 ok", "\u00fcber"]
        assert errors == [("t.txt#line=2", "read", "UnicodeDecodeError")] and report.rows_errored == 1
    else:  # every byte is latin-1
        assert [r["text"] for r in rows] == ["caf\u00e9 ok", "bad \x81\u00ff", "\u00fcber"] and errors == []


def test_a_whole_text_file_that_is_not_utf8_is_one_row_error(spark_local, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_bytes("gr\u00fc\u00dfe\n".encode())
    (tmp_path / "docs" / "b.txt").write_bytes(b"\xc3(\n")
    report = run_pipeline(_spec({"uri": str(tmp_path / "docs"), "format": "text"}, [{"op": "table.select", "params": {"columns": ["text"]}}], str(tmp_path / "out")), QUIET)
    rows, errors = _rows_and_errors(tmp_path / "out")
    assert [r["text"] for r in rows] == ["gr\u00fc\u00dfe\n"] and errors == [("b.txt", "read", "UnicodeDecodeError")]
    assert (report.rows_in, report.rows_errored) == (2, 1)


def test_a_different_master_than_the_running_session_is_not_silently_ignored(spark_local):
    from dataflow.engines.spark.session import ensure_spark

    with pytest.warns(RuntimeWarning, match=r"Spark master 'spark://elsewhere:7077' .* is ignored: .* session on 'local\[2\]'"):
        assert ensure_spark("spark://elsewhere:7077") is spark_local


def test_take_returns_rows_without_writing(spark_local, tmp_path):
    pq.write_table(pa.table({"a": [3, 1, 2]}), tmp_path / "a.parquet")
    spec = _spec({"uri": str(tmp_path / "a.parquet"), "format": "parquet"}, [{"op": "table.filter_rows", "params": {"where": "a > 1"}}], str(tmp_path / "o"))
    rows = take_rows(spec, 5, QUIET)
    assert sorted(r["a"] for r in rows) == [2, 3] and not (tmp_path / "o").exists()


@pytest.fixture
def bucket(s3_endpoint):
    import s3fs

    fs = s3fs.S3FileSystem(key="testing", secret="testing", client_kwargs={"endpoint_url": s3_endpoint})
    name = "spark-remote"
    if not fs.exists(name):
        fs.mkdir(name)
    return fs, name, {"s3": {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": s3_endpoint}}}


def test_s3_sources_and_sink_go_through_the_connectors(spark_local, bucket):
    fs, name, storage = bucket
    fs.pipe(f"{name}/tele/a.txt", b'{"link": "a", "rx": -3}\n{"link": 5}\nbad\n')
    with fs.open(f"{name}/meta/m.parquet", "wb") as f:
        pq.write_table(pa.table({"link": ["a", "z"], "site": ["north", "south"]}), f)
    steps = [{"op": "table.parse_json", "params": {"fields": {"link": "string", "rx": "double"}}},
             {"op": "table.join", "params": {"right": "meta", "keys": ["link"], "how": "left"}}]
    spec = _spec({"uri": f"s3://{name}/tele", "format": "text", "options": {"split": "line"}}, steps, f"s3://{name}/out",
                 sources={"meta": {"uri": f"s3://{name}/meta", "format": "parquet"}}, storage={"options": storage})
    report = run_pipeline(spec, QUIET)
    assert report.published and report.engine == "spark"
    manifest = json.loads(fs.cat(f"{name}/out/_manifest.json"))
    rows = []
    for entry in manifest["files"]:
        with fs.open(f"{name}/out/{entry['path']}", "rb") as f:
            rows += pq.read_table(f).to_pylist()
    assert sorted((r["__source__"], r["link"], r["site"]) for r in rows) == [
        (f"s3://{name}/tele/a.txt#line=1", "a", "north"), (f"s3://{name}/tele/a.txt#line=2", "5", None)]
    errors = [json.loads(line) for p in fs.find(f"{name}/out/_errors") for line in fs.cat(p).decode().splitlines()]
    assert [(e["source"], e["error_type"]) for e in errors] == [(f"s3://{name}/tele/a.txt#line=3", "JSONDecodeError")]


def test_cli_run_takes_spark_master_and_joins_the_session(spark_local, tmp_path):
    pq.write_table(pa.table({"a": [1, 2, 3]}), tmp_path / "a.parquet")
    pipeline = {"name": "t", "source": {"uri": str(tmp_path / "a.parquet"), "format": "parquet"},
                "steps": [{"op": "table.filter_rows", "params": {"where": "a >= 2"}}], "sink": {"uri": str(tmp_path / "out")}}
    (tmp_path / "p.yaml").write_text(json.dumps(pipeline))
    result = CliRunner().invoke(cli, ["run", str(tmp_path / "p.yaml"), "--spark-master", "local[2]", "--quiet", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["engine"], report["rows_in"], report["rows_out"]) == ("spark", 3, 2)
