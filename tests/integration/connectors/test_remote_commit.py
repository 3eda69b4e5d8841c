"""Remote sinks: each output object is uploaded once, from local scratch, straight to its final name.

Requests are counted at a proxy in front of the S3 server: a data file gets exactly one PUT (or
one multipart upload when large) and is never copied; the manifest and ``_SUCCESS`` come last.
A killed upload leaves no object, and data files no manifest names are deleted at the next commit.
"""
from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

from connectors.storage.s3 import PART_BYTES, S3Storage
from dataflow.dsl.parse import load_pipeline
from dataflow.dsl.spec import PipelineSpec
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline
from tests.datagen import write_images
from tests.integration.connectors.counting_proxy import CountingProxy, Faults

ROOT = pathlib.Path(__file__).parents[3]


def _options(endpoint: str) -> dict:
    return {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}


def test_each_output_object_is_uploaded_once_and_never_copied(ray_local, s3_options, bucket, tmp_path):
    write_images(tmp_path / "img", 12, size=(96, 72))
    fs = S3Storage(**s3_options)
    fs.put(str(tmp_path / "img") + "/", f"{bucket}/raw/", recursive=True)
    fs.pipe_file(f"{bucket}/out/part-0badc0de-left-by-a-killed-run.parquet", b"partial run")  # not in any manifest
    fs.pipe_file(f"{bucket}/out/notes.txt", b"the user's own file")
    with CountingProxy(s3_options["endpoint_url"]) as proxy:
        sets = (f"source.uri=s3://{bucket}/raw/", f"sink.uri=s3://{bucket}/out", "sink.rows_per_file=4", *(f"storage.options.s3.{k}={v}" for k, v in _options(proxy.url).items()))
        report = run_pipeline(load_pipeline(str(ROOT / "pipelines/thumbnails.yaml"), overrides=sets), RunOptions(progress=False, cache_dir=""))
    assert report.published and report.rows_out == 12
    manifest = json.loads(fs.cat_file(f"{bucket}/out/_manifest.json"))
    keys = {f"/{bucket}/out/{f['path']}" for f in manifest["files"]}
    assert len(keys) == report.files >= 3
    writes = proxy.writes_of(f"{bucket}/out")
    assert {k: n for k, n in writes.items() if k[1] in keys} == {("PUT", k): 1 for k in keys}
    assert not [k for k in writes if k[0] == "COPY" and ("/part-" in k[1] or k[1].endswith(("_manifest.json", "_SUCCESS")))]
    assert writes[("PUT", f"/{bucket}/out/_manifest.json")] == writes[("PUT", f"/{bucket}/out/_SUCCESS")] == 1
    # what lies at the root is what the manifest names, the user's file, and the commit files
    names = sorted(p.rsplit("/", 1)[1] for p in fs.ls(f"{bucket}/out", detail=False, refresh=True))
    assert names == sorted(["_SUCCESS", "_dataflow", "_manifest.json", "notes.txt", *(f["path"] for f in manifest["files"])])


def test_a_large_output_file_is_one_multipart_upload(ray_local, s3_options, bucket):
    fs = S3Storage(**s3_options)
    blob = os.urandom(2 * PART_BYTES + 2 * 2**20)  # 12 MiB: three parts
    with fs.open(f"{bucket}/in/blob.parquet", "wb") as f:
        pq.write_table(pa.table({"bytes": [blob], "format": ["bin"]}), f, compression="none")
    with CountingProxy(s3_options["endpoint_url"]) as proxy:
        spec = PipelineSpec.model_validate({
            "name": "blob", "engine": "ray",
            "source": {"uri": f"s3://{bucket}/in/", "format": "parquet"},
            "sink": {"uri": f"s3://{bucket}/out", "format": "files"},
            "storage": {"options": {"s3": _options(proxy.url)}},
        })  # fmt: skip
        report = run_pipeline(spec, RunOptions(progress=False, cache_dir=""))
    manifest = json.loads(fs.cat_file(f"{bucket}/out/_manifest.json"))
    (big,) = [f["path"] for f in manifest["files"] if f["bytes"] == len(blob)]
    assert fs.cat_file(f"{bucket}/out/{big}") == blob and report.bytes_written >= len(blob)
    writes = proxy.writes_of(f"{bucket}/out/{big}")
    assert writes == {("PART", f"/{bucket}/out/{big}"): 3}
    assert proxy.requests[("POST", f"/{bucket}/out/{big}?uploads")] == 1


_UPLOAD = """
import sys
from connectors.storage.s3 import S3Storage
from connectors.storage.scratch import put_whole
put_whole(S3Storage(endpoint_url=sys.argv[1], key="testing", secret="testing"), sys.argv[2], sys.argv[3])
"""


def test_a_killed_upload_leaves_no_object(s3_options, bucket, tmp_path):
    local = tmp_path / "big.bin"
    local.write_bytes(os.urandom(4 * PART_BYTES))
    key = f"{bucket}/out/part-0123abcd-big.bin"
    # every part answers 2 s late: the uploader is killed while its parts are in flight
    slow_parts = Faults(rate=1.0, kinds=("slow",), delay_s=2.0, match=lambda method, path: "partNumber=" in path)
    with CountingProxy(s3_options["endpoint_url"], slow_parts) as proxy:
        proc = subprocess.Popen([sys.executable, "-c", _UPLOAD, proxy.url, str(local), key], cwd=ROOT)
        deadline = time.monotonic() + 60
        while not proxy.writes_of(key) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proxy.writes_of(key), "the upload never started"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    fs = S3Storage(**s3_options)
    assert not fs.exists(key) and fs.ls(f"{bucket}/", detail=False, refresh=True) == []


def test_a_resumed_run_publishes_the_shards_an_earlier_run_uploaded_without_copying_them(ray_local, s3_options, bucket, tmp_path):
    write_images(tmp_path / "img", 12, size=(96, 72))
    fs = S3Storage(**s3_options)
    fs.put(str(tmp_path / "img") + "/", f"{bucket}/raw/", recursive=True)
    with CountingProxy(s3_options["endpoint_url"]) as proxy:
        sets = (f"source.uri=s3://{bucket}/raw/", "source.options.files_per_shard=6", f"sink.uri=s3://{bucket}/out",
                *(f"storage.options.s3.{k}={v}" for k, v in _options(proxy.url).items()))  # fmt: skip
        spec = load_pipeline(str(ROOT / "pipelines/thumbnails.yaml"), overrides=sets)
        run_pipeline(spec, RunOptions(progress=False, cache_dir=""), shard=(0, 2))  # a run that stopped after its first shard
        assert not fs.exists(f"{bucket}/out/_SUCCESS")
        report = run_pipeline(spec, RunOptions(progress=False, cache_dir=""))
    manifest = json.loads(fs.cat_file(f"{bucket}/out/_manifest.json"))
    assert report.rows_out == 12 and len({s["run_id"] for s in manifest["shards"]}) == 2
    keys = {f"/{bucket}/out/{f['path']}" for f in manifest["files"]}
    writes = proxy.writes_of(f"{bucket}/out")
    assert {k: n for k, n in writes.items() if k[1] in keys} == {("PUT", k): 1 for k in keys}
    assert not [k for k in writes if k[0] == "COPY" and "/part-" in k[1]]
    rows = [r for k in keys for r in pq.read_table(fs.open(k.lstrip("/"), "rb"), columns=["__source__"]).to_pylist()]
    assert sorted(r["__source__"] for r in rows) == sorted(f"s3://{bucket}/raw/{p.name}" for p in (tmp_path / "img").iterdir())
