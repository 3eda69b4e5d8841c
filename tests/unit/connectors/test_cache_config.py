"""How a run finds its cache tier: --cache-dir, then DATAFLOW_CACHE_DIR, then storage.cache (flag > env > YAML)."""
from __future__ import annotations

import logging

import pytest

from dataflow.dsl.parse import parse_pipeline
from dataflow.engines.base import RunOptions
from dataflow.errors import DataflowError, PipelineSpecError
from dataflow.runner import pipeline_hash
from dataflow.runtime.settings import CacheSettings, usable_settings


def cache_config(spec, options):
    """The cache tier of the run's settings, resolved once by the runner."""
    return usable_settings(spec, cache_dir=options.cache_dir).cache


BASE = {"name": "p", "source": {"uri": "s3://b/in/", "format": "image"}, "sink": {"uri": "/tmp/out"}}


def _spec(**storage):
    return parse_pipeline({**BASE, "storage": storage} if storage else BASE)


def test_flag_beats_environment_beats_yaml(tmp_path, monkeypatch):
    yaml_spec = _spec(cache={"dir": str(tmp_path / "yaml"), "max_bytes": "2GB"})
    monkeypatch.delenv("DATAFLOW_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATAFLOW_CACHE_MAX_BYTES", raising=False)
    assert cache_config(_spec(), RunOptions()) is None
    assert cache_config(yaml_spec, RunOptions()) == CacheSettings(str(tmp_path / "yaml"), 2 * 10**9)
    monkeypatch.setenv("DATAFLOW_CACHE_DIR", str(tmp_path / "env"))
    assert cache_config(_spec(), RunOptions()) == CacheSettings(str(tmp_path / "env"), None)
    assert cache_config(yaml_spec, RunOptions()) == CacheSettings(str(tmp_path / "env"), 2 * 10**9)
    assert cache_config(yaml_spec, RunOptions(cache_dir=str(tmp_path / "cli"))).dir == str(tmp_path / "cli")
    assert cache_config(yaml_spec, RunOptions(cache_dir="")) is None
    monkeypatch.setenv("DATAFLOW_CACHE_MAX_BYTES", "512MiB")
    assert cache_config(_spec(), RunOptions()).max_bytes == 512 * 2**20
    monkeypatch.setenv("DATAFLOW_CACHE_MAX_BYTES", "plenty")
    with pytest.raises(DataflowError, match="DATAFLOW_CACHE_MAX_BYTES: expected a size"):
        cache_config(_spec(), RunOptions())


def test_unusable_dir_turns_the_cache_off_with_one_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("DATAFLOW_CACHE_DIR", raising=False)
    (tmp_path / "file").write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="dataflow.cache"):
        assert cache_config(_spec(), RunOptions(cache_dir=str(tmp_path / "file/cache"))) is None
    assert len(caplog.records) == 1 and "reading directly from remote storage" in caplog.text


def test_bad_sizes_and_keys_are_spec_errors_with_their_place():
    with pytest.raises(PipelineSpecError, match=r"storage.cache.max_bytes.*expected a size"):
        _spec(cache={"dir": "/x", "max_bytes": "lots"})
    with pytest.raises(PipelineSpecError, match=r"storage.cache.maxbytes"):
        _spec(cache={"dir": "/x", "maxbytes": 10})


def test_where_inputs_are_cached_does_not_change_the_pipeline_hash():
    assert pipeline_hash(_spec()) == pipeline_hash(_spec(cache={"dir": "/mnt/nvme/dataflow"}))
