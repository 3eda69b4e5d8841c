"""Credentials reach pods only by Secret reference; a credential that would be inlined is a clear error."""
from __future__ import annotations

import pathlib

import pytest

from dataflow.errors import PipelineSpecError
from dataflow.k8s.credentials import looks_secret
from dataflow.k8s.render import ManifestError
from tests.unit.k8s.rendering import TABLE_ONLY, THUMBNAILS, job, render

PLANTED = "planted-Zx81-secret-value"
STORAGE = """\
storage:
  options:
    s3: {endpoint_url: 'http://minio.data:9000', key: '${AWS_ACCESS_KEY_ID}', secret: '${AWS_SECRET_ACCESS_KEY}'}
"""
S3_PIPELINE = pathlib.Path(THUMBNAILS).read_text() + STORAGE
SECRETS = """\
secret_env:
  AWS_ACCESS_KEY_ID: {secret: s3-credentials, key: access_key}
  AWS_SECRET_ACCESS_KEY: {secret: s3-credentials, key: secret_key}
env_from_secrets: [hf-token]
"""


def _pipeline(tmp_path, text: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("pipeline", ["ray", "spark"])
def test_planted_secret_in_env_never_reaches_the_output(tmp_path, monkeypatch, pipeline):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", PLANTED)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", PLANTED)
    source = pathlib.Path(THUMBNAILS if pipeline == "ray" else TABLE_ONLY).read_text() + STORAGE
    rendered = render(_pipeline(tmp_path, source), SECRETS, tmp_path)
    for text in (rendered.to_yaml(), rendered.to_json()):
        assert PLANTED not in text
    assert "${AWS_SECRET_ACCESS_KEY}" in rendered.objects[0]["data"]["pipeline.yaml"]  # resolved in the pod
    obj = job(rendered)
    if pipeline == "ray":
        containers = [t["spec"]["containers"][0] for t in (
            obj["spec"]["rayClusterSpec"]["headGroupSpec"]["template"], *(g["template"] for g in obj["spec"]["rayClusterSpec"]["workerGroupSpecs"])
        )]
    else:
        containers = [obj["spec"]["driver"], obj["spec"]["executor"]]
    for container in containers:
        assert {"name": "AWS_SECRET_ACCESS_KEY", "valueFrom": {"secretKeyRef": {"name": "s3-credentials", "key": "secret_key"}}} in container["env"]
        assert container["envFrom"] == [{"secretRef": {"name": "hf-token"}}]


def test_literal_secret_in_storage_options_is_refused_without_echoing_it(tmp_path):
    text = S3_PIPELINE.replace("'${AWS_SECRET_ACCESS_KEY}'", PLANTED)
    with pytest.raises(PipelineSpecError) as info:
        render(_pipeline(tmp_path, text), SECRETS, tmp_path)
    (issue,) = info.value.issues
    s3_line = len(pathlib.Path(THUMBNAILS).read_text().splitlines()) + 3
    assert (issue.key, issue.line) == ("storage.options.s3.secret", s3_line)
    assert "a credential is written in the pipeline, which travels in a ConfigMap" in issue.message
    assert PLANTED not in str(info.value)


def test_credential_variable_without_a_secret_is_refused(tmp_path):
    with pytest.raises(PipelineSpecError) as info:
        render(_pipeline(tmp_path, S3_PIPELINE))
    assert [i.key for i in info.value.issues] == ["storage.options.s3.key", "storage.options.s3.secret"]
    assert "${AWS_SECRET_ACCESS_KEY} is a credential but no Secret provides it" in str(info.value)


def test_password_in_a_uri_is_refused(tmp_path):
    text = pathlib.Path(THUMBNAILS).read_text().replace("${DATAFLOW_DATA:-./data/images}", f"'https://reader:{PLANTED}@files.example/images'")
    with pytest.raises(PipelineSpecError, match="a URI carries a user and password") as info:
        render(_pipeline(tmp_path, text))
    assert PLANTED not in str(info.value)


def test_plain_env_credential_and_sparkconf_credential_are_refused(tmp_path):
    with pytest.raises(PipelineSpecError, match=r"env.DB_PASSWORD: a credential as a plain value") as info:
        render(THUMBNAILS, f"env: {{DB_PASSWORD: {PLANTED}}}\n", tmp_path)
    assert PLANTED not in str(info.value)
    with pytest.raises(ManifestError, match=r"spec.sparkConf.spark.hadoop.fs.s3a.secret.key: a credential in sparkConf") as info:
        render(TABLE_ONLY, f"spark: {{spark_conf: {{spark.hadoop.fs.s3a.secret.key: {PLANTED}}}}}\n", tmp_path)
    assert PLANTED not in str(info.value)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("secret", True), ("key", True), ("AWS_SECRET_ACCESS_KEY", True), ("aws_access_key_id", True), ("api_key", True),
        ("password", True), ("HF_TOKEN", True), ("client_secret", True), ("endpoint_url", False), ("key_column", False),
        ("tokenizer", False), ("max_tokens", False), ("columns", False), ("DATAFLOW_CACHE_DIR", False),
    ],
)
def test_looks_secret(name, secret):
    assert looks_secret(name) is secret
