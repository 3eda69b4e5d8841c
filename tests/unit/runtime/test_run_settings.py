"""RunSettings: resolved once (flag > environment > YAML > default), credentials by reference, never printed."""
from __future__ import annotations

import logging
import pathlib
import tempfile

import pytest
import yaml

from dataflow.dsl.parse import parse_pipeline
from dataflow.dsl.yaml_io import load
from dataflow.errors import DataflowError
from dataflow.runtime.settings import CacheSettings, resolve_settings
from tests.unit.k8s.rendering import THUMBNAILS, job, render

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"

PIPELINE = f"""\
name: settings
source: {{uri: s3://bucket/in/, format: image}}
steps: [{{op: image.decode}}]
sink: {{uri: s3://bucket/out/, format: parquet}}
storage:
  options:
    s3: {{endpoint_url: http://127.0.0.1:9000, secret: {SECRET}, client_kwargs: {{aws_secret_access_key: {SECRET}}}}}
  cache: {{dir: /yaml/cache, max_bytes: 1GB}}
"""


def _spec(text: str = PIPELINE):
    data, lines = load(text)
    return parse_pipeline(data, lines=lines)


def test_cache_follows_flag_then_environment_then_yaml_then_default():
    spec = _spec()
    env = {"DATAFLOW_CACHE_DIR": "/env/cache", "DATAFLOW_CACHE_MAX_BYTES": "2GB"}
    assert resolve_settings(spec, cache_dir="/flag", max_bytes="3GB", environ=env).cache == CacheSettings("/flag", 3 * 10**9)
    assert resolve_settings(spec, environ=env).cache == CacheSettings("/env/cache", 2 * 10**9)
    assert resolve_settings(spec, environ={}).cache == CacheSettings("/yaml/cache", 10**9)
    assert resolve_settings(None, environ={}, default_cache_dir="/default").cache == CacheSettings("/default")
    assert resolve_settings(spec, cache_dir="", environ=env).cache is None  # an empty flag turns it off
    with pytest.raises(DataflowError, match="DATAFLOW_CACHE_MAX_BYTES"):
        resolve_settings(spec, environ={"DATAFLOW_CACHE_MAX_BYTES": "lots"})


def test_storage_options_scratch_and_credential_references():
    spec = _spec()
    env = {"DATAFLOW_SCRATCH_DIR": "/scratch", "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_SHARED_CREDENTIALS_FILE": "/etc/aws/credentials"}
    settings = resolve_settings(spec, options={"s3": {"endpoint_url": "http://flag:9000"}}, environ=env)
    assert settings.options_for("s3://bucket/x")["endpoint_url"] == "http://flag:9000"  # the flag wins, per key
    assert settings.options_for("s3://bucket/x")["secret"] == SECRET  # the filesystem still gets it
    assert settings.scratch == "/scratch"
    assert resolve_settings(spec, environ={}).scratch == tempfile.gettempdir()
    creds = settings.credentials
    assert (creds.variables, creds.config_file) == (("AWS_SECRET_ACCESS_KEY",), "/etc/aws/credentials")
    with pytest.raises(AttributeError):
        settings.scratch = "/elsewhere"  # frozen


def test_no_secret_value_is_printed_logged_repr_or_described(caplog):
    settings = resolve_settings(_spec(), environ={"AWS_SECRET_ACCESS_KEY": SECRET})
    logging.getLogger("dataflow.test").warning("settings: %s %r", settings, settings)
    shown = [repr(settings), str(settings), yaml.safe_dump(settings.describe()), caplog.text]
    assert all(SECRET not in text for text in shown)
    assert "<redacted>" in repr(settings) and "http://127.0.0.1:9000" in repr(settings)
    assert settings.describe()["credentials"]["variables"] == ["AWS_SECRET_ACCESS_KEY"]


def test_k8s_render_resolves_the_same_way_and_writes_no_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)  # this machine's: never read into a manifest
    path = tmp_path / "cached.yaml"
    path.write_text(pathlib.Path(THUMBNAILS).read_text() + "storage:\n  cache: {dir: /mnt/nvme/df}\n")
    config = ("cache: {host_path: /mnt/nvme}\nenv: {DATAFLOW_CACHE_DIR: /from/env}\n"
              "secret_env:\n  AWS_SECRET_ACCESS_KEY: {secret: s3-credentials, key: secret_key}\n")
    rendered = render(str(path), config, tmp_path)
    container = job(rendered)["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert {"name": "dataflow-cache", "mountPath": "/from/env"} in container["volumeMounts"]  # env > YAML, as in dataflow run
    manifest = yaml.safe_dump_all(list(rendered.objects))
    assert SECRET not in manifest and "s3-credentials" in manifest
