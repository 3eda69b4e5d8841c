"""The cluster config (``k8s.yaml``): how a pipeline becomes Kubernetes objects.

Every key has a default, so ``dataflow k8s render PIPELINE.yaml`` works with no config file. A
file only lists what differs::

    namespace: data
    image: registry.example.com/dataflow:0.1.0
    secret_env:
      AWS_SECRET_ACCESS_KEY: {secret: s3-credentials, key: secret_key}
    cache: {host_path: /mnt/nvme/dataflow}
    ray:
      gpu_workers: {node_selector: {nvidia.com/gpu.product: NVIDIA-H100}}
    volcano: {queue: ai-data, profile: borrow}
"""
from __future__ import annotations

import importlib.metadata
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from dataflow.dsl.parse import _issues_from_validation
from dataflow.dsl.yaml_io import load
from dataflow.errors import PipelineSpecError, SpecIssue

__all__ = [
    "CacheConfig",
    "ClusterConfig",
    "DEFAULT_IMAGE",
    "JobConfig",
    "RayConfig",
    "RayGroupConfig",
    "ScratchConfig",
    "SecretKeyRef",
    "SparkConfig",
    "VolcanoConfig",
    "load_cluster_config",
]



def _default_image() -> str:
    # NOTE: not `dataflow.__version__`: importing the root package pulls in the runner (import contract).
    try:
        return f"dataflow:{importlib.metadata.version('dataflow')}"
    except importlib.metadata.PackageNotFoundError:  # a source checkout that is not installed
        return "dataflow:latest"


DEFAULT_IMAGE = _default_image()
Quantity = int | float | str
SubmissionMode = Literal["K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SecretKeyRef(_Model):
    """One key of a Kubernetes Secret, delivered as an environment variable."""

    secret: str = Field(description="Secret name (in the job's namespace).")
    key: str = Field(description="Key inside the Secret.")


class CacheConfig(_Model):
    """The node-local cache directory, mounted in every pod; ``DATAFLOW_CACHE_DIR`` points at it."""

    dir: str = Field("/var/cache/dataflow", description="Mount path in the containers.")
    host_path: str | None = Field(
        None, description="Node directory (e.g. on local NVMe) to mount as a hostPath; default: an emptyDir per pod."
    )
    size_limit: Quantity | None = Field(None, description="sizeLimit of the emptyDir (ignored with host_path).")


class ScratchConfig(_Model):
    """Per-pod scratch space (an emptyDir); ``TMPDIR`` points at it, and Spark uses it as its local dir."""

    dir: str = Field("/scratch", description="Mount path in the containers.")
    size_limit: Quantity | None = Field(None, description="sizeLimit of the emptyDir.")


class RayGroupConfig(_Model):
    """A pod shape of the Ray cluster; replicas follow the plan's concurrency when it declares one."""

    cpu: Quantity = Field(4, description="CPU request and limit of one pod.")
    memory: Quantity = Field("16Gi", description="Memory request and limit of one pod.")
    gpus: int = Field(0, ge=0, description="GPUs per pod (GPU group only; raised to the largest step's num_gpus).")
    min_replicas: int = Field(0, ge=0, description="Autoscaling lower bound.")
    max_replicas: int = Field(4, ge=1, description="Autoscaling upper bound when no step declares concurrency.")
    node_selector: dict[str, str] = Field(default_factory=dict, description="nodeSelector of the pods.")
    tolerations: list[dict[str, Any]] = Field(default_factory=list, description="Tolerations of the pods.")


def _gpu_group() -> RayGroupConfig:
    return RayGroupConfig(cpu=8, memory="32Gi", gpus=1, min_replicas=0, max_replicas=2)


class RayConfig(_Model):
    """How a Ray stage becomes a KubeRay RayJob (ray.io/v1)."""

    version: str = Field("2.60.0", description="rayVersion of the cluster.")
    image: str | None = Field(None, description="Image of the Ray pods; default: the top-level image.")
    cluster_selector: str | None = Field(
        None, description="Name of a running RayCluster to reuse (clusterSelector) instead of creating one."
    )
    submission_mode: SubmissionMode = Field("K8sJobMode", description="How KubeRay submits the entrypoint.")
    shutdown_after_job_finishes: bool = Field(True, description="Delete the RayCluster when the job ends.")
    ttl_seconds_after_finished: int = Field(300, ge=0, description="Delay before that deletion.")
    active_deadline_seconds: int | None = Field(None, gt=0, description="Wall-clock limit of the job.")
    backoff_limit: int = Field(0, ge=0, description="Retries of the whole RayJob (each on a new cluster).")
    autoscaling: bool = Field(True, description="enableInTreeAutoscaling; off: every group runs max replicas.")
    head: RayGroupConfig = Field(
        default_factory=lambda: RayGroupConfig(cpu=2, memory="8Gi"), description="Head pod (runs the driver)."
    )
    cpu_workers: RayGroupConfig = Field(
        default_factory=lambda: RayGroupConfig(min_replicas=1), description="The CPU worker group."
    )
    gpu_workers: RayGroupConfig = Field(
        default_factory=_gpu_group, description="The GPU worker group, rendered when a step has num_gpus."
    )


class SparkRoleConfig(_Model):
    """Driver or executor pods of a SparkApplication."""

    cores: int = Field(1, ge=1, description="spark.{driver,executor}.cores.")
    memory: str = Field("2g", description="Spark size string (512m, 4g) of the JVM heap.")
    instances: int = Field(2, ge=1, description="Executors at start (executor only).")
    node_selector: dict[str, str] = Field(default_factory=dict, description="nodeSelector of the pods.")
    tolerations: list[dict[str, Any]] = Field(default_factory=list, description="Tolerations of the pods.")


class DynamicAllocationConfig(_Model):
    """Spark dynamic allocation (shuffle tracking on, as Kubernetes has no external shuffle service)."""

    enabled: bool = Field(True, description="Scale executors with the backlog.")
    min_executors: int = Field(0, ge=0, description="Lower bound.")
    max_executors: int = Field(8, ge=1, description="Upper bound (raised to what the plan's concurrency needs).")


class RestartPolicyConfig(_Model):
    """The SparkApplication restartPolicy."""

    type: Literal["Never", "OnFailure", "Always"] = Field("OnFailure", description="When the operator reruns the app.")
    on_failure_retries: int = Field(1, ge=0, description="Reruns after a failed run.")
    on_failure_retry_interval: int = Field(30, ge=1, description="Seconds between those reruns.")
    on_submission_failure_retries: int = Field(2, ge=0, description="Retries of a failed spark-submit.")
    on_submission_failure_retry_interval: int = Field(15, ge=1, description="Seconds between those retries.")


class SparkConfig(_Model):
    """How a Spark stage becomes a Spark Operator SparkApplication (sparkoperator.k8s.io/v1beta2)."""

    version: str = Field("4.3.0", description="sparkVersion.")
    image: str | None = Field(None, description="Image of the driver and executors; default: the top-level image.")
    service_account: str = Field(
        "spark-operator-spark", description="Driver service account allowed to create executor pods (the Helm chart's)."
    )
    driver: SparkRoleConfig = Field(default_factory=lambda: SparkRoleConfig(cores=1, memory="2g"))
    executor: SparkRoleConfig = Field(default_factory=lambda: SparkRoleConfig(cores=2, memory="4g"))
    dynamic_allocation: DynamicAllocationConfig = Field(default_factory=DynamicAllocationConfig)
    restart_policy: RestartPolicyConfig = Field(default_factory=RestartPolicyConfig)
    time_to_live_seconds: int | None = Field(3600, ge=1, description="Delete the app this long after it ends.")
    spark_conf: dict[str, str] = Field(default_factory=dict, description="Extra sparkConf (denied keys are rejected).")
    gpu_discovery_script: str = Field(
        "/opt/spark/examples/src/main/scripts/getGpusResources.sh",
        description="spark.executor.resource.gpu.discoveryScript, used when a step has num_gpus.",
    )


class VolcanoConfig(_Model):
    """Volcano scheduling: a queue turns it on."""

    queue: str | None = Field(None, description="Volcano queue; default: none (Volcano labels are not rendered).")
    priority_class: str | None = Field(None, description="PriorityClass of the PodGroup and pods.")
    profile: Literal["default", "borrow"] = Field(
        "default", description="borrow: low-priority, preemptible work on capacity lent by other queues."
    )
    borrow_priority_class: str = Field("dataflow-borrow", description="PriorityClass of the borrow profile.")
    create_queue: bool = Field(False, description="Also render the Queue object (cluster-scoped).")
    weight: int = Field(1, ge=1, le=65535, description="Queue weight (proportion plugin).")
    capability: dict[str, Quantity] = Field(default_factory=dict, description="Queue hard ceiling per resource.")
    deserved: dict[str, Quantity] = Field(default_factory=dict, description="Queue entitled share (capacity plugin).")
    guarantee: dict[str, Quantity] = Field(default_factory=dict, description="Reserved for the queue, never lent.")
    reclaimable: bool | None = Field(None, description="Whether other queues may reclaim from it (unset: true).")


class JobConfig(_Model):
    """How a map-only pipeline becomes a batch/v1 Indexed Job (``--target job``): one pod per input shard.

    Each pod runs ``dataflow run --shard I/N`` with the engine inside the pod (a local Ray or Spark),
    so one pod must hold every step's declared ``concurrency`` at once; its size grows to fit.
    """

    shards: int = Field(
        8, ge=1, le=100_000, description="completions: the N of 'dataflow run --shard I/N' (--shards overrides)."
    )
    parallelism: int = Field(4, ge=1, description="Shard pods running at once (capped at shards).")
    cpu: Quantity = Field(4, description="CPU request and limit of a shard pod.")
    memory: Quantity = Field("16Gi", description="Memory request and limit of a shard pod.")
    gpus: int = Field(0, ge=0, description="GPUs of a shard pod (raised to what the steps declare).")
    node_selector: dict[str, str] = Field(default_factory=dict, description="nodeSelector of the pods.")
    tolerations: list[dict[str, Any]] = Field(default_factory=list, description="Tolerations of the pods.")
    backoff_limit_per_index: int = Field(
        2, ge=0, description="Retries of one shard before its index fails (backoffLimitPerIndex; Kubernetes >= 1.29)."
    )
    ttl_seconds_after_finished: int = Field(86400, ge=0, description="Delete the Jobs (and their pods' logs) this long after they end.")
    active_deadline_seconds: int | None = Field(None, gt=0, description="Wall-clock limit of the shard Job.")
    commit_cpu: Quantity = Field(1, description="CPU of the commit pod ('dataflow commit SINK --shards N').")
    commit_memory: Quantity = Field("2Gi", description="Memory of the commit pod.")


class ClusterConfig(_Model):
    """Everything ``dataflow k8s render`` needs besides the pipeline; every key has a default."""

    namespace: str = Field("default", description="Namespace of the objects.")
    name: str | None = Field(None, description="Object name; default: the pipeline name in DNS-1035 form.")
    image: str = Field(DEFAULT_IMAGE, description="Image with dataflow and its engines installed.")
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field("IfNotPresent")
    gpu_resource: str = Field("nvidia.com/gpu", description="Extended resource name of a GPU on the nodes.")
    service_account: str | None = Field(None, description="Service account of the Ray pods.")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra labels on every object.")
    annotations: dict[str, str] = Field(default_factory=dict, description="Extra annotations on the job objects.")
    env: dict[str, str] = Field(default_factory=dict, description="Plain (non-secret) environment variables.")
    secret_env: dict[str, SecretKeyRef] = Field(
        default_factory=dict, description="Environment variables taken from Secret keys (secretKeyRef)."
    )
    env_from_secrets: list[str] = Field(default_factory=list, description="Secrets whose keys all become variables (envFrom).")
    cache: CacheConfig = Field(default_factory=CacheConfig)
    scratch: ScratchConfig = Field(default_factory=ScratchConfig)
    ray: RayConfig = Field(default_factory=RayConfig)
    spark: SparkConfig = Field(default_factory=SparkConfig)
    volcano: VolcanoConfig = Field(default_factory=VolcanoConfig)
    job: JobConfig = Field(default_factory=JobConfig, description="Plain Indexed Jobs (--target job).")


def load_cluster_config(path: str | None, **overrides: Any) -> ClusterConfig:
    """Read a cluster config file (or take the defaults) and apply CLI overrides.

    Args:
        path: A k8s.yaml file, or None for the defaults.
        overrides: Dotted keys set after the file, e.g. ``{"volcano.queue": "ai-data"}``; None values are skipped.

    Raises:
        PipelineSpecError: the file is unreadable or has unknown keys or bad values, each with its line.
    """
    data: dict[str, Any] = {}
    lines: dict = {}
    if path is not None:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise PipelineSpecError([SpecIssue(key="", message=f"cannot read cluster config: {exc.strerror}", file=path)]) from exc
        loaded, lines = load(text, file=path)
        if loaded is not None and not isinstance(loaded, dict):
            raise PipelineSpecError([SpecIssue(key="", message="a cluster config must be a mapping", file=path, line=1, col=1)])
        data = loaded or {}
    for dotted, value in overrides.items():
        if value is None:
            continue
        *parents, leaf = dotted.split(".")
        node = data
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[leaf] = value
    try:
        return ClusterConfig.model_validate(data)
    except pydantic.ValidationError as exc:
        raise PipelineSpecError(_issues_from_validation(exc, ClusterConfig, (), lines, path)) from exc
