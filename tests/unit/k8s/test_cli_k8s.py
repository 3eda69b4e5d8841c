"""``dataflow k8s render`` through click's CliRunner: defaults, options, output formats, error exit codes."""
from __future__ import annotations

import importlib.metadata
import json
import pathlib

import yaml
from click.testing import CliRunner

from dataflow.cli.main import cli
from dataflow.k8s.config import DEFAULT_IMAGE
from tests.unit.k8s.rendering import GPU_RESIZE, THUMBNAILS


def _render(*args):
    return CliRunner().invoke(cli, ["k8s", "render", *args])


def test_render_alone_prints_valid_yaml_objects():
    result = _render(THUMBNAILS)
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    assert [(d["kind"], d["metadata"]["name"], d["metadata"]["namespace"]) for d in docs] == [
        ("ConfigMap", "thumbnails-pipeline", "default"), ("RayJob", "thumbnails", "default"),
    ]
    head = docs[1]["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["image"] == DEFAULT_IMAGE == f"dataflow:{importlib.metadata.version('dataflow')}"


def test_render_options_reach_the_objects_and_json_is_a_list():
    result = _render(GPU_RESIZE, "-o", "json", "--namespace", "data", "--image", "reg.example/dataflow:2", "--queue", "ai-data",
                     "--priority-class", "batch-low", "--profile", "borrow")
    assert result.exit_code == 0, result.output
    listing = json.loads(result.output)
    assert (listing["apiVersion"], listing["kind"]) == ("v1", "List")
    _, rayjob = listing["items"]
    assert rayjob["metadata"]["namespace"] == "data"
    assert rayjob["metadata"]["labels"]["volcano.sh/queue-name"] == "ai-data"
    assert rayjob["metadata"]["labels"]["ray.io/priority-class-name"] == "batch-low"  # an explicit class wins over the profile's
    workers = rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert {w["template"]["spec"]["containers"][0]["image"] for w in workers} == {"reg.example/dataflow:2"}
    assert {w["template"]["metadata"]["annotations"]["volcano.sh/preemptable"] for w in workers} == {"true"}


def test_render_errors_exit_2_with_the_message(tmp_path):
    path = tmp_path / "long.yaml"
    path.write_text(pathlib.Path(THUMBNAILS).read_text().replace("name: thumbnails", "name: " + "x" * 48))
    result = _render(str(path))
    assert result.exit_code == 2
    assert f"error: RayJob/{'x' * 48}: metadata.name:" in result.output
    bad_config = tmp_path / "k8s.yaml"
    bad_config.write_text("volcano: {queue: q, profle: borrow}\n")
    result = _render(THUMBNAILS, "--cluster-config", str(bad_config))
    assert result.exit_code == 2
    assert "k8s.yaml:1:21: volcano.profle: unknown key of volcano" in result.output and "did you mean 'profile'?" in result.output


IMAGE_ON_SPARK = """\
name: decode_on_spark
engine: spark
source: {uri: "s3://raw/images/", format: image}
steps:
  - op: image.decode
sink: {uri: "s3://out/images/", format: parquet}
"""


def test_render_refuses_exactly_what_validate_refuses(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(IMAGE_ON_SPARK)
    validated = CliRunner().invoke(cli, ["validate", str(path)])
    rendered = _render(str(path))
    assert (validated.exit_code, rendered.exit_code) == (2, 2)
    assert rendered.output == validated.output
    assert f"{path}:5:5: steps[0]: engine 'spark' cannot run image.decode" in rendered.output


EMBED = """\
name: embed_captions
source: {uri: "s3://raw/captions/", format: jsonl}
steps:
  - op: text.embed
sink: {uri: "s3://out/embeddings/", format: parquet}
"""


def test_render_needs_no_op_extra_here_and_names_the_extras_the_image_needs(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sentence_transformers" else real(name, *a))
    path = tmp_path / "p.yaml"
    path.write_text(EMBED)
    validated = CliRunner().invoke(cli, ["validate", str(path)])
    assert validated.exit_code == 2 and "op 'text.embed' needs sentence_transformers, which is not installed" in validated.output
    rendered = _render(str(path))
    assert rendered.exit_code == 0, rendered.output
    assert rendered.stderr == "dataflow: the image needs dataflow[embed] for this pipeline's ops\n"
    assert "RayJob" in rendered.stdout
