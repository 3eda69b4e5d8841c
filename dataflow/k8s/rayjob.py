"""Build a KubeRay ``RayJob`` (ray.io/v1) for a Ray stage.

The cluster has a head group (it runs the driver, so it holds no work: ``num-cpus: "0"``), a CPU
worker group and, when a step asks for GPUs, a GPU worker group with ``nvidia.com/gpu`` limits.
Pod sizes come from the cluster config and grow to fit the largest step; the replica bounds
come from the steps' declared ``concurrency`` (an actor pool of N needs N workers' worth of
resources), else from the config.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import yaml

from dataflow.errors import PipelineSpecError, SpecIssue
from dataflow.k8s import pod
from dataflow.k8s.pod import object_metadata as _metadata
from dataflow.k8s.config import ClusterConfig, RayGroupConfig
from dataflow.k8s.quantity import format_memory, parse_quantity
from dataflow.k8s.stages import ComputeNeed, Stage
from dataflow.k8s.volcano import VolcanoSettings, pod_annotations

__all__ = ["WorkerGroup", "ray_job", "worker_groups"]


@dataclass(frozen=True)
class WorkerGroup:
    """One Ray worker group: the pod shape and its replica bounds."""

    name: str
    cpu: int | float | str
    memory: int | float | str
    gpus: int
    min_replicas: int
    max_replicas: int
    config: RayGroupConfig


def _grow_cpu(configured, needed: float):
    return configured if parse_quantity(configured) >= needed else math.ceil(needed)


def _grow_memory(configured, needed: float):
    return configured if parse_quantity(configured) >= needed else format_memory(needed)


def _bounds(group: RayGroupConfig, declared: int, autoscaling: bool, *, exact: bool) -> tuple[int, int]:
    """Return (min, max) replicas: ``exact`` groups take the declared count, others at least the config's."""
    top = declared if exact and declared else max(group.max_replicas, declared)
    low = min(group.min_replicas, top)
    return (low, top) if autoscaling else (top, top)


def _cpu_group(needs: list[ComputeNeed], config: ClusterConfig) -> WorkerGroup:
    group = config.ray.cpu_workers
    cpu = _grow_cpu(group.cpu, max((n.num_cpus for n in needs), default=0))
    pod_cpus = parse_quantity(cpu)
    memory = _grow_memory(
        group.memory,
        max((n.memory * max(1, math.floor(pod_cpus / n.num_cpus)) if n.num_cpus else n.memory
             for n in needs if n.memory), default=0),
    )
    declared = math.ceil(sum(n.total(n.num_cpus) for n in needs) / pod_cpus)
    low, top = _bounds(group, declared, config.ray.autoscaling, exact=False)
    return WorkerGroup("cpu", cpu, memory, 0, low, top, group)


def _gpu_group(needs: list[ComputeNeed], config: ClusterConfig) -> WorkerGroup:
    group = config.ray.gpu_workers
    gpus = max(group.gpus, 1, math.ceil(max(n.num_gpus for n in needs)))
    slots = [max(1, math.floor(gpus / n.num_gpus)) for n in needs]  # tasks of each step one pod holds
    cpu = _grow_cpu(group.cpu, max(n.num_cpus * k for n, k in zip(needs, slots)))
    memory = _grow_memory(group.memory, max((n.memory * k for n, k in zip(needs, slots) if n.memory), default=0))
    declared = math.ceil(sum(n.total(n.num_gpus) for n in needs) / gpus)
    low, top = _bounds(group, declared, config.ray.autoscaling, exact=True)
    return WorkerGroup("gpu", cpu, memory, gpus, low, top, group)


def worker_groups(stage: Stage, config: ClusterConfig) -> list[WorkerGroup]:
    """Return the worker groups a Ray stage needs: always a CPU group (reads, writes), a GPU group on demand."""
    needs = stage.needs
    groups = [_cpu_group([n for n in needs if not n.uses_gpu], config)]
    gpu_needs = [n for n in needs if n.uses_gpu]
    if gpu_needs:
        groups.append(_gpu_group(gpu_needs, config))
    return groups


def _resources(cpu, memory, gpus: int, gpu_resource: str) -> dict[str, Any]:
    amounts: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if gpus:
        amounts[gpu_resource] = gpus
    return {"requests": dict(amounts), "limits": dict(amounts)}


def _pod_template(
    container: str, image: str, resources: dict[str, Any], group: RayGroupConfig, config: ClusterConfig,
    volcano: VolcanoSettings | None, labels: dict[str, str], config_map: str | None,
) -> dict[str, Any]:
    mounts = pod.storage_mounts(config)
    volumes = pod.storage_volumes(config)
    if config_map is not None:
        mounts.insert(0, pod.pipeline_mount())
        volumes.insert(0, pod.pipeline_volume(config_map))
    main: dict[str, Any] = {
        "name": container,
        "image": image,
        "imagePullPolicy": config.image_pull_policy,
        "resources": resources,
        "env": pod.container_env(config),
        "volumeMounts": mounts,
    }
    if config.env_from_secrets:
        main["envFrom"] = pod.env_from(config)
    spec: dict[str, Any] = {"containers": [main], "volumes": volumes}
    if config.service_account:
        spec["serviceAccountName"] = config.service_account
    if volcano is not None and volcano.priority_class:
        spec["priorityClassName"] = volcano.priority_class
    if group.node_selector:
        spec["nodeSelector"] = dict(group.node_selector)
    if group.tolerations:
        spec["tolerations"] = [dict(t) for t in group.tolerations]
    metadata: dict[str, Any] = {"labels": dict(labels)}
    if annotations := pod_annotations(volcano):
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": spec}


def _cluster_spec(stage: Stage, config: ClusterConfig, volcano, labels, config_map: str) -> dict[str, Any]:
    ray = config.ray
    image = ray.image or config.image
    head = ray.head
    spec: dict[str, Any] = {
        "rayVersion": ray.version,
        "enableInTreeAutoscaling": ray.autoscaling,
        "headGroupSpec": {
            "rayStartParams": {"num-cpus": "0"},
            "template": _pod_template(
                "ray-head", image, _resources(head.cpu, head.memory, 0, config.gpu_resource), head, config,
                volcano, labels, config_map,
            ),
        },
        "workerGroupSpecs": [],
    }
    for group in worker_groups(stage, config):
        spec["workerGroupSpecs"].append(
            {
                "groupName": group.name,
                "replicas": group.min_replicas,
                "minReplicas": group.min_replicas,
                "maxReplicas": group.max_replicas,
                "rayStartParams": {},
                "template": _pod_template(
                    "ray-worker", image, _resources(group.cpu, group.memory, group.gpus, config.gpu_resource),
                    group.config, config, volcano, labels, None,
                ),
            }
        )
    return spec


def ray_job(
    stage: Stage, config: ClusterConfig, *, name: str, config_map: str, labels: dict[str, str],
    pod_labels: dict[str, str], annotations: dict[str, str], volcano: VolcanoSettings | None, command: list[str],
) -> dict[str, Any]:
    """Return the RayJob running one stage.

    Args:
        stage: The Ray stage of the plan.
        config: The cluster config.
        name: Object name (checked elsewhere: DNS-1035, at most 47 characters).
        config_map: Name of the ConfigMap holding the pipeline.
        labels: Labels of the RayJob (Volcano's included).
        pod_labels: Labels of its pods.
        annotations: Annotations of the RayJob (KubeRay copies them onto the PodGroup).
        volcano: Volcano settings, or None.
        command: The ``dataflow run`` command line; its pipeline path is relative to ``/etc/dataflow``
            when the job reuses a running cluster (the file then travels as the job's working_dir).

    Raises:
        PipelineSpecError: Secrets are configured for a job that reuses a running cluster.
    """
    ray = config.ray
    spec: dict[str, Any] = {"submissionMode": ray.submission_mode, "backoffLimit": ray.backoff_limit}
    if ray.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = ray.active_deadline_seconds
    if ray.cluster_selector is None:
        spec["entrypoint"] = " ".join(command)
        spec["shutdownAfterJobFinishes"] = ray.shutdown_after_job_finishes
        spec["ttlSecondsAfterFinished"] = ray.ttl_seconds_after_finished
        spec["rayClusterSpec"] = _cluster_spec(stage, config, volcano, pod_labels, config_map)
    else:
        if config.secret_env or config.env_from_secrets:
            raise PipelineSpecError(
                [
                    SpecIssue(
                        key="ray.cluster_selector",
                        message="a running RayCluster keeps its own pod environment, so secret_env / env_from_secrets "
                        "cannot reach its driver; mount the Secrets in that RayCluster's pods and drop them here",
                    )
                ]
            )
        # NOTE: the running cluster cannot mount our ConfigMap, so the submitter pod mounts it and
        # `ray job submit` uploads /etc/dataflow as the job's working_dir.
        spec["entrypoint"] = " ".join(c.replace(pod.PIPELINE_DIR + "/", "") for c in command)
        spec["clusterSelector"] = {"ray.io/cluster": ray.cluster_selector}
        runtime_env: dict[str, Any] = {"working_dir": pod.PIPELINE_DIR}
        if config.env:
            runtime_env["env_vars"] = dict(sorted(config.env.items()))
        spec["runtimeEnvYAML"] = yaml.safe_dump(runtime_env, sort_keys=False)
        spec["submitterPodTemplate"] = {
            "metadata": {"labels": dict(pod_labels)},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "ray-job-submitter",
                        "image": ray.image or config.image,
                        "imagePullPolicy": config.image_pull_policy,
                        "volumeMounts": [pod.pipeline_mount()],
                    }
                ],
                "volumes": [pod.pipeline_volume(config_map)],
            },
        }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": _metadata(name, config.namespace, labels, annotations),
        "spec": spec,
    }
