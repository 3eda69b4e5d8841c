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
