"""End-to-end pipelines on a real local Ray: images, line formats, sinks, modes, budget, take()."""
from __future__ import annotations

import json
import pathlib

import pyarrow.parquet as pq
import pytest

import dataflow
from dataflow.engines.base import RunOptions
from dataflow.errors import RunError, SinkExistsError
from dataflow.runner import BudgetExceededError, run_pipeline
from tests.datagen import write_images, write_jsonl

ROOT = pathlib.Path(__file__).parents[2]
QUIET = RunOptions(progress=False)


def _rows(sink: pathlib.Path) -> list[dict]:
    manifest = json.loads((sink / "_manifest.json").read_text())
    rows = []
    for f in manifest["files"]:
        rows += pq.read_table(sink / f["path"]).to_pylist()
    return sorted(rows, key=lambda r: r["__source__"])


def _errors(sink: pathlib.Path) -> list[dict]:
    return sorted((json.loads(line) for p in (sink / "_errors").glob("*.jsonl") for line in p.read_text().splitlines()), key=lambda r: r["source"])


def test_thumbnails_yaml_writes_thumbnails_and_routes_corrupt_images(ray_local, image_dir, tmp_path):
    sink = tmp_path / "thumbs"
    p = dataflow.Pipeline.from_yaml(str(ROOT / "pipelines" / "thumbnails.yaml"), overrides=(f"source.uri={image_dir}", f"sink.uri={sink}", "errors.max_error_ratio=0.5"))
    report = p.run(progress=False)
    assert (report.rows_in, report.rows_out, report.rows_errored) == (15, 12, 3)
    assert (sink / "_SUCCESS").exists() and not (sink / "_tmp").exists()
    rows = _rows(sink)
    assert len(rows) == 12 and all(max(r["width"], r["height"]) <= 256 for r in rows)
    assert all(r["bytes"][:4] == b"RIFF" and r["format"] == "webp" for r in rows)
    errors = _errors(sink)
    assert [pathlib.Path(e["source"]).name for e in errors] == ["bad_empty.png", "bad_text.jpg", "bad_truncated.jpg"]
    assert {e["op"] for e in errors} == {"image.decode"}
    steps = {s.op: s for s in report.steps}
    assert (steps["image.decode"].rows_in, steps["image.decode"].rows_errored) == (15, 3)


def test_yaml_and_python_pipelines_give_the_same_rows(ray_local, image_dir, tmp_path):
    yaml_text = f"""
version: 1
name: same
source: {{uri: "{image_dir}", format: image}}
steps:
  - op: image.decode
  - op: image.resize
    params: {{max_side: 32}}
  - op: image.encode
    params: {{format: png}}
sink: {{uri: "{tmp_path / 'a'}", format: parquet}}
errors: {{max_error_ratio: 0.5}}
"""
    dataflow.Pipeline.from_yaml_text(yaml_text).run(progress=False)
    (
        dataflow.read(str(image_dir), format="image", name="same")
        .apply("image.decode").apply("image.resize", max_side=32).apply("image.encode", format="png")
        .write(str(tmp_path / "b")).with_errors(max_error_ratio=0.5).run(progress=False)
    )
    assert _rows(tmp_path / "a") == _rows(tmp_path / "b")
    assert len(_rows(tmp_path / "a")) == 12


def test_jsonl_bad_lines_become_row_errors_with_line_offsets(ray_local, tmp_path):
    rows = [{"text": "x" * n, "n": n} for n in range(10)]
    write_jsonl(tmp_path / "in" / "a.jsonl", rows, bad_lines=[b"{not json", b"\xff\xfe bad utf8", b"[1, 2]"])
    report = (
        dataflow.read(str(tmp_path / "in"), format="jsonl").apply("text.filter_length", min_chars=3)
        .write(str(tmp_path / "out"), format="jsonl").run(progress=False)
    )
    assert (report.rows_in, report.rows_out, report.rows_errored) == (13, 7, 3)
    errors = _errors(tmp_path / "out")
    assert [e["source"].rsplit("#", 1)[1] for e in errors] == ["line=11", "line=12", "line=13"]
    assert [e["error_type"] for e in errors] == ["JSONDecodeError", "UnicodeDecodeError", "TypeError"]
    out = [json.loads(line) for p in (tmp_path / "out").glob("part-*.jsonl") for line in p.read_text().splitlines()]
    assert sorted(r["n"] for r in out) == list(range(3, 10))
    assert all(r["__source__"].endswith(f"#line={r['n'] + 1}") for r in out)


def test_csv_rows_with_wrong_field_count_and_text_lines(ray_local, tmp_path):
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "t.csv").write_text("a,b\n1,2\n3\n4,5\n")
    report = dataflow.read(str(tmp_path / "csv"), format="csv").write(str(tmp_path / "o1")).run(progress=False)
    assert (report.rows_out, report.rows_errored) == (2, 1)
    assert _errors(tmp_path / "o1")[0]["source"].endswith("t.csv#line=3")
    (tmp_path / "txt").mkdir()
    (tmp_path / "txt" / "d.txt").write_bytes(b"hello world\n\nsecond line here\nok\n")
    report = (
        dataflow.read(str(tmp_path / "txt"), format="text", split="line").apply("tests.opfixtures:tag_length")
        .write(str(tmp_path / "o2")).run(progress=False)
    )
    got = [(r["__source__"].rsplit("#", 1)[1], r["length"]) for r in _rows(tmp_path / "o2")]
    assert sorted(got) == [("line=1", 11), ("line=3", 16), ("line=4", 2)]


def test_parquet_source_select_and_sharding(ray_local, tmp_path):
    import pyarrow as pa

    (tmp_path / "pq").mkdir()
    pq.write_table(pa.table({"a": list(range(25)), "b": [str(i) for i in range(25)], "c": [0.5] * 25}), tmp_path / "pq" / "x.parquet")
    report = (
        dataflow.read(str(tmp_path / "pq"), format="parquet").apply("table.select", columns=["b", "a"])
        .write(str(tmp_path / "out"), rows_per_file=10).run(progress=False)
    )
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert report.rows_out == 25 and sum(f["rows"] for f in manifest["files"]) == 25
    assert len(manifest["files"]) >= 3 and all(f["rows"] <= 10 for f in manifest["files"])
    rows = _rows(tmp_path / "out")
    assert set(rows[0]) == {"a", "b", "__source__"} and sorted(r["a"] for r in rows) == list(range(25))


def test_sink_modes_error_overwrite_append(ray_local, tmp_path):
    write_images(tmp_path / "img", 4)
    base = dataflow.read(str(tmp_path / "img"), format="image").apply("image.decode").apply("table.select", columns=["width"])
    base.write(str(tmp_path / "out")).run(progress=False)
    with pytest.raises(SinkExistsError, match="mode: error"):
        base.write(str(tmp_path / "out")).run(progress=False)
    base.write(str(tmp_path / "out"), mode="append").run(progress=False)
    assert len(_rows(tmp_path / "out")) == 8
    base.write(str(tmp_path / "out"), mode="overwrite").run(progress=False)
    assert len(_rows(tmp_path / "out")) == 4
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert sorted(p.name for p in (tmp_path / "out").glob("part-*")) == sorted(f["path"] for f in manifest["files"])


def test_error_budget_exceeded_publishes_nothing_but_keeps_errors(ray_local, image_dir, tmp_path):
    p = dataflow.read(str(image_dir), format="image").apply("image.decode").write(str(tmp_path / "out")).with_errors(max_errors=2)
    with pytest.raises(BudgetExceededError, match="3 row errors exceed errors.max_errors=2") as info:
        p.run(progress=False)
    assert "undecodable image" in str(info.value)
    assert not (tmp_path / "out" / "_SUCCESS").exists() and not list((tmp_path / "out").glob("part-*"))
    assert len(_errors(tmp_path / "out")) == 3
    assert info.value.report.rows_errored == 3


def test_files_sink_writes_one_file_per_row_with_an_index(ray_local, tmp_path):
    write_images(tmp_path / "img", 3)
    (
        dataflow.read(str(tmp_path / "img"), format="image").apply("image.decode").apply("image.resize", max_side=20)
        .apply("image.encode", format="jpeg").write(str(tmp_path / "out"), format="files").run(progress=False)
    )
    files = sorted((tmp_path / "out").rglob("*.jpeg"))
    assert len(files) == 3 and all(f.read_bytes()[:2] == b"\xff\xd8" for f in files)
    assert all(tmp_path / "out" in f.parents for f in files)
    index = [json.loads(line) for p in (tmp_path / "out").rglob("index.jsonl") for line in p.read_text().splitlines()]
    assert sorted(r["file"] for r in index) == sorted(f.name for f in files)


def test_take_returns_decoded_rows(ray_local, image_dir):
    rows = dataflow.read(str(image_dir), format="image").apply("image.decode").apply("image.resize", max_side=16).take(3)
    assert len(rows) == 3
    assert all(r["image"].shape[2] == 3 and max(r["image"].shape[:2]) <= 16 for r in rows)


def test_a_bug_in_an_op_fails_the_run_loudly(ray_local, tmp_path):
    write_images(tmp_path / "img", 2)
    p = dataflow.read(str(tmp_path / "img"), format="image").apply("tests.opfixtures:explode", message="kaboom").write(str(tmp_path / "out"))
    with pytest.raises(RunError, match="ValueError: kaboom"):
        run_pipeline(p.spec, QUIET)
    assert not (tmp_path / "out" / "_SUCCESS").exists()


def test_stateful_op_runs_as_an_actor_pool_built_once_per_actor(ray_local, tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.txt").write_text("\n".join(f"line {i}" for i in range(40)))
    p = (
        dataflow.read(str(tmp_path / "t"), format="text", split="line")
        .apply("tests.opfixtures:CountInActor", resources={"batch_size": 10, "concurrency": 1})
        .write(str(tmp_path / "out"))
    )
    assert "as actor pool, batch_size=10, num_cpus=0.5, concurrency=1" in p.explain()
    p.run(progress=False)
    rows = _rows(tmp_path / "out")
    assert len(rows) == 40 and len({r["pid"] for r in rows}) == 1
    assert sorted({r["calls"] for r in rows}) == [1, 2, 3, 4]


def test_decoded_images_are_written_without_their_raw_bytes_unless_kept(ray_local, image_dir, tmp_path):
    """The decode consumed `bytes`: the sink leaves it out by default, and writes it with sink.keep."""
    def columns(out, **sink):
        p = dataflow.read(str(image_dir), format="image").apply("image.decode").apply("image.resize", max_side=32)
        run_pipeline(p.write(str(tmp_path / out), **sink).with_errors(max_error_ratio=0.5).spec, RunOptions(progress=False))
        return set(pq.read_table(next((tmp_path / out).glob("*.parquet"))).column_names)

    assert columns("default") == {"__source__", "image", "width", "height"}
    assert columns("kept", keep=["bytes"]) == {"__source__", "image", "width", "height", "bytes"}


def test_error_budget_stops_before_the_remaining_shards(ray_local, tmp_path):
    """Every file holds one bad line and is a shard of its own: past ``max_errors`` no further shard starts."""
    for i in range(12):
        (tmp_path / "in").mkdir(exist_ok=True)
        (tmp_path / "in" / f"{i:02d}.jsonl").write_text('{"n": 1}\n{not json\n')
    p = dataflow.read(str(tmp_path / "in"), format="jsonl", files_per_shard=1).apply("table.filter_rows", where="n > 0")
    with pytest.raises(BudgetExceededError, match="row errors exceed errors.max_errors=1") as info:
        p.write(str(tmp_path / "out")).with_errors(max_errors=1).run(progress=False)
    errored = len(_errors(tmp_path / "out"))  # one per shard that ran; the second crossed the budget, running ones may finish
    assert 2 <= errored < 12 and info.value.report.rows_errored == errored


def test_the_first_shard_waits_for_the_engines_warm_up_after_the_listing_ended(ray_local, tmp_path, monkeypatch):
    """A local listing ends at once; the first shard still starts only once the job's workers are warm (run start-up paid once, not by it)."""
    import threading

    from dataflow.engines.ray.engine import RayEngine

    write_jsonl(tmp_path / "in" / "a.jsonl", [{"n": i} for i in range(5)])
    ready, began = threading.Event(), []
    monkeypatch.setattr(RayEngine, "warm", lambda self: ready)
    execute = RayEngine.execute

    def execute_shard(self, *args, **kwargs):
        began.append(ready.is_set())
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(RayEngine, "execute", execute_shard)
    timer = threading.Timer(0.5, ready.set)  # the warm-up ends after the listing
    timer.start()
    report = dataflow.read(str(tmp_path / "in"), format="jsonl").with_engine("ray").write(str(tmp_path / "out")).run(progress=False)
    timer.join()
    assert began == [True] and report.rows_out == 5


def test_the_writer_is_an_operator_of_its_own_so_a_shard_runs_on_every_core(ray_local, tmp_path, capsys):
    """Fused with the read and stages, a writer of rows_per_file rows bundles that many rows into one task: a shard of
    400 images ran on one core. Apart (its own concurrency, no CPU of its own), the stages run a task per bundle."""
    import ray

    from dataflow.dsl.parse import parse_pipeline
    from dataflow.engines.ray.run import written_dataset
    from dataflow.engines.registry import compile_pipeline

    doc = {"name": "w", "engine": "ray", "source": {"uri": str(tmp_path / "in"), "format": "jsonl"},
           "steps": [{"op": "text.normalize", "params": {"column": "text"}}], "sink": {"uri": str(tmp_path / "out"), "format": "parquet"}}
    *_, job = compile_pipeline(parse_pipeline(doc))
    stage = ray.data.range(64).map_batches(lambda b: b, batch_size=8)  # a task map as the stages are
    written_dataset(job, stage, {}, str(tmp_path / "tmp"), "r1").explain()
    physical = capsys.readouterr().out.split("Physical Plan (Optimized)")[-1]
    operators = [line.strip("+- ") for line in physical.splitlines() if "TaskPoolMapOperator" in line]
    assert operators[0] == "TaskPoolMapOperator[MapBatches(ShardWriter)]", physical
    assert all("ShardWriter" not in op for op in operators[1:]), physical
