"""Build a Spark Operator ``SparkApplication`` (sparkoperator.k8s.io/v1beta2) for a Spark stage.

``spark-submit`` needs a Python file as the application, so the pipeline ConfigMap also holds a
three-line ``entrypoint.py`` that hands its arguments to the dataflow CLI: the driver runs
``dataflow run /etc/dataflow/pipeline.yaml`` inside the session spark-submit configured.
Executor size follows the config and grows to fit the largest step; the executor count
follows the steps' declared ``concurrency``. Every setting goes through a CRD field, never
through the ``sparkConf`` keys the operator's webhook denies.
"""
from __future__ import annotations

import math
from typing import Any

from dataflow.k8s import pod
from dataflow.k8s.pod import object_metadata as _metadata
from dataflow.k8s.config import ClusterConfig, SparkRoleConfig
from dataflow.k8s.quantity import spark_memory, spark_memory_bytes
from dataflow.k8s.stages import Stage
from dataflow.k8s.volcano import VolcanoSettings, pod_annotations, spark_batch_scheduler

__all__ = ["ENTRYPOINT_FILE", "ENTRYPOINT_SCRIPT", "spark_application"]

ENTRYPOINT_FILE = "entrypoint.py"
ENTRYPOINT_SCRIPT = '''"""Run the dataflow CLI with spark-submit's application arguments (rendered by dataflow k8s)."""
from dataflow.cli.main import main

main()
'''


def _role(
    role: SparkRoleConfig, cores: int, memory: str, config: ClusterConfig, volcano: VolcanoSettings | None,
    labels: dict[str, str], mounts: list[dict[str, Any]],
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "cores": cores,
        "memory": memory,
        "labels": dict(labels),
        "env": pod.container_env(config),
        "volumeMounts": mounts,
    }
    if annotations := pod_annotations(volcano):
        out["annotations"] = annotations
    if config.env_from_secrets:
        out["envFrom"] = pod.env_from(config)
    if volcano is not None and volcano.priority_class:
        out["priorityClassName"] = volcano.priority_class
    if role.node_selector:
        out["nodeSelector"] = dict(role.node_selector)
    if role.tolerations:
        out["tolerations"] = [dict(t) for t in role.tolerations]
    return out


def spark_application(
    stage: Stage, config: ClusterConfig, *, name: str, config_map: str, labels: dict[str, str],
    pod_labels: dict[str, str], annotations: dict[str, str], volcano: VolcanoSettings | None, command: list[str],
) -> dict[str, Any]:
    """Return the SparkApplication running one stage.

    Args:
        stage: The Spark stage of the plan.
        config: The cluster config.
        name: Object name (checked elsewhere: DNS-1035).
        config_map: Name of the ConfigMap holding the pipeline and ``entrypoint.py``.
        labels: Labels of the SparkApplication.
        pod_labels: Labels of the driver and executor pods.
        annotations: Annotations of the SparkApplication.
        volcano: Volcano settings, or None.
        command: The ``dataflow run`` command line; everything after ``dataflow`` becomes the arguments.
    """
    spark = config.spark
    needs = stage.needs
    cores = max([spark.executor.cores, *(n.whole_cpus() for n in needs)])
    per_task = [n.memory * max(1, math.floor(cores / n.num_cpus)) if n.num_cpus else n.memory for n in needs if n.memory]
    executor_memory = spark.executor.memory
    if per_task and max(per_task) > spark_memory_bytes(executor_memory):
        executor_memory = spark_memory(max(per_task))
    declared = math.ceil(sum(n.total(n.num_cpus) for n in needs) / cores)
    storage = pod.storage_mounts(config)
    driver = _role(spark.driver, spark.driver.cores, spark.driver.memory, config, volcano, pod_labels,
                   [pod.pipeline_mount(), *storage])
    driver["serviceAccount"] = spark.service_account
    executor = _role(spark.executor, cores, executor_memory, config, volcano, pod_labels, list(storage))
    spark_conf = dict(spark.spark_conf)
    gpu_needs = [n for n in needs if n.uses_gpu]
    if gpu_needs:
        gpus = math.ceil(max(n.num_gpus for n in gpu_needs))
        executor["gpu"] = {"name": config.gpu_resource, "quantity": gpus}
        spark_conf["spark.executor.resource.gpu.amount"] = str(gpus)
        spark_conf["spark.task.resource.gpu.amount"] = f"{min(n.num_gpus for n in gpu_needs):g}"
        spark_conf["spark.executor.resource.gpu.discoveryScript"] = spark.gpu_discovery_script
    dynamic = spark.dynamic_allocation
    if dynamic.enabled:
        executor["instances"] = spark.executor.instances
        dynamic_allocation = {
            "enabled": True,
            "initialExecutors": spark.executor.instances,
            "minExecutors": min(dynamic.min_executors, spark.executor.instances),
            "maxExecutors": max(dynamic.max_executors, declared, spark.executor.instances),
            "shuffleTrackingEnabled": True,
        }
    else:
        executor["instances"] = max(spark.executor.instances, declared)
        dynamic_allocation = {"enabled": False}
    restart = spark.restart_policy
    restart_policy: dict[str, Any] = {"type": restart.type}
    if restart.type != "Never":
        restart_policy.update(
            onFailureRetries=restart.on_failure_retries,
            onFailureRetryInterval=restart.on_failure_retry_interval,
            onSubmissionFailureRetries=restart.on_submission_failure_retries,
            onSubmissionFailureRetryInterval=restart.on_submission_failure_retry_interval,
        )
    spec: dict[str, Any] = {
        "type": "Python",
        "pythonVersion": "3",
        "mode": "cluster",
        "image": spark.image or config.image,
        "imagePullPolicy": config.image_pull_policy,
        "sparkVersion": spark.version,
        "mainApplicationFile": f"local://{pod.PIPELINE_DIR}/{ENTRYPOINT_FILE}",
        "arguments": list(command[1:]),
        "restartPolicy": restart_policy,
        "dynamicAllocation": dynamic_allocation,
        "volumes": [pod.pipeline_volume(config_map), *pod.storage_volumes(config)],
        "driver": driver,
        "executor": executor,
        **spark_batch_scheduler(volcano),
    }
    if spark_conf:
        spec["sparkConf"] = spark_conf
    if spark.time_to_live_seconds is not None:
        spec["timeToLiveSeconds"] = spark.time_to_live_seconds
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": _metadata(name, config.namespace, labels, annotations),
        "spec": spec,
    }
