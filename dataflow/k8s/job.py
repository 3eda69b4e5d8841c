"""Plain ``batch/v1`` Jobs for a map-only pipeline (``--target job``): an Indexed Job of shards, then a commit Job.

The shard Job has ``completions`` = N and ``completionMode: Indexed``; the Job controller gives
each pod its index in ``JOB_COMPLETION_INDEX`` (it adds that variable to every container), and the
pod runs ``dataflow run /etc/dataflow/pipeline.yaml --shard $(JOB_COMPLETION_INDEX)/N``: the
index-th of N deterministic input shards, staged under the sink with a completion marker. The
engine runs inside the pod (a local Ray or Spark), so no operator is needed.

Publishing is a second Job, ``<name>-commit``, running ``dataflow commit SINK --shards N``. It is
rendered with ``suspend: true`` and is resumed once the shard Job is ``Complete``
(``dataflow k8s submit --wait`` does that; by hand: ``kubectl patch job <name>-commit --type=merge
-p '{"spec":{"suspend":false}}'``). Why a follow-up Job and not "the last pod commits": an
Indexed Job's pods finish in any order, so no pod knows it is the last; two pods finishing
together would both see N markers and commit at once. The shard Job's ``Complete`` condition
is set only when every index has succeeded, so a commit Job started after it runs exactly once,
with every marker in place. Rendering it suspended lets ``kubectl apply -f`` take both objects
at once: a suspended Job creates no pods.
"""
from __future__ import annotations

import math
from typing import Any

from dataflow.errors import PlanError
from dataflow.k8s import pod
from dataflow.k8s.config import ClusterConfig
from dataflow.k8s.pod import object_metadata
from dataflow.k8s.quantity import format_memory, parse_quantity
from dataflow.k8s.stages import ComputeNeed, Stage
from dataflow.k8s.volcano import QUEUE_LABEL, VolcanoSettings, pod_annotations
from dataflow.plan.nodes import LogicalPlan, Shuffle

__all__ = [
    "AFTER_ANNOTATION",
    "COMMIT_SUFFIX",
    "CONTAINER",
    "MIN_KUBERNETES",
    "VOLCANO_POD_QUEUE",
    "check_map_only",
    "commit_job",
    "shard_job",
    "shard_pod_size",
]

# backoffLimitPerIndex is beta (on by default) from Kubernetes 1.29 and GA from 1.33.
MIN_KUBERNETES = "1.29"
CONTAINER = "dataflow"
COMMIT_SUFFIX = "-commit"
AFTER_ANNOTATION = "dataflow.io/after"
# NOTE: Volcano's podgroup controller reads the queue of a plain pod from this annotation (not the label).
VOLCANO_POD_QUEUE = "scheduling.volcano.sh/queue-name"
SHM_VOLUME = "dshm"
# dataflow exits 2 for a bad pipeline, plan or connector and for an existing sink: every retry would fail alike.
_EXIT_USAGE = 2
# A commit is short; a retry covers a transient storage error, while missing markers fail fast each time.
_COMMIT_RETRIES = 2


def check_map_only(plan: LogicalPlan) -> None:
    """Refuse a plan with a global step: shards of an Indexed Job never see each other's rows.

    Raises:
        PlanError: naming every global step, and what to do instead.
    """
    nodes = (*plan.nodes, *(n for side in plan.inputs for n in side.nodes))
    found = [n for n in nodes if isinstance(n, Shuffle)]
    if found:
        names = ", ".join(f"{n.path} ({n.op.name})" for n in found)
        what = "a global step needs" if len(found) == 1 else "global steps need"
        raise PlanError(
            f"{names}: {what} every row at once, so the pipeline cannot run as independent shards "
            "(--target job takes map-only pipelines); render it for its engine (--target auto: a RayJob or "
            "SparkApplication), or run the global step in a pipeline of its own"
        )


def _stage_need(needs: tuple[ComputeNeed, ...], amount, floor: float = 0.0) -> float:
    """What one pod needs of a resource to run a stage: every actor pool at its size, plus the largest task."""
    pools = sum(amount(n) * n.concurrency for n in needs if n.concurrency)
    return pools + max([floor, *(amount(n) for n in needs if not n.concurrency)])


def shard_pod_size(stages: tuple[Stage, ...], config: ClusterConfig) -> tuple[Any, Any, int]:
    """Return (cpu, memory, gpus) of a shard pod: the config's, grown to the most demanding stage.

    A pod runs its stages one after another, each with all its steps streaming at once. At least
    one CPU is left beside the actor pools for the read and write tasks (a pool that takes every
    CPU starves them).
    """
    job = config.job
    cpu = max(_stage_need(s.needs, lambda n: n.num_cpus, floor=1.0) for s in stages)
    memory = max(_stage_need(s.needs, lambda n: float(n.memory or 0)) for s in stages)
    gpus = max(_stage_need(s.needs, lambda n: n.num_gpus) for s in stages)
    return (
        job.cpu if parse_quantity(job.cpu) >= cpu else math.ceil(cpu),
        job.memory if parse_quantity(job.memory) >= memory else format_memory(memory),
        max(job.gpus, math.ceil(gpus)),
    )


def _resources(cpu, memory, gpus: int, gpu_resource: str) -> dict[str, Any]:
    amounts: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if gpus:
        amounts[gpu_resource] = gpus
    return {"requests": dict(amounts), "limits": dict(amounts)}


def _template(
    config: ClusterConfig, volcano: VolcanoSettings | None, labels: dict[str, str], command: list[str],
    resources: dict[str, Any], *, config_map: str | None = None, shared_memory: bool = False,
) -> dict[str, Any]:
    mounts, volumes = pod.storage_mounts(config), pod.storage_volumes(config)
    if config_map is not None:
        mounts.insert(0, pod.pipeline_mount())
        volumes.insert(0, pod.pipeline_volume(config_map))
    if shared_memory:
        # NOTE: a local Ray keeps its object store in /dev/shm, which is 64 MiB in a pod unless mounted
        # (KubeRay adds this volume to its own pods; a plain Job has to).
        mounts.append({"name": SHM_VOLUME, "mountPath": "/dev/shm"})
        volumes.append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}})
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": config.image,
        "imagePullPolicy": config.image_pull_policy,
        "command": command,
        "env": pod.container_env(config),
        "resources": resources,
        "volumeMounts": mounts,
    }
    if config.env_from_secrets:
        container["envFrom"] = pod.env_from(config)
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container], "volumes": volumes}
    if config.service_account:
        spec["serviceAccountName"] = config.service_account
    annotations: dict[str, str] = {}
    if volcano is not None:
        spec["schedulerName"] = "volcano"
        if volcano.priority_class:
            spec["priorityClassName"] = volcano.priority_class
        annotations = {VOLCANO_POD_QUEUE: volcano.queue, **pod_annotations(volcano)}
    if config.job.node_selector:
        spec["nodeSelector"] = dict(config.job.node_selector)
    if config.job.tolerations:
        spec["tolerations"] = [dict(t) for t in config.job.tolerations]
    metadata: dict[str, Any] = {"labels": dict(labels)}
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": spec}


def _labels(labels: dict[str, str], volcano: VolcanoSettings | None) -> dict[str, str]:
    return {**labels, QUEUE_LABEL: volcano.queue} if volcano is not None else dict(labels)


def shard_job(
    stages: tuple[Stage, ...], config: ClusterConfig, *, name: str, config_map: str, labels: dict[str, str],
    annotations: dict[str, str], volcano: VolcanoSettings | None,
) -> dict[str, Any]:
    """Return the Indexed Job whose pod ``i`` runs shard ``i`` of ``config.job.shards``.

    A failed shard is retried on its own (``backoffLimitPerIndex``) while the others go on; a pod
    that exits 2 (a bad pipeline or sink, the same for every shard) fails the whole Job at once;
    a pod evicted or preempted with a ``DisruptionTarget`` condition is not counted as a failure.

    Args:
        stages: The plan's stages (all run inside each pod).
        config: The cluster config.
        name: Object name (checked elsewhere: ``<name>-<index>`` is each pod's hostname).
        config_map: Name of the ConfigMap holding the pipeline.
        labels: Labels of the Job and its pods.
        annotations: Annotations of the Job.
        volcano: Volcano settings, or None.
    """
    job = config.job
    shards = job.shards
    cpu, memory, gpus = shard_pod_size(stages, config)
    command = ["dataflow", "run", pod.PIPELINE_FILE, "--shard", f"$(JOB_COMPLETION_INDEX)/{shards}"]
    spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": shards,
        "parallelism": min(job.parallelism, shards),
        "backoffLimitPerIndex": job.backoff_limit_per_index,
        "podFailurePolicy": {
            "rules": [
                {"action": "FailJob", "onExitCodes": {"containerName": CONTAINER, "operator": "In", "values": [_EXIT_USAGE]}},
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            ]
        },
        "ttlSecondsAfterFinished": job.ttl_seconds_after_finished,
        "template": _template(
            config, volcano, _labels(labels, volcano), command, _resources(cpu, memory, gpus, config.gpu_resource),
            config_map=config_map, shared_memory=any(s.engine == "ray" for s in stages),
        ),
    }
    if job.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = job.active_deadline_seconds
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": object_metadata(name, config.namespace, _labels(labels, volcano), annotations),
        "spec": spec,
    }


def commit_job(
    config: ClusterConfig, *, shard_job_name: str, sink: str, labels: dict[str, str], annotations: dict[str, str],
    volcano: VolcanoSettings | None,
) -> dict[str, Any]:
    """Return the suspended Job that publishes ``sink`` once the shard Job is complete (see the module docstring).

    Args:
        config: The cluster config.
        shard_job_name: Name of the shard Job it follows (recorded in the ``dataflow.io/after`` annotation).
        sink: The sink URI as the shard pods resolve it.
        labels: Labels of the Job and its pod.
        annotations: Annotations of the Job (``dataflow.io/after`` is added).
        volcano: Volcano settings, or None.
    """
    job = config.job
    command = ["dataflow", "commit", sink, "--shards", str(job.shards)]
    resources = _resources(job.commit_cpu, job.commit_memory, 0, config.gpu_resource)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": object_metadata(
            shard_job_name + COMMIT_SUFFIX, config.namespace, _labels(labels, volcano),
            {**annotations, AFTER_ANNOTATION: f"Job/{shard_job_name}"},
        ),
        "spec": {
            "suspend": True,
            "backoffLimit": _COMMIT_RETRIES,
            "ttlSecondsAfterFinished": job.ttl_seconds_after_finished,
            "template": _template(config, volcano, _labels(labels, volcano), command, resources),
        },
    }
