"""An unusable ``DATAFLOW_SCRATCH_DIR`` (where remote output is written first) fails the run clearly.

We run as root, so ``chmod`` cannot make a folder read-only for us. The read-only and full cases
therefore run ``dataflow run`` in a private mount namespace (``unshare -m``) with a read-only
bind mount or a tiny tmpfs over the folder; they are skipped where ``unshare -m`` is not
allowed. The "a file where the folder should be" case runs everywhere.
"""
from __future__ import annotations

import os
import pathlib
import shlex
import subprocess
import sys
import uuid

import pytest

from connectors.storage.s3 import S3Storage
from dataflow import Pipeline
from dataflow.errors import RunError
from dataflow.runner import run_pipeline
from tests.datagen import write_images

PIPELINE = """\
version: 1
name: scratch
engine: ray
source: {{uri: "{src}", format: image}}
steps:
  - op: image.decode
  - op: image.encode
    params: {{format: png}}
sink: {{uri: "{sink}", format: parquet}}
storage: {{options: {{s3: {{endpoint_url: "{endpoint}", key: testing, secret: testing}}}}}}
"""


def _can_unshare() -> bool:
    try:
        return subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_unshare = pytest.mark.skipif(not _can_unshare(), reason="needs 'unshare -m' (a private mount namespace) to mount over the scratch folder")


@pytest.fixture
def job(s3_endpoint, tmp_path):
    """(pipeline file, sink URI, S3 filesystem) for a small local-images-to-S3 run, in a new bucket."""
    fs = S3Storage(endpoint_url=s3_endpoint, key="testing", secret="testing")
    bucket = f"t-{uuid.uuid4().hex[:12]}"
    fs.mkdir(bucket)
    write_images(tmp_path / "in", 6, size=(160, 120))
    sink = f"s3://{bucket}/out"
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE.format(src=tmp_path / "in", sink=sink, endpoint=s3_endpoint))
    return path, sink, fs


def _in_namespace(mount: str, scratch: pathlib.Path, pipeline: pathlib.Path, timeout: float) -> subprocess.CompletedProcess:
    """Run ``dataflow run`` (with its own local Ray, so its workers see the mount too) under ``mount``."""
    run = shlex.join([sys.executable, "-m", "dataflow", "run", str(pipeline), "--quiet"])
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["DATAFLOW_SCRATCH_DIR"] = str(scratch)
    return subprocess.run(["unshare", "-m", "sh", "-c", f"{mount} && exec {run}"], env=env, capture_output=True, text=True, timeout=timeout)


def _nothing_published(fs: S3Storage, sink: str) -> bool:
    return not fs.exists(f"{sink}/_SUCCESS") and not fs.exists(f"{sink}/_manifest.json")


def test_a_file_where_the_scratch_folder_should_be_fails_before_any_work(job, tmp_path, monkeypatch):
    pipeline, sink, fs = job
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("DATAFLOW_SCRATCH_DIR", str(blocker))
    with pytest.raises(RunError, match=f"DATAFLOW_SCRATCH_DIR '{blocker}': cannot write there .*nothing was written"):
        run_pipeline(Pipeline.from_yaml(str(pipeline)).spec)
    assert not fs.exists(sink)


@needs_unshare
def test_a_read_only_scratch_folder_fails_with_exit_1_naming_it(job, tmp_path):
    pipeline, sink, fs = job
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    mount = f"mount --bind {scratch} {scratch} && mount -o remount,ro,bind {scratch}"
    done = _in_namespace(mount, scratch, pipeline, timeout=120)
    assert done.returncode == 1, done.stderr
    assert f"DATAFLOW_SCRATCH_DIR '{scratch}': cannot write there (Read-only file system)" in done.stderr
    assert not fs.exists(sink)


@needs_unshare
def test_a_scratch_folder_that_fills_up_mid_run_fails_with_exit_1_and_publishes_nothing(job, tmp_path):
    """8 KiB of tmpfs: the start-up probe (4 KiB) fits, the first output file does not."""
    pipeline, sink, fs = job
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    done = _in_namespace(f"mount -t tmpfs -o size=8k tmpfs {scratch}", scratch, pipeline, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "No space left on device" in done.stderr, done.stderr[-3000:]
    assert f"a local disk is full or not writable (scratch folder '{scratch}')" in done.stderr
    assert _nothing_published(fs, sink)
