"""Spark's JSON-lines fast path (``engines/spark/json_fast.py``) against the exact path.

The exact path reads each file as bytes and parses each numbered line; the fast path reads
aligned files with Spark's JSON reader and numbers lines by row position. Each run here is made
twice, once with the exact path forced (``aligned`` patched to refuse every file), and both must
give the same rows, lineage strings, error records and per-step counters.
"""
from __future__ import annotations

import bz2
import collections
import gzip
import json
import lzma
import zlib

import pyarrow.parquet as pq
import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline

SCHEMA = {"level": "string", "latency_ms": "double", "ctx": "struct<region: string>"}


def _line(i: int) -> str:
    return json.dumps({"level": ["INFO", "DEBUG", "WARN"][i % 3], "latency_ms": i / 4, "ctx": {"region": f"r{i % 2}"}, "__source__": "user's"})


def _write(folder, files: dict[str, list[str]]):
    folder.mkdir()
    for name, lines in files.items():
        (folder / name).write_text("".join(line + "\n" for line in lines))
    return folder


def _doc(data, out, steps=None, lineage=True) -> dict:
    return {
        "name": "jsonl_fast", "engine": "spark",
        "source": {"uri": str(data), "format": "jsonl", "options": {"schema": SCHEMA}},
        "steps": steps if steps is not None else [
            {"op": "table.filter_rows", "params": {"where": "level <> 'DEBUG'"}},
            {"op": "table.with_columns", "params": {"columns": {"region": "ctx.region"}}},
        ],
        "sink": {"uri": str(out), "format": "parquet", "lineage": lineage},
    }


def _run(tmp_path, data, name: str, monkeypatch, exact: bool, **kw):
    import dataflow.engines.spark.run as spark_run

    used = []  # per read: (files on the fast path, files)
    real = spark_run.aligned

    def aligned(read, files, spark):
        fast = frozenset() if exact else real(read, files, spark)
        used.append((len(fast), len(files)))
        return fast

    monkeypatch.setattr(spark_run, "aligned", aligned)
    out = tmp_path / name
    report = run_pipeline(parse_pipeline(_doc(data, out, **kw)), RunOptions(progress=False))
    rows = sorted(json.dumps(r, sort_keys=True) for f in out.glob("*.parquet") for r in pq.read_table(f).to_pylist())
    errors = sorted(json.dumps(e, sort_keys=True) for p in (out / "_errors").glob("*.jsonl") for e in map(json.loads, p.read_text().splitlines()))
    steps = [(s["op"], s["rows_in"], s["rows_out"], s["rows_errored"], s["drops"]) for s in report.to_dict()["steps"]]
    return used, rows, errors, steps


def _frames(spark, data, tmp_path, steps=None):
    """The run's frames (``run.build_frames``) over ``data``, read by the fast path."""
    from connectors.registry import list_files
    from dataflow.engines.registry import compile_pipeline
    from dataflow.engines.spark.run import build_frames
    from dataflow.runtime.stats import SideOutputs

    job = compile_pipeline(parse_pipeline(_doc(data, tmp_path / "out", steps=steps)))[-1]
    side = SideOutputs(uri=str(tmp_path / "out"), storage_options={}, stats_dir=str(tmp_path / "s"), errors_dir=str(tmp_path / "e"))
    return build_frames(spark, job, list_files(str(data), "jsonl", {}), side, {}, fast_json=True)


def _both(tmp_path, data, monkeypatch, aligned: int | None = None, **kw):
    """The fast run (its read takes ``aligned`` files on the fast path, default all) and the exact one give the same output."""
    fast = _run(tmp_path, data, "fast", monkeypatch, exact=False, **kw)
    exact = _run(tmp_path, data, "exact", monkeypatch, exact=True, **kw)
    assert fast[0] and all(n == (total if aligned is None else aligned) for n, total in fast[0]) and all(n == 0 for n, _ in exact[0])
    assert fast[1:] == exact[1:]
    return fast


def test_clean_files_give_the_exact_paths_rows_and_lineage(spark_local, tmp_path, monkeypatch):
    data = _write(tmp_path / "in", {"a.jsonl": [_line(i) for i in range(40)], "b c%.jsonl": [_line(i) for i in range(7)], "empty.jsonl": []})
    _, rows, errors, steps = _both(tmp_path, data, monkeypatch)
    sources = {json.loads(r)["__source__"] for r in rows}
    assert f"{data}/a.jsonl#line=40" in sources and f"{data}/b c%.jsonl#line=1" in sources
    assert len(rows) == 47 - 13 - 2 and errors == []
    assert steps[0] == ("read", 47, 47, 0, {})


def _mixed(tmp_path):
    """Five files, two aligned (one with a bad line, one gzip); the others not: blank lines, a line that is not UTF-8, xz (which Spark's reader does not decompress)."""
    data = _write(tmp_path / "in", {"a.jsonl": [_line(i) for i in range(20)]})
    with (data / "a.jsonl").open("a") as f:
        f.write('{"level": "INFO", "latency_ms": "slow"}\n')
    (data / "b.jsonl").write_text("".join(_line(i) + "\n" + ("\n" if i % 4 == 0 else "") for i in range(5, 17)) + "\n")
    (data / "c.jsonl").write_bytes(b"".join(_line(i).encode() + b"\n" for i in range(3)) + b'{"level": "WA\xffRN"}\n' + _line(4).encode() + b"\n")
    with gzip.open(data / "d.jsonl.gz", "wt") as f:
        f.write("".join(_line(i) + "\n" for i in range(30, 38)))
    (data / "e.jsonl.xz").write_bytes(lzma.compress("".join(_line(i) + "\n" for i in range(40, 43)).encode()))
    return data


def test_the_aligned_files_of_a_mixed_input_take_the_fast_path_beside_the_others(spark_local, tmp_path, monkeypatch):
    """a.jsonl and d.jsonl.gz are aligned: they are read by Spark's JSON reader, the other three by the exact path, and the run is the exact path's."""
    data = _mixed(tmp_path)
    plan = _frames(spark_local, data, tmp_path).output._jdf.queryExecution().optimizedPlan().toString()
    scans = sorted(line.rsplit("]", 1)[-1].strip() for line in plan.splitlines() if line.strip(" +-:").startswith("Relation"))
    assert scans == ["binaryFile", "dataflow", "json"], plan  # a.jsonl and the gzip file; b.jsonl and c.jsonl as bytes; the xz file streamed
    _, rows, errors, steps = _both(tmp_path, data, monkeypatch, aligned=2)
    sources = {json.loads(r)["__source__"].rsplit("/", 1)[1] for r in rows}
    assert {"a.jsonl#line=19", "b.jsonl#line=12", "c.jsonl#line=3", "d.jsonl.gz#line=1", "e.jsonl.xz#line=3"} <= sources  # b's blank lines are counted
    reasons = {json.loads(e)["source"].rsplit("/", 1)[1]: json.loads(e)["reason"] for e in errors}
    assert set(reasons) == {"a.jsonl#line=21", "c.jsonl#line=4"} and reasons["a.jsonl#line=21"] == "field 'latency_ms' is not a double"
    assert steps[0] == ("read", 21 + 12 + 5 + 8 + 3, 21 + 12 + 5 + 8 + 3 - 2, 2, {})


def test_files_spark_cannot_read_beside_aligned_ones_cost_no_second_build_of_the_frames(spark_local, tmp_path, monkeypatch):
    """The frames built while the alignment check runs already read an xz file by the exact path: they are kept."""
    import dataflow.engines.spark.run as spark_run

    data = _write(tmp_path / "in", {"a.jsonl": [_line(i) for i in range(6)], "b.jsonl": [_line(i) for i in range(4)]})
    with gzip.open(data / "c.jsonl.gz", "wt") as f:
        f.write("".join(_line(i) + "\n" for i in range(5)))
    (data / "d.jsonl.xz").write_bytes(lzma.compress("".join(_line(i) + "\n" for i in range(3)).encode()))
    builds, real = [], spark_run._Builder._chain
    monkeypatch.setattr(spark_run._Builder, "_chain", lambda self, *args, fast: builds.append(len(fast)) or real(self, *args, fast=fast))
    plan = _frames(spark_local, data, tmp_path).output._jdf.queryExecution().optimizedPlan().toString()
    assert builds == [3] and sorted(line.rsplit("]", 1)[-1].strip() for line in plan.splitlines() if line.strip(" +-:").startswith("Relation")) == ["dataflow", "json"]
    monkeypatch.setattr(spark_run._Builder, "_chain", real)
    _, rows, _, steps = _both(tmp_path, data, monkeypatch, aligned=3)
    assert len(rows) == 18 - 6 and steps[0] == ("read", 18, 18, 0, {})


def _members(codec: str, lines: list[str], parts: int = 2) -> bytes:
    """``lines`` compressed by ``codec`` in ``parts`` concatenated members (streams, frames), as pigz, pbzip2 and pzstd write them."""
    import zstandard

    compress = {"gz": gzip.compress, "bz2": bz2.compress, "zst": zstandard.ZstdCompressor().compress}[codec]
    cut = len(lines) // parts
    pieces = [lines[i * cut : (i + 1) * cut if i < parts - 1 else len(lines)] for i in range(parts)]
    return b"".join(compress("".join(line + "\n" for line in piece).encode()) for piece in pieces)


def test_compressed_files_spark_decompresses_take_the_fast_path(spark_local, tmp_path, monkeypatch):
    """gzip, bz2 and zstd files of several members each are read by Spark's JSON reader alone, with the exact path's rows, lineage and errors."""
    lines = [_line(i) for i in range(30)]
    lines[17] = '{"level": "INFO", "latency_ms": "slow"}'
    data = tmp_path / "in"
    data.mkdir()
    for codec in ("gz", "bz2", "zst"):
        (data / f"p.jsonl.{codec}").write_bytes(_members(codec, lines, parts=3))
    plan = _frames(spark_local, data, tmp_path).output._jdf.queryExecution().optimizedPlan().toString()
    assert [line.rsplit("]", 1)[-1].strip() for line in plan.splitlines() if line.strip(" +-:").startswith("Relation")] == ["json"], plan
    _, rows, errors, steps = _both(tmp_path, data, monkeypatch)
    sources = {json.loads(r)["__source__"].rsplit("/", 1)[1] for r in rows}
    assert {f"p.jsonl.{codec}#line={n}" for codec in ("gz", "bz2", "zst") for n in (1, 30)} <= sources
    assert sorted(json.loads(e)["source"].rsplit("/", 1)[1] for e in errors) == [f"p.jsonl.{codec}#line=18" for codec in ("bz2", "gz", "zst")]
    assert steps[0] == ("read", 90, 87, 3, {})


def test_a_damaged_or_padded_gzip_file_takes_the_exact_path_and_the_run_goes_on(spark_local, tmp_path, monkeypatch):
    """Spark's reader fails a job on a truncated gzip file or zero padding after its last member: the check sends both to the exact path,
    which keeps the truncated file's lines read before the damage (and reports it) and reads the padded one whole."""
    lines = [_line(i) for i in range(4000)]
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.jsonl.gz").write_bytes(_members("gz", lines[:10]))
    whole = _members("gz", lines, parts=1)
    (data / "cut.jsonl.gz").write_bytes(whole[: len(whole) * 2 // 3])
    (data / "padded.jsonl.gz").write_bytes(_members("gz", lines[:7]) + b"\0" * 512)
    _, rows, errors, steps = _both(tmp_path, data, monkeypatch, aligned=1)
    files = collections.Counter(json.loads(r)["__source__"].rsplit("/", 1)[1].split("#")[0] for r in rows)
    before = zlib.decompressobj(wbits=31).decompress(whole[: len(whole) * 2 // 3]).count(b"\n")  # the whole lines before the damage
    assert files["a.jsonl.gz"] == 7 and files["padded.jsonl.gz"] == 5 and 0 < files["cut.jsonl.gz"] <= sum(i % 3 != 1 for i in range(before))
    assert [json.loads(e)["source"].rsplit("/", 1)[1].split("#")[0] for e in errors] == ["cut.jsonl.gz"]
    assert steps[0][1] == steps[0][2] + steps[0][3] and steps[0][3] == 1


def test_an_aggregate_over_a_mixed_input_keeps_the_string_minimum_across_both_paths(spark_local, tmp_path, monkeypatch):
    data = _mixed(tmp_path)
    aggregate = [{"op": "table.aggregate", "params": {"keys": ["level"], "aggregations": {"n": "count(*)", "p": "max(latency_ms)"}}}]
    _, rows, _, _ = _both(tmp_path, data, monkeypatch, aligned=2, steps=aggregate)
    good = [*range(20), *range(5, 17), 0, 1, 2, 4, *range(30, 38), *range(40, 43)]  # the lines that parse
    assert {json.loads(r)["level"]: json.loads(r)["n"] for r in rows} == dict(collections.Counter(["INFO", "DEBUG", "WARN"][i % 3] for i in good))
    assert {json.loads(r)["__source__"].rsplit("/", 1)[1] for r in rows} == {"a.jsonl#line=1", "a.jsonl#line=11", "a.jsonl#line=12"}  # string order


def test_an_input_the_executors_check_takes_the_fast_path_with_the_same_output(spark_local, tmp_path, monkeypatch):
    from dataflow.engines.spark import json_fast

    monkeypatch.setattr(json_fast, "DRIVER_CHECK_BYTES", 0)
    data = _write(tmp_path / "in", {"a.jsonl": [_line(i) for i in range(30)], "b.jsonl": [_line(i) for i in range(12)]})
    _, rows, errors, steps = _both(tmp_path, data, monkeypatch)
    assert len(rows) == 42 - 14 and errors == [] and steps[0] == ("read", 42, 42, 0, {})


def test_corrupt_lines_give_the_exact_paths_error_records_and_counters(spark_local, tmp_path, monkeypatch):
    lines = [_line(i) for i in range(10)]
    lines[3] = '{"level": "INFO", "latency_ms": '  # not JSON
    lines[6] = '{"level": "INFO", "latency_ms": "slow"}'  # a field of another type
    lines[8] = '{"level": "WARN"} trailing'
    lines[9] = '{"level": "WARN",\r"latency_ms": 2}\r'  # lone CRs: inside the line for both paths
    data = _write(tmp_path / "in", {"a.jsonl": lines, "b.jsonl": [_line(i) for i in range(5)]})
    _, rows, errors, steps = _both(tmp_path, data, monkeypatch)
    records = [json.loads(e) for e in errors]
    assert {(r["source"].rsplit("/", 1)[1], r["op"]) for r in records} >= {("a.jsonl#line=4", "read"), ("a.jsonl#line=7", "read")}
    for op, rows_in, rows_out, errored, drops in steps:
        assert rows_in == rows_out + errored + sum(drops.values()), op
    assert steps[0][3] == len(records) >= 2


def test_a_field_of_another_type_is_an_error_even_when_no_step_reads_it(spark_local, tmp_path, monkeypatch):
    lines = [_line(i) for i in range(6)]
    lines[2] = '{"level": "INFO", "latency_ms": "slow"}'
    data = _write(tmp_path / "in", {"a.jsonl": lines})
    select = [{"op": "table.select", "params": {"columns": ["level"]}}]
    _, rows, errors, _ = _both(tmp_path, data, monkeypatch, steps=select)
    assert len(rows) == 5 and [json.loads(e)["reason"] for e in errors] == ["field 'latency_ms' is not a double"]


def test_an_aggregate_keeps_the_min_lineage(spark_local, tmp_path, monkeypatch):
    data = _write(tmp_path / "in", {f"p{k}.jsonl": [_line(i) for i in range(k * 5, k * 5 + 12)] for k in range(3)})
    aggregate = [{"op": "table.aggregate", "params": {"keys": ["level"], "aggregations": {"n": "count(*)", "p": "max(latency_ms)"}}}]
    _, rows, _, _ = _both(tmp_path, data, monkeypatch, steps=aggregate)
    assert {json.loads(r)["__source__"].rsplit("/", 1)[1] for r in rows} == {"p0.jsonl#line=1", "p0.jsonl#line=11", "p0.jsonl#line=12"}  # string order


def _grouped(groups: dict[int, str], count: int) -> list[str]:
    """``count`` lines whose level is ``groups[line number]`` (``other`` elsewhere)."""
    return [json.dumps({"level": groups.get(n, "other"), "latency_ms": float(n), "ctx": {"region": "r"}}) for n in range(1, count + 1)]


def test_an_aggregate_keeps_the_string_minimum_of_line_numbers_and_paths(spark_local, tmp_path, monkeypatch):
    """Line numbers past 9, 99 and 999 compare as strings ("10" < "2"), and a path that is a prefix of another sorts first."""
    data = _write(tmp_path / "in", {
        "p1.jsonl": _grouped({2: "a", 10: "a", 9: "b", 100: "b", 11: "c", 99: "c", 1001: "d", 998: "d", 50: "e"}, 1200),
        "p1.jsonl2.jsonl": _grouped({1: "e", 3: "f"}, 5),  # p1.jsonl is its prefix: "p1.jsonl#line=50" sorts first
        "p10.jsonl": _grouped({1: "f"}, 3),  # "p1.jsonl2..." < "p10.jsonl" ("." < "0")
    })
    aggregate = [{"op": "table.filter_rows", "params": {"where": "level <> 'other'"}},
                 {"op": "table.with_columns", "params": {"columns": {"region": "ctx.region"}}},
                 {"op": "table.aggregate", "params": {"keys": ["level"], "aggregations": {"n": "count(*)"}}}]
    _, rows, _, _ = _both(tmp_path, data, monkeypatch, steps=aggregate)
    sources = {json.loads(r)["level"]: json.loads(r)["__source__"].rsplit("/", 1)[1] for r in rows}
    assert sources == {"a": "p1.jsonl#line=10", "b": "p1.jsonl#line=100", "c": "p1.jsonl#line=11", "d": "p1.jsonl#line=1001",
                       "e": "p1.jsonl#line=50", "f": "p1.jsonl2.jsonl#line=3"}


def test_an_aggregate_takes_the_minimum_of_numeric_line_keys(spark_local, tmp_path):
    """Before the aggregate, ``__source__`` is a BIGINT key; the aggregate's minima are turned back into strings."""
    import re

    data = _write(tmp_path / "in", {"a.jsonl": [_line(i) for i in range(12)]})
    steps = [{"op": "table.aggregate", "params": {"keys": ["level"], "aggregations": {"n": "count(*)"}}}]
    frames = _frames(spark_local, data, tmp_path, steps)
    plan = frames.output._jdf.queryExecution().analyzed().toString()
    assert re.search(r"min\(__source__#\d+L\)", plan), plan
    assert dict(frames.output.dtypes)["__source__"] == "string"


def test_before_a_shuffle_the_numbered_lines_of_many_files_share_tasks(spark_local, tmp_path, monkeypatch):
    """More files than cores: once numbered, their rows go to the aggregate in one task per core, each line's lineage intact."""
    data = _write(tmp_path / "in", {f"p{k}.jsonl": [_line(i) for i in range(k * 100, k * 100 + 9 + k)] for k in range(5)})
    per_row = [{"op": "table.aggregate", "params": {"keys": ["latency_ms"], "aggregations": {"n": "count(*)"}}}]  # one row per group
    plan = _frames(spark_local, data, tmp_path, per_row).output._jdf.queryExecution().optimizedPlan().toString()
    assert f"Repartition {spark_local.sparkContext.defaultParallelism}, false" in plan, plan
    _, rows, _, _ = _both(tmp_path, data, monkeypatch, steps=per_row)
    assert len(rows) == sum(9 + k for k in range(5)) and {json.loads(r)["__source__"].rsplit("/", 1)[1] for r in rows} >= {"p4.jsonl#line=13", "p0.jsonl#line=9"}


def test_the_reads_counters_are_taken_on_the_scans_own_rows(spark_local, tmp_path):
    """The read's observation sits on the JSON scan, below the columns the read makes (each row is not copied for it)."""
    data = _write(tmp_path / "in", {"a.jsonl": [_line(i) for i in range(12)]})
    plan = [line.strip(" +-:") for line in _frames(spark_local, data, tmp_path).output._jdf.queryExecution().optimizedPlan().toString().splitlines()]
    read = next(i for i, line in enumerate(plan) if line.startswith("CollectMetrics") and "_-1," in line)
    assert plan[read + 1].startswith("Relation") and "json" in plan[read + 1], plan


def test_line_keys_sort_and_read_back_as_the_lineage_strings(spark_local, tmp_path):
    from dataflow.engines.spark.json_fast import fast_jsonl, line_key, one_task_per_file

    data = _write(tmp_path / "in", {"p1.jsonl": [_line(i) for i in range(1105)], "p1.jsonl2.jsonl": [_line(i) for i in range(12)], "p10.jsonl": [_line(i) for i in range(3)]})
    files = sorted(str(p) for p in data.iterdir())
    key = line_key(files)
    keyed = key.decoded(fast_jsonl(spark_local, files, ["file://" + f for f in files], SCHEMA, key=key).selectExpr("__source__ AS k", "__source__"))
    with one_task_per_file(spark_local):
        rows = [(r["k"], r["__source__"]) for r in keyed.collect()]
        strings = [r[0] for r in fast_jsonl(spark_local, files, ["file://" + f for f in files], SCHEMA).select("__source__").collect()]
    assert sorted(s for _, s in rows) == sorted(strings) and len(strings) == 1105 + 12 + 3
    assert [s for _, s in sorted(rows)] == sorted(strings)  # the keys' order is the strings'


def test_paths_that_need_escaping_or_too_many_files_keep_the_strings(tmp_path):
    from dataflow.engines.spark.json_fast import line_key
    from dataflow.engines.spark.lineage_key import MAX_FILES

    assert line_key([f"{tmp_path}/b.jsonl", f"{tmp_path}/a.jsonl"]).paths == (f"{tmp_path}/a.jsonl", f"{tmp_path}/b.jsonl")
    assert line_key([f"{tmp_path}/b c%.jsonl"]) is None
    assert line_key([f"{tmp_path}/{i}.jsonl" for i in range(MAX_FILES + 1)]) is None


def test_without_lineage_the_rows_are_the_same(spark_local, tmp_path, monkeypatch):
    data = _write(tmp_path / "in", {"a.jsonl": [_line(i) for i in range(9)]})
    _, rows, _, _ = _both(tmp_path, data, monkeypatch, lineage=False)
    assert len(rows) == 6 and all("__source__" not in json.loads(r) for r in rows)


@pytest.mark.parametrize("where", ["driver", "executors"])
@pytest.mark.parametrize("body", [b'{"a": 1}\n\n{"a": 2}\n', b' {"a": 1}\n', b'{"a": 1}\n{"a": 2}\n\n', b'{"a": "\xff"}\n', b'{"a": 1}\n[{"a": 1}]\n'],
                         ids=["blank-line", "leading-space", "blank-last-line", "not-utf8", "array"])
def test_files_the_json_reader_would_see_otherwise_take_the_exact_path(spark_local, tmp_path, monkeypatch, body, where):
    """A small input is checked by the driver; a large one by the executors, and the driver then opens no file (it would fail here)."""
    import os

    from dataflow.engines.spark import json_fast
    from dataflow.engines.spark.compile import SparkRead
    from dataflow.dsl.spec import SourceSpec

    if where == "executors":
        driver, real = os.getpid(), json_fast.object_lines

        def off_the_driver(path, *args, **kwargs):
            assert os.getpid() != driver, "the driver read an input file"
            return real(path, *args, **kwargs)

        monkeypatch.setattr(json_fast, "object_lines", off_the_driver)
        monkeypatch.setattr(json_fast, "DRIVER_CHECK_BYTES", 0)
    (tmp_path / "ok.jsonl").write_bytes(b'{"a": 1}\r\n{"a": 2}')
    (tmp_path / "odd.jsonl").write_bytes(body)
    (tmp_path / "z.jsonl.gz").write_bytes(gzip.compress(b'{"a": 1}\n'))
    (tmp_path / "odd.jsonl.gz").write_bytes(gzip.compress(body))
    (tmp_path / "z.jsonl.xz").write_bytes(lzma.compress(b'{"a": 1}\n'))  # Spark's reader would read its compressed bytes
    read = SparkRead(source=SourceSpec(uri=str(tmp_path), format="jsonl"), method="JSON lines", remote=False)
    ok, odd, gz, odd_gz, xz = (str(tmp_path / name) for name in ("ok.jsonl", "odd.jsonl", "z.jsonl.gz", "odd.jsonl.gz", "z.jsonl.xz"))
    assert json_fast.aligned(read, [ok], spark_local) == {ok}
    assert json_fast.aligned(read, [ok, odd, gz, odd_gz, xz], spark_local) == {ok, gz}
    assert json_fast.aligned(read, [xz], spark_local) == set()


def test_a_split_file_fails_instead_of_misnumbering(spark_local, tmp_path):
    from dataflow.engines.spark.json_fast import fast_jsonl, one_task_per_file

    path = tmp_path / "big.jsonl"
    path.write_text("".join(_line(i) + "\n" for i in range(2000)))
    df = fast_jsonl(spark_local, [str(path)], ["file://" + str(path)], SCHEMA)
    with one_task_per_file(spark_local):
        assert df.count() == 2000
        assert df.agg({"__source__": "max"}).first()[0].endswith("#line=999")
    spark_local.conf.set("spark.sql.files.maxPartitionBytes", "4096")
    try:
        with pytest.raises(Exception, match="was split across tasks"):
            df.select("__source__").collect()
    finally:
        spark_local.conf.unset("spark.sql.files.maxPartitionBytes")


def test_a_held_dataframe_recomputed_outside_the_run_keeps_its_lineage(spark_local, tmp_path):
    import dataflow

    data = _write(tmp_path / "in", {"a.jsonl": [_line(i) for i in range(3000)]})
    held = dataflow.read(str(data), format="jsonl", schema=SCHEMA).with_engine("spark").filter("level <> 'DEBUG'").to_spark()
    spark_local.conf.set("spark.sql.files.maxPartitionBytes", "4096")  # a recomputation splits the file
    try:
        held.unpersist()
        assert held.where("__source__ LIKE '%#line=3000'").count() == 1
    finally:
        spark_local.conf.unset("spark.sql.files.maxPartitionBytes")


def test_a_string_field_holding_any_json_value_is_no_error_and_is_not_read(spark_local, tmp_path, monkeypatch):
    """Spark keeps any JSON value's text in a string field, so the fast path's bad-row check leaves unread string fields unparsed."""
    from dataflow.engines.spark.json_fast import FAILED, fast_jsonl

    lines = [_line(i) for i in range(6)]
    lines[1] = '{"level": {"nested": [1, 2]}, "latency_ms": 1.5}'
    lines[4] = '{"level": 7, "latency_ms": "slow"}'  # the double is still checked
    data = _write(tmp_path / "in", {"a.jsonl": lines})
    select = [{"op": "table.select", "params": {"columns": ["ctx"]}}]
    _, rows, errors, _ = _both(tmp_path, data, monkeypatch, steps=select)
    assert len(rows) == 5 and [json.loads(e)["reason"] for e in errors] == ["field 'latency_ms' is not a double"]
    path = data / "a.jsonl"
    df = fast_jsonl(spark_local, [str(path)], ["file://" + str(path)], SCHEMA).select(FAILED)
    scan = df._jdf.queryExecution().executedPlan().toString()
    assert "latency_ms" in scan and "level" not in scan and "_metadata" not in scan

