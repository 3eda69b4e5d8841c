"""Pipelines with source and sink on s3:// (moto over HTTP) on a real local Ray, with and without the cache.

Covers pipelines/thumbnails.yaml and every source and sink format the examples use, and checks
what the cache counted in the run report.
"""
from __future__ import annotations

import io
import json
import pathlib
import tarfile

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from connectors.storage.s3 import S3Storage
from dataflow.cli.main import cli
from dataflow.dsl.parse import load_pipeline
from dataflow.dsl.spec import PipelineSpec
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline
from tests.datagen import write_corrupt_images, write_images

ROOT = pathlib.Path(__file__).parents[3]


def _s3_sets(opts: dict) -> tuple[str, ...]:
    return tuple(f"storage.options.s3.{k}={v}" for k, v in opts.items())


def _committed(fs: S3Storage, sink: str) -> list[str]:
    manifest = json.loads(fs.cat_file(f"{sink}/_manifest.json"))
    assert fs.exists(f"{sink}/_SUCCESS") and not fs.exists(f"{sink}/_tmp")
    return [f"{sink}/{f['path']}" for f in manifest["files"]]


@pytest.fixture
def images_on_s3(s3_options, bucket, tmp_path):
    write_images(tmp_path / "img", 24, size=(200, 150))
    (tmp_path / "img/bad_truncated.jpg").write_bytes(write_corrupt_images(tmp_path / "bad")["truncated"].read_bytes())
    fs = S3Storage(**s3_options)
    fs.put(str(tmp_path / "img") + "/", f"{bucket}/raw/images/", recursive=True)
    return fs, f"s3://{bucket}/raw/images/"


def _thumbnails(s3_options, source: str, sink: str, cache_dir: str | None):
    sets = (f"source.uri={source}", f"sink.uri={sink}", *_s3_sets(s3_options))
    return run_pipeline(load_pipeline(str(ROOT / "pipelines/thumbnails.yaml"), overrides=sets), RunOptions(progress=False, cache_dir=cache_dir))


def _thumb_rows(fs: S3Storage, sink: str) -> list[dict]:
    rows = []
    for path in _committed(fs, sink):
        with fs.open(path, "rb") as f:
            rows += pq.read_table(f).to_pylist()
    return rows


def test_thumbnails_from_s3_to_s3_without_cache(ray_local, s3_options, bucket, images_on_s3):
    fs, source = images_on_s3
    report = _thumbnails(s3_options, source, f"s3://{bucket}/thumbs", cache_dir="")
    assert (report.rows_in, report.rows_out, report.rows_errored, report.published) == (25, 24, 1, True)
    assert report.cache is None
    rows = _thumb_rows(fs, f"{bucket}/thumbs")
    assert len(rows) == 24 and all(r["format"] == "webp" and r["bytes"][:4] == b"RIFF" for r in rows)
    (error,) = [json.loads(line) for p in fs.find(f"{bucket}/thumbs/_errors") for line in fs.cat_file(p).decode().splitlines()]
    assert error["source"] == f"{source}bad_truncated.jpg" and error["op"] == "image.decode"


def test_thumbnails_twice_with_cache_reads_remote_once(ray_local, s3_options, bucket, images_on_s3, tmp_path):
    fs, source = images_on_s3
    first = _thumbnails(s3_options, source, f"s3://{bucket}/thumbs", cache_dir=str(tmp_path / "cache"))
    second = _thumbnails(s3_options, source, f"s3://{bucket}/thumbs", cache_dir=str(tmp_path / "cache"))
    total = sum(i["size"] for i in fs.find(f"{bucket}/raw/images", detail=True).values())
    assert (first.cache.misses, first.cache.hits, first.cache.bytes_remote) == (25, 0, total)
    assert (second.cache.misses, second.cache.hits, second.cache.bytes_remote, second.cache.bytes_local) == (0, 25, 0, total)
    assert first.rows_out == second.rows_out == 24 and len(_thumb_rows(fs, f"{bucket}/thumbs")) == 24


def test_cache_warm_cli_prefetches_a_source(ray_local, s3_options, bucket, images_on_s3, tmp_path):
    _, source = images_on_s3
    cache_dir = str(tmp_path / "cache")
    opts = [a for k, v in s3_options.items() for a in ("--option", f"s3.{k}={v}")]
    out = CliRunner().invoke(cli, ["cache", "warm", source, "--cache-dir", cache_dir, "--format", "image", *opts])
    assert out.exit_code == 0, out.output
    assert "warmed 25 files" in out.output
    report = _thumbnails(s3_options, source, f"s3://{bucket}/thumbs", cache_dir=cache_dir)
    assert (report.cache.misses, report.cache.hits) == (0, 25)


def _shard(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _corrupt_second_header(data: bytes) -> bytes:
    raw = bytearray(data)
    offset = list(tarfile.open(fileobj=io.BytesIO(data)))[2].offset
    raw[offset + 100] ^= 0xFF
    return bytes(raw)


INPUTS = {
    "jsonl": ("data.jsonl", b'{"a": 1}\n{"a": 2}\nnot json\n{"a": 3}\n', 3, 1),
    "csv": ("data.csv", b"a,b\n1,x\n2,y\n3\n", 2, 1),
    "text": ("data.txt", b"first line\nsecond line\n", 2, 0),
    "webdataset": ("shard-0.tar", _corrupt_second_header(_shard([(f"{i:03d}.{e}", f"{i}{e}".encode()) for i in range(4) for e in ("bin", "json")])), 3, 2),
}


def _write_parquet(fs: S3Storage, path: str) -> None:
    import pyarrow as pa

    with fs.open(path, "wb") as f:
        pq.write_table(pa.table({"a": [1, 2, 3], "bytes": [b"x", b"y", b"z"]}), f, row_group_size=2)


@pytest.mark.parametrize("cached", [False, True], ids=["direct", "cached"])
@pytest.mark.parametrize(
    ("source_fmt", "sink_fmt"),
    [("jsonl", "jsonl"), ("csv", "parquet"), ("text", "parquet"), ("parquet", "files"), ("webdataset", "webdataset")],
    ids=["jsonl-jsonl", "csv-parquet", "text-parquet", "parquet-files", "webdataset-webdataset"],
)
def test_formats_round_trip_on_s3(ray_local, s3_options, bucket, tmp_path, source_fmt, sink_fmt, cached):
    fs = S3Storage(**s3_options)
    if source_fmt == "parquet":
        _write_parquet(fs, f"{bucket}/in/data.parquet")
        rows_ok, rows_bad = 3, 0
    else:
        name, data, rows_ok, rows_bad = INPUTS[source_fmt]
        fs.pipe_file(f"{bucket}/in/{name}", data)
    spec = PipelineSpec.model_validate({
        "name": f"{source_fmt}-{sink_fmt}",
        "engine": "ray",
        "source": {"uri": f"s3://{bucket}/in/", "format": source_fmt, "options": {"split": "line"} if source_fmt == "text" else {}},
        "sink": {"uri": f"s3://{bucket}/out", "format": sink_fmt},
        "storage": {"options": {"s3": s3_options}},
    })  # fmt: skip
    report = run_pipeline(spec, RunOptions(progress=False, cache_dir=str(tmp_path / "cache") if cached else ""))
    assert (report.rows_out, report.rows_errored, report.published) == (rows_ok, rows_bad, True)
    assert (report.cache is not None) == cached
    if cached:
        # every read went through the cache (Parquet footers are filled at the driver, row groups then hit)
        assert report.cache.hits + report.cache.misses >= 1 and report.cache.direct_reads == 0
    files = _committed(fs, f"{bucket}/out")
    if sink_fmt == "webdataset":
        names = [m for p in files for m in tarfile.open(fileobj=io.BytesIO(fs.cat_file(p))).getnames()]
        assert sorted(names) == sorted(f"{k}.{e}" for k in ("000", "002", "003") for e in ("bin", "json", "meta.json"))
    elif sink_fmt == "files":
        assert sorted(fs.cat_file(p) for p in files if not p.endswith("index.jsonl")) == [b"x", b"y", b"z"]
    else:
        assert files and all(fs.info(p)["size"] > 0 for p in files)


def test_spark_reads_s3_through_the_cache_and_uploads_each_part_once(spark_local, s3_options, bucket, tmp_path):
    from tests.integration.connectors.counting_proxy import CountingProxy

    fs = S3Storage(**s3_options)
    for i in range(3):
        fs.pipe_file(f"{bucket}/logs/{i}.jsonl", b"".join(b'{"n": %d, "k": "x"}\n' % (i * 10 + j) for j in range(5)))
    total = sum(fs.size(f"{bucket}/logs/{i}.jsonl") for i in range(3))

    def run(sink: str, endpoint: str):
        spec = PipelineSpec.model_validate({
            "name": "logs", "engine": "spark",
            "source": {"uri": f"s3://{bucket}/logs/", "format": "jsonl", "options": {"schema": {"n": "long", "k": "string"}}},  # no sampling at the driver
            "steps": [{"op": "table.filter_rows", "params": {"where": "n % 2 = 0"}}],
            "sink": {"uri": f"s3://{bucket}/{sink}", "format": "parquet"},
            "storage": {"options": {"s3": {**s3_options, "endpoint_url": endpoint}}},
        })  # fmt: skip
        return run_pipeline(spec, RunOptions(progress=False, cache_dir=str(tmp_path / "cache")))

    with CountingProxy(s3_options["endpoint_url"]) as proxy:  # one endpoint: cache entries are per endpoint
        first = run("first", proxy.url)
        proxy.requests.clear()
        second = run("second", proxy.url)
    assert (first.cache.misses, first.cache.hits, first.cache.bytes_remote) == (3, 0, total)
    assert (second.cache.misses, second.cache.hits, second.cache.bytes_remote, second.cache.bytes_local) == (0, 3, 0, total)
    assert not proxy.gets_of(f"{bucket}/logs/")  # every file came from the cache
    assert first.bytes_read == second.bytes_read == total
    rows = {name: sorted(r["n"] for f in _committed(fs, f"{bucket}/{name}") for r in pq.read_table(fs.open(f, "rb")).to_pylist()) for name in ("first", "second")}
    assert rows["first"] == rows["second"] == [n for n in range(25) if n % 2 == 0 and n % 10 < 5]
    parts = {f"/{p}" for p in _committed(fs, f"{bucket}/second")}
    writes = proxy.writes_of(f"{bucket}/second")
    assert parts and {k: n for k, n in writes.items() if k[1] in parts} == {("PUT", p): 1 for p in parts}
    assert not [k for k in writes if k[0] == "COPY" and "/part-" in k[1]]


@pytest.mark.parametrize("cached", [False, True], ids=["direct", "cached"])
def test_audio_curation_from_s3_to_s3(ray_local, s3_options, bucket, tmp_path, cached):
    pytest.importorskip("soxr")
    from examples.generate_audio import generate_audio

    planted = generate_audio(tmp_path / "audio", clips=3)
    fs = S3Storage(**s3_options)
    fs.put(str(tmp_path / "audio") + "/", f"{bucket}/audio/", recursive=True)
    sets = (f"source.uri=s3://{bucket}/audio/", f"sink.uri=s3://{bucket}/segments", *_s3_sets(s3_options))
    spec = load_pipeline(str(ROOT / "pipelines/audio_curation.yaml"), overrides=sets)
    report = run_pipeline(spec, RunOptions(progress=False, cache_dir=str(tmp_path / "cache") if cached else ""))
    steps = {s.op: s for s in report.steps}
    assert report.published and report.rows_out == planted["segments"]
    assert steps["audio.decode"].rows_errored == planted["corrupt"]
    assert (report.cache is not None) == cached
    if cached:
        fetched = [p for p in (tmp_path / "audio").iterdir() if p.stat().st_size]  # an empty object has nothing to cache
        assert (report.cache.misses, report.cache.hits, report.cache.bytes_remote) == (len(fetched), 0, sum(p.stat().st_size for p in fetched))
    rows = [r for p in _committed(fs, f"{bucket}/segments") for r in pq.read_table(fs.open(p, "rb")).to_pylist()]
    assert len(rows) == planted["segments"] and {r["sample_rate"] for r in rows} == {16000}
    assert all(r["__source__"].startswith(f"s3://{bucket}/audio/speech_") for r in rows)


def test_spark_run_again_past_a_corrupt_page_leaves_no_part_of_the_stopped_job(spark_local, s3_options, bucket, tmp_path):
    """A corrupt Parquet page stops Spark's job after other tasks may have uploaded parts to final names; the job runs again and only its parts are committed."""
    import pyarrow as pa

    from dataflow.engines.spark.run import discard_attempt, shard_tag
    from dataflow.runtime.stats import SideOutputs

    src = tmp_path / "in"
    src.mkdir()
    for i in range(4):
        pq.write_table(pa.table({"a": list(range(i * 100, i * 100 + 100))}), src / f"{i}.parquet")
    bad = src / "2.parquet"
    pq.write_table(pa.table({"a": list(range(200, 300))}), bad, compression="snappy")
    data = bytearray(bad.read_bytes())
    start = pq.read_metadata(bad).row_group(0).column(0).data_page_offset
    data[start + 20 : start + 120] = b"\xff" * 100
    bad.write_bytes(bytes(data))
    spec = PipelineSpec.model_validate({
        "name": "pages", "engine": "spark", "source": {"uri": str(src), "format": "parquet"},
        "steps": [{"op": "table.filter_rows", "params": {"where": "a >= 0"}}],
        "sink": {"uri": f"s3://{bucket}/pages", "format": "jsonl"}, "storage": {"options": {"s3": s3_options}},
    })  # fmt: skip
    report = run_pipeline(spec, RunOptions(progress=False))
    fs = S3Storage(**s3_options)
    committed = _committed(fs, f"{bucket}/pages")
    rows = sorted(json.loads(line)["a"] for f in committed for line in fs.cat_file(f).decode().splitlines())
    assert rows == [*range(0, 200), *range(300, 400)] and (report.rows_out, report.rows_errored) == (300, 1)
    assert sorted(p for p in fs.find(f"{bucket}/pages") if "/part-" in p) == sorted(committed)

    # What a stopped job leaves, removed by name: its tmp folder and its own uploads, not another shard's.
    root = f"{bucket}/left"
    side = SideOutputs(uri=f"s3://{root}", storage_options={"s3": s3_options}, stats_dir=f"{root}/_tmp/r/s0/_stats", errors_dir=f"{root}/_tmp/r/s0/_errors")
    tmp_data = f"{root}/_tmp/r/s0/data"
    mine, other = shard_tag("r", tmp_data), shard_tag("r", f"{root}/_tmp/r/s1/data")
    for key in (f"_tmp/r/s0/data/part-{mine}-00000-0000.jsonl", f"_tmp/r/s0/_stats/x.json", f"part-{mine}-00001-0000.jsonl", f"files-{mine}-00002-0000", f"part-{other}-00000-0000.jsonl"):
        fs.pipe_file(f"{root}/{key}", b"x")
    discard_attempt(side, tmp_data, "r", publish_root=root)
    assert sorted(fs.find(root)) == [f"{root}/part-{other}-00000-0000.jsonl"]
