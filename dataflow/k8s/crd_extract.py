"""Regenerate the shipped CRD schemas (``dataflow/k8s/crds/*.json``) from the upstream CRD YAML.

The JSON files are *derived* from the operators' CustomResourceDefinitions: the
``openAPIV3Schema`` of one served version, with every ``description`` removed and written as
minified, key-sorted JSON. Nothing else changes, so the result is reproducible byte for byte::

    python -m dataflow.k8s.crd_extract ../shared/crds
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

__all__ = ["SOURCES", "derive_schema", "main"]

# shipped file -> (upstream CRD file, version)
SOURCES: dict[str, tuple[str, str]] = {
    "ray.io_rayjobs.v1.json": ("ray.io_rayjobs.yaml", "v1"),
    "sparkoperator.k8s.io_sparkapplications.v1beta2.json": ("sparkoperator.k8s.io_sparkapplications.yaml", "v1beta2"),
    "scheduling.volcano.sh_queues.v1beta1.json": ("scheduling.volcano.sh_queues.yaml", "v1beta1"),
}


def _strip_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        # NOTE: "description" is also a property *name* in some schemas; only drop it where it is text.
        return {k: _strip_descriptions(v) for k, v in node.items() if not (k == "description" and isinstance(v, str))}
    if isinstance(node, list):
        return [_strip_descriptions(v) for v in node]
    return node


def derive_schema(crd_yaml: str, version: str) -> str:
    """Return the minified JSON of one version's ``openAPIV3Schema``, descriptions removed.

    Args:
        crd_yaml: Text of a CustomResourceDefinition (apiextensions.k8s.io/v1).
        version: The ``spec.versions[].name`` to take.

    Raises:
        KeyError: the CRD has no such version.
    """
    crd = yaml.load(crd_yaml, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            schema = _strip_descriptions(entry["schema"]["openAPIV3Schema"])
            return json.dumps(schema, sort_keys=True, separators=(",", ":")) + "\n"
    raise KeyError(f"{crd['metadata']['name']}: no version '{version}'")


def main(argv: list[str] | None = None) -> None:
    """Write every file of ``SOURCES`` from the CRD YAML files in the given folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source_dir", type=Path, help="Folder holding the upstream CRD YAML files.")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "crds", help="Where to write the JSON.")
    args = parser.parse_args(argv)
    for target, (source, version) in SOURCES.items():
        text = derive_schema((args.source_dir / source).read_text(encoding="utf-8"), version)
        (args.out / target).write_text(text, encoding="utf-8")
        print(f"{args.out / target}: {len(text)} bytes from {source} ({version})")


if __name__ == "__main__":
    main()
