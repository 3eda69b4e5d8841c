"""The vendored CRD schemas: derived faithfully, converted from OpenAPI v3 correctly, applied strictly."""
from __future__ import annotations

import copy

import jsonschema
import pytest

from dataflow.k8s import crd_extract
from dataflow.k8s.schema import _to_json_schema, schema_errors
from tests.unit.k8s.rendering import ROOT, THUMBNAILS, job, render

UPSTREAM = ROOT.parent / "shared" / "crds"
SHIPPED = ROOT / "dataflow" / "k8s" / "crds"


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="the upstream CRD copies (../shared/crds) are not beside this checkout")
@pytest.mark.parametrize("target", sorted(crd_extract.SOURCES), ids=lambda t: t.split("_")[0])
def test_shipped_schema_equals_regeneration_from_upstream_crd(target):
    source, version = crd_extract.SOURCES[target]
    derived = crd_extract.derive_schema((UPSTREAM / source).read_text(encoding="utf-8"), version)
    assert (SHIPPED / target).read_text(encoding="utf-8") == derived


def test_licence_note_names_every_shipped_schema():
    note = (SHIPPED / "README.md").read_text(encoding="utf-8")
    assert "Apache License, Version 2.0" in (SHIPPED / "LICENSE-Apache-2.0").read_text(encoding="utf-8")
    for target in crd_extract.SOURCES:
        assert f"`{target}`" in note
    assert sorted(p.name for p in SHIPPED.glob("*.json")) == sorted(crd_extract.SOURCES)


def test_openapi_conversion_handles_nullable_defaults_preserve_unknown_and_int_or_string():
    openapi = {
        "type": "object",
        "required": ["replicas", "name"],
        "properties": {
            "name": {"type": "string", "nullable": True},
            "replicas": {"type": "integer", "default": 1},
            "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {"type": "string"}}},
            "cpu": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True, "pattern": "^[0-9]+m?$"},
        },
    }
    schema = _to_json_schema(openapi)
    assert schema["properties"]["name"]["type"] == ["string", "null"]
    assert schema["required"] == ["name"]  # the API server fills in the default of "replicas"
    assert schema["additionalProperties"] is False
    assert "additionalProperties" not in schema["properties"]["template"]
    assert "x-kubernetes-int-or-string" not in schema["properties"]["cpu"]
    validator = jsonschema.Draft7Validator(schema)
    assert not list(validator.iter_errors({"name": None, "cpu": 4, "template": {"anything": [1]}}))
    assert not list(validator.iter_errors({"name": "x", "cpu": "500m"}))
    assert [e.message for e in validator.iter_errors({"name": "x", "cpu": "4 cores"})] == ["'4 cores' does not match '^[0-9]+m?$'"]
    assert "'nmae' was unexpected" in next(validator.iter_errors({"nmae": "x", "name": "x"})).message


def test_rendered_rayjob_passes_and_each_corruption_is_reported_with_its_path():
    rayjob = job(render(THUMBNAILS))
    assert schema_errors(rayjob) == []
    broken = copy.deepcopy(rayjob)
    broken["spec"]["ttlSecondsAfterFinished"] = "300"
    broken["spec"]["shutdownAfterJobFinish"] = True
    broken["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "4 cores"
    del broken["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["groupName"]
    broken["apiVersion"] = "ray.io/v1alpha1"
    errors = "\n".join(schema_errors(broken))
    assert "apiVersion: expected 'ray.io/v1', got 'ray.io/v1alpha1'" in errors
    assert "spec: Additional properties are not allowed ('shutdownAfterJobFinish' was unexpected)" in errors
    assert "spec.ttlSecondsAfterFinished: '300' is not of type 'integer'" in errors
    assert "spec.rayClusterSpec.workerGroupSpecs[0]: 'groupName' is a required property" in errors
    assert "spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[0].resources.limits.cpu: '4 cores'" in errors

