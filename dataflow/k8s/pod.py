"""Pod pieces shared by every engine: environment, Secret references, pipeline, cache and scratch volumes."""
from __future__ import annotations

from typing import Any

from dataflow.k8s.config import ClusterConfig

__all__ = [
    "CACHE_VOLUME",
    "PIPELINE_DIR",
    "PIPELINE_FILE",
    "PIPELINE_VOLUME",
    "SCRATCH_VOLUME",
    "container_env",
    "env_from",
    "object_metadata",
    "pipeline_mount",
    "pipeline_volume",
    "storage_mounts",
    "storage_volumes",
]

PIPELINE_DIR = "/etc/dataflow"
PIPELINE_FILE = f"{PIPELINE_DIR}/pipeline.yaml"
PIPELINE_VOLUME = "dataflow-pipeline"
CACHE_VOLUME = "dataflow-cache"
# NOTE: Spark on Kubernetes uses a volume whose name starts with "spark-local-dir-" as its local
# (shuffle and spill) directory, so the scratch volume carries that prefix for every engine.
SCRATCH_VOLUME = "spark-local-dir-scratch"


def container_env(config: ClusterConfig) -> list[dict[str, Any]]:
    """Return the container ``env``: cache and scratch paths, plain values, then Secret key references."""
    env: list[dict[str, Any]] = [
        {"name": "DATAFLOW_CACHE_DIR", "value": config.cache.dir},
        {"name": "TMPDIR", "value": config.scratch.dir},
    ]
    env += [{"name": name, "value": value} for name, value in sorted(config.env.items())]
    env += [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": ref.secret, "key": ref.key}}}
        for name, ref in sorted(config.secret_env.items())
    ]
    return env


def env_from(config: ClusterConfig) -> list[dict[str, Any]]:
    """Return the container ``envFrom``: one entry per Secret mounted whole."""
    return [{"secretRef": {"name": name}} for name in config.env_from_secrets]


def pipeline_volume(config_map: str) -> dict[str, Any]:
    """Return the volume holding the pipeline ConfigMap."""
    return {"name": PIPELINE_VOLUME, "configMap": {"name": config_map}}


def pipeline_mount() -> dict[str, Any]:
    """Return the read-only mount of the pipeline ConfigMap at ``/etc/dataflow``."""
    return {"name": PIPELINE_VOLUME, "mountPath": PIPELINE_DIR, "readOnly": True}


def storage_volumes(config: ClusterConfig) -> list[dict[str, Any]]:
    """Return the cache volume (hostPath on the node, or an emptyDir) and the scratch emptyDir."""
    cache = config.cache
    if cache.host_path:
        cache_volume = {"name": CACHE_VOLUME, "hostPath": {"path": cache.host_path, "type": "DirectoryOrCreate"}}
    else:
        cache_volume = {"name": CACHE_VOLUME, "emptyDir": _empty_dir(cache.size_limit)}
    return [cache_volume, {"name": SCRATCH_VOLUME, "emptyDir": _empty_dir(config.scratch.size_limit)}]


def storage_mounts(config: ClusterConfig) -> list[dict[str, Any]]:
    """Return the mounts of the cache and scratch volumes."""
    return [
        {"name": CACHE_VOLUME, "mountPath": config.cache.dir},
        {"name": SCRATCH_VOLUME, "mountPath": config.scratch.dir},
    ]


def _empty_dir(size_limit) -> dict[str, Any]:
    return {"sizeLimit": size_limit} if size_limit is not None else {}


def object_metadata(name: str, namespace: str, labels: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    """Return an object's metadata; empty annotations are left out."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta
