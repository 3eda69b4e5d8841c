"""Degrade, never fail: a full or read-only cache directory reads from S3, with one warning.

Each case runs a reader in a private mount namespace (``unshare``) on a real tmpfs: 1 MiB for
the full disk (writes fail with ENOSPC), mounted read-only for the other (EROFS).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from connectors.storage.s3 import S3Storage

_READER = r"""
import hashlib, json, logging, sys
from connectors.storage.disk_cache import DiskCache
from connectors.storage.s3 import S3Storage
logging.basicConfig(level=logging.WARNING, format="%(name)s %(message)s")
endpoint, bucket, cache_dir = sys.argv[1:4]
fs = DiskCache(inner=S3Storage(endpoint_url=endpoint, key="testing", secret="testing"), dir=cache_dir, max_bytes=10**8)
listing = fs.find(bucket, detail=True)
rounds = [{p: hashlib.sha256(fs.cat_file(p, info=i)).hexdigest() for p, i in sorted(listing.items())} for _ in range(2)]
print(json.dumps({"rounds": rounds, "counters": fs.counters.snapshot()}))
"""


def _can_unshare() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _can_unshare(), reason="needs unshare with user and mount namespaces (for a private tmpfs)")


def _run(mount_cmds: str, endpoint: str, bucket: str, cache_dir: str):
    script = f"set -e; mkdir -p {cache_dir}; {mount_cmds}; exec {sys.executable} -c \"$READER\" {endpoint} {bucket} {cache_dir}/cache"
    env = {**os.environ, "READER": _READER}
    return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script], capture_output=True, text=True, env=env, timeout=120, cwd=os.getcwd())


@pytest.fixture
def objects(s3_options, bucket):
    import hashlib

    fs = S3Storage(**s3_options)
    out = {}
    for i in range(5):
        data = os.urandom(400_000)
        fs.pipe_file(f"{bucket}/o{i}.bin", data)
        out[f"{bucket}/o{i}.bin"] = hashlib.sha256(data).hexdigest()
    return out


def test_full_disk_reads_from_remote_with_one_warning(s3_options, bucket, objects, tmp_path):
    import json

    mnt = tmp_path / "nvme"
    result = _run(f"mount -t tmpfs -o size=1m tmpfs {mnt}", s3_options["endpoint_url"], bucket, str(mnt))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["rounds"] == [objects, objects]
    warnings = [line for line in result.stderr.splitlines() if line.startswith("dataflow.cache")]
    assert len(warnings) == 1 and "No space left" in warnings[0], result.stderr
    c = report["counters"]
    assert c["hits"] + c["misses"] == 10 and c["evictions"] >= 1  # still caching what fits, evicting to make room


def test_read_only_dir_reads_from_remote_with_one_warning(s3_options, bucket, objects, tmp_path):
    import json

    mnt = tmp_path / "ro"
    result = _run(f"mount -t tmpfs -o size=4m tmpfs {mnt}; mount -o remount,ro {mnt}", s3_options["endpoint_url"], bucket, str(mnt))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["rounds"] == [objects, objects]
    warnings = [line for line in result.stderr.splitlines() if line.startswith("dataflow.cache")]
    assert len(warnings) == 1 and "Read-only" in warnings[0], result.stderr
    assert report["counters"]["direct_reads"] == 10 and report["counters"]["hits"] == 0
