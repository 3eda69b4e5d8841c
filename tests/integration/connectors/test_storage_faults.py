"""Storage faults: an image pipeline S3 -> S3 through a proxy that fails ~10% of the tasks' requests.

The proxy (``counting_proxy.CountingProxy`` with a seeded ``Faults`` plan) answers 503 SlowDown,
answers late, or drops the connection. The run must publish exactly what a clean run publishes,
and its report must count the retries the faults caused.
"""
from __future__ import annotations

import hashlib
import json
import pathlib

import pyarrow.parquet as pq

from connectors.storage.s3 import S3Storage
from dataflow.dsl.parse import load_pipeline
from dataflow.engines.base import RunOptions
from dataflow.runner import run_pipeline
from tests.datagen import write_images
from tests.integration.connectors.counting_proxy import CountingProxy, Faults

ROOT = pathlib.Path(__file__).parents[3]
SEED = 7  # the first 20 draws at 10% hold 2 SlowDowns, 4 drops and 1 slow answer


def _run(bucket: str, endpoint: str, sink: str):
    sets = (
        f"source.uri=s3://{bucket}/raw/",
        f"sink.uri=s3://{bucket}/{sink}",
        f"storage.options.s3.endpoint_url={endpoint}",
        "storage.options.s3.key=testing",
        "storage.options.s3.secret=testing",
    )
    return run_pipeline(load_pipeline(str(ROOT / "pipelines/thumbnails.yaml"), overrides=sets), RunOptions(progress=False, cache_dir=""))


def _digest(fs: S3Storage, root: str) -> str:
    """A digest of the published rows: (source, sha1 of the thumbnail), sorted."""
    manifest = json.loads(fs.cat_file(f"{root}/_manifest.json"))
    rows = []
    for entry in manifest["files"]:
        with fs.open(f"{root}/{entry['path']}", "rb") as f:
            rows += [(r["__source__"], hashlib.sha1(r["bytes"]).hexdigest()) for r in pq.read_table(f, columns=["__source__", "bytes"]).to_pylist()]
    return hashlib.sha1(repr(sorted(rows)).encode()).hexdigest()


def test_faulty_storage_gives_the_clean_output_and_counts_retries(ray_local, s3_options, bucket, tmp_path):
    write_images(tmp_path / "img", 30, size=(96, 72))
    fs = S3Storage(**s3_options)
    fs.put(str(tmp_path / "img") + "/", f"{bucket}/raw/", recursive=True)
    total = sum(p.stat().st_size for p in (tmp_path / "img").iterdir())

    clean = _run(bucket, s3_options["endpoint_url"], "clean")

    # Faults hit only what the tasks send: image GETs and output uploads (not the driver's listing).
    def tasks(method: str, path: str) -> bool:
        key = path.split("?", 1)[0]
        return (method == "GET" and "?" not in path and key.startswith(f"/{bucket}/raw/")) or (method == "PUT" and f"/{bucket}/faulty/part-" in key)

    with CountingProxy(s3_options["endpoint_url"], Faults(rate=0.1, seed=SEED, match=tasks)) as proxy:
        faulty = _run(bucket, proxy.url, "faulty")

    assert proxy.injected["503"] >= 2 and proxy.injected["drop"] >= 1 and proxy.injected["slow"] >= 1
    assert (faulty.rows_in, faulty.rows_out, faulty.rows_errored, faulty.published) == (clean.rows_in, clean.rows_out, 0, True) == (30, 30, 0, True)
    assert _digest(fs, f"{bucket}/faulty") == _digest(fs, f"{bucket}/clean")
    # Every SlowDown is answered with a retry (connection drops may be retried unseen by the HTTP pool).
    assert clean.retries == 0 and faulty.retries >= proxy.injected["503"]
    assert clean.bytes_read == faulty.bytes_read == total
    saved = json.loads(fs.cat_file(f"{bucket}/faulty/_dataflow/report.json"))
    assert (saved["retries"], saved["bytes_read"], saved["bytes_written"]) == (faulty.retries, total, faulty.bytes_written)
    assert faulty.bytes_written == sum(e["bytes"] for e in json.loads(fs.cat_file(f"{bucket}/faulty/_manifest.json"))["files"]) > 0
