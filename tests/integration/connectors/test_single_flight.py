"""Cross-process single flight: N processes read the same 100 objects, and S3 sees one GET per object.

The GETs are counted by a small reverse proxy on 127.0.0.1 in front of moto's server.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

from connectors.storage.s3 import S3Storage
from tests.integration.connectors.counting_proxy import CountingProxy

PROCESSES = 4
OBJECTS = 100

_READER = r"""
import hashlib, json, os, random, sys, time
from connectors.storage.disk_cache import DiskCache
from connectors.storage.s3 import S3Storage
endpoint, bucket, cache_dir, go, seed = sys.argv[1:6]
fs = DiskCache(inner=S3Storage(endpoint_url=endpoint, key="testing", secret="testing"), dir=cache_dir)
listing = fs.find(bucket, detail=True)
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.005)
paths = sorted(listing)
random.Random(int(seed)).shuffle(paths)
digests = {p: hashlib.sha256(fs.cat_file(p, info=listing[p])).hexdigest() for p in paths}
print(json.dumps({"digests": digests, "counters": fs.counters.snapshot()}), flush=True)
"""


def test_four_processes_cause_exactly_one_get_per_object(s3_options, bucket, tmp_path):
    direct = S3Storage(**s3_options)
    expected = {}
    for i in range(OBJECTS):
        data = os.urandom(20_000 + i)
        direct.pipe_file(f"{bucket}/obj-{i:03d}.bin", data)
        expected[f"{bucket}/obj-{i:03d}.bin"] = hashlib.sha256(data).hexdigest()
    go = tmp_path / "go"
    with CountingProxy(s3_options["endpoint_url"]) as proxy:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _READER, proxy.url, bucket, str(tmp_path / "cache"), str(go), str(seed)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=os.getcwd(),
            )  # fmt: skip
            for seed in range(PROCESSES)
        ]
        for p in procs:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
        go.touch()  # all start reading at once
        results = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            assert "dataflow cache" not in err, err  # no reader fell back to direct reads
            results.append(json.loads(out))
        gets = proxy.gets_of(bucket)
    assert all(r["digests"] == expected for r in results)
    assert len(gets) == OBJECTS and set(gets.values()) == {1}, gets.most_common(3)
    assert sum(r["counters"]["misses"] for r in results) == OBJECTS
    assert sum(r["counters"]["hits"] for r in results) == OBJECTS * (PROCESSES - 1)
    assert sum(r["counters"]["bytes_remote"] for r in results) == sum(20_000 + i for i in range(OBJECTS))
