"""Validate rendered objects against the vendored CRD schemas, strictly (unknown keys rejected).

A CRD's ``openAPIV3Schema`` is OpenAPI v3, not JSON Schema. It is converted once per kind:
``nullable: true`` becomes ``type: [X, "null"]``; a required field that has a ``default`` is
dropped from ``required`` (the API server fills defaults in before it validates); every object
with ``properties`` gets ``additionalProperties: false`` unless it is marked
``x-kubernetes-preserve-unknown-fields`` (a schemaless subtree, e.g. Spark pod templates). An
``x-kubernetes-int-or-string`` node always comes with ``anyOf: [integer, string]``, which
jsonschema applies as it is; a quantity ``pattern`` then only constrains the string form.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["KINDS", "CrdKind", "kind_of", "schema_errors"]


@dataclass(frozen=True)
class CrdKind:
    """A custom resource kind dataflow renders, and where its schema lives."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool
    schema_file: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


KINDS: dict[str, CrdKind] = {
    "RayJob": CrdKind("RayJob", "ray.io", "v1", "rayjobs", True, "ray.io_rayjobs.v1.json"),
    "SparkApplication": CrdKind(
        "SparkApplication", "sparkoperator.k8s.io", "v1beta2", "sparkapplications", True,
        "sparkoperator.k8s.io_sparkapplications.v1beta2.json",
    ),
    "Queue": CrdKind("Queue", "scheduling.volcano.sh", "v1beta1", "queues", False, "scheduling.volcano.sh_queues.v1beta1.json"),
}


def kind_of(obj: dict[str, Any]) -> CrdKind | None:
    """Return the CRD kind of a rendered object, or None for a core object (ConfigMap)."""
    return KINDS.get(obj.get("kind", ""))


def _to_json_schema(node: Any) -> Any:
    """Return a strict JSON-Schema copy of one OpenAPI v3 schema node."""
    if isinstance(node, list):
        return [_to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: v for k, v in node.items() if not k.startswith("x-kubernetes-") and k != "nullable"}
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    props = node.get("properties")
    if isinstance(props, dict):
        out["properties"] = {k: _to_json_schema(v) for k, v in props.items()}
        if isinstance(node.get("required"), list):
            out["required"] = [r for r in node["required"] if "default" not in props.get(r, {})]
        if "additionalProperties" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    for key in ("items", "additionalProperties", "anyOf", "allOf", "oneOf", "not"):
        if isinstance(node.get(key), (dict, list)):
            out[key] = _to_json_schema(node[key])
    return out


@functools.lru_cache(maxsize=None)
def _validator(kind: str):
    try:
        import jsonschema
    except ImportError as exc:
        from dataflow.errors import ConnectorError

        raise ConnectorError(
            "dataflow k8s: validating manifests needs jsonschema; install it with pip install 'dataflow[k8s]'"
        ) from exc
    text = resources.files("dataflow.k8s").joinpath("crds", KINDS[kind].schema_file).read_text(encoding="utf-8")
    return jsonschema.Draft7Validator(_to_json_schema(json.loads(text)))


def _path(parts) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """Return every schema violation of a custom object as ``path: message`` (empty when valid).

    ``apiVersion`` and ``kind`` are only typed as strings in the schema, so they are checked here.
    """
    crd = kind_of(obj)
    if crd is None:
        return [f"kind: {obj.get('kind')!r} is not one of {', '.join(KINDS)}"]
    problems = []
    if obj.get("apiVersion") != crd.api_version:
        problems.append(f"apiVersion: expected {crd.api_version!r}, got {obj.get('apiVersion')!r}")
    errors = sorted(_validator(crd.kind).iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
    problems += [f"{_path(e.absolute_path)}: {e.message}" for e in errors]
    return problems
