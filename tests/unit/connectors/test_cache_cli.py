"""``dataflow cache stats | clear | warm`` through click's CliRunner, on a real cache directory."""
from __future__ import annotations

import os

from click.testing import CliRunner
from fsspec.implementations.local import LocalFileSystem

from connectors.storage.disk_cache import DiskCache
from dataflow.cli.main import cli


def _fill(tmp_path, n=3):
    fs = DiskCache(inner=LocalFileSystem(), dir=str(tmp_path / "cache"), skip_instance_cache=True)
    for i in range(n):
        src = tmp_path / f"src/{i}.bin"
        src.parent.mkdir(exist_ok=True)
        src.write_bytes(b"x" * 1000)
        fs.cat_file(str(src))
    fs.store().flush()
    return fs


def test_stats_and_clear(tmp_path):
    _fill(tmp_path)
    runner = CliRunner()
    out = runner.invoke(cli, ["cache", "stats", "--cache-dir", str(tmp_path / "cache")])
    assert out.exit_code == 0, out.output
    assert "entries          3" in out.output and "3,000 (3.0 KB)" in out.output
    out = runner.invoke(cli, ["cache", "clear"], env={"DATAFLOW_CACHE_DIR": str(tmp_path / "cache")})
    assert out.exit_code == 0 and "deleted 3 entries" in out.output
    leftover = [n for _, _, names in os.walk(tmp_path / "cache/objects") for n in names]
    assert leftover == []


def test_usage_errors_exit_2(tmp_path):
    runner = CliRunner()
    out = runner.invoke(cli, ["cache", "stats"], env={"DATAFLOW_CACHE_DIR": ""})
    assert out.exit_code == 2 and "no cache directory" in out.output
    out = runner.invoke(cli, ["cache", "warm", str(tmp_path), "--cache-dir", str(tmp_path / "c")])
    assert out.exit_code == 2 and "only holds remote data" in out.output
    out = runner.invoke(cli, ["cache", "warm", "s3://b/k", "--cache-dir", str(tmp_path / "c"), "--option", "endpoint=x"])
    assert out.exit_code == 2 and "expected SCHEME.KEY=VALUE" in out.output
    out = runner.invoke(cli, ["cache", "warm", "s3://b/k", "--cache-dir", str(tmp_path / "c"), "--max-bytes", "lots"])
    assert out.exit_code == 2 and "expected a size" in out.output
