"""Rules the operators' controllers and webhooks enforce that the CRD schemas do not carry.

An object that breaks one of these is accepted by the API server and then fails later
(KubeRay marks a RayJob ``ValidationFailed``; the Spark Operator's webhook rejects the app), so
rendering checks them itself. Sources: kuberay ``ray-operator/controllers/ray/utils/validation.go``
(``ValidateRayJobMetadata``, ``ValidateRayJobSpec``, ``ValidateRayClusterSpec``) and the
volcano scheduler plugin; spark-operator ``internal/webhook/sparkconf_validator.go``,
``dynamicallocation_validator.go`` and ``sparkapplication_validator.go``; Kubernetes object
metadata rules (DNS names, labels, ConfigMap size); the Job controller's pod hostnames
(``pkg/controller/job``: ``<name>-<index>`` for an Indexed Job).
"""
from __future__ import annotations

import re
from typing import Any

from dataflow.k8s.credentials import looks_secret
from dataflow.k8s.quantity import is_spark_memory
from dataflow.k8s.volcano import QUEUE_LABEL, queue_errors

__all__ = ["MAX_RAYJOB_NAME", "object_rule_errors"]

MAX_RAYJOB_NAME = 47  # KubeRay: MaxRayClusterNameLength (53) - 6, room for the RayCluster suffix
MAX_DNS_LABEL = 63
MAX_CONFIGMAP_BYTES = 1024 * 1024
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
_DENIED_SPARK_CONF = {
    "spark.master": "the operator sets it",
    "spark.kubernetes.driver.master": "the operator sets it",
    "spark.kubernetes.container.image": "use spark.image in the cluster config",
    "spark.kubernetes.driver.container.image": "use spark.image in the cluster config",
    "spark.kubernetes.executor.container.image": "use spark.image in the cluster config",
    "spark.kubernetes.authenticate.driver.serviceAccountName": "use spark.service_account in the cluster config",
    "spark.kubernetes.authenticate.executor.serviceAccountName": "use spark.service_account in the cluster config",
    "spark.kubernetes.authenticate.oauthToken": "the operator manages credentials",
    "spark.kubernetes.authenticate.oauthTokenFile": "the operator manages credentials",
    "spark.kubernetes.authenticate.driver.oauthToken": "the operator manages credentials",
    "spark.kubernetes.authenticate.driver.oauthTokenFile": "the operator manages credentials",
    "spark.kubernetes.authenticate.executor.oauthToken": "the operator manages credentials",
    "spark.kubernetes.authenticate.executor.oauthTokenFile": "the operator manages credentials",
}


def _name_errors(name: Any, kind: str, pattern: re.Pattern, pattern_name: str, limit: int) -> list[str]:
    if not isinstance(name, str) or not name:
        return [f"metadata.name: {kind} needs a name"]
    problems = []
    if len(name) > limit:
        problems.append(f"metadata.name: {name!r} has {len(name)} characters; a {kind} name may have at most {limit}")
    if not pattern.match(name):
        problems.append(f"metadata.name: {name!r} is not a {pattern_name} name (lower-case letters, digits and '-')")
    return problems


def _label_errors(labels: dict[str, Any], where: str) -> list[str]:
    problems = []
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if (prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix))) or len(name) > MAX_DNS_LABEL or not _LABEL_NAME.match(name):
            problems.append(f"{where}: {key!r} is not a valid label key")
        if not isinstance(value, str) or len(value) > MAX_DNS_LABEL or (value and not _LABEL_NAME.match(value)):
            problems.append(f"{where}.{key}: {value!r} is not a valid label value (at most 63 of A-Z a-z 0-9 - _ .)")
    return problems


def _metadata_errors(obj: dict[str, Any]) -> list[str]:
    meta = obj.get("metadata", {})
    problems = _label_errors(meta.get("labels", {}), "metadata.labels")
    namespace = meta.get("namespace")
    if namespace is not None and (len(namespace) > MAX_DNS_LABEL or not _DNS1123_LABEL.match(namespace)):
        problems.append(f"metadata.namespace: {namespace!r} is not a DNS-1123 label")
    return problems


def _group_errors(group: dict[str, Any], where: str, autoscaling: bool) -> list[str]:
    problems = []
    if not group.get("template", {}).get("spec", {}).get("containers"):
        problems.append(f"{where}.template.spec.containers: needs at least one container")
    low, high, replicas = group.get("minReplicas"), group.get("maxReplicas"), group.get("replicas")
    if not autoscaling and "groupName" in group and (low is None or high is None):
        problems.append(f"{where}: minReplicas and maxReplicas are required when autoscaling is off")
    if low is not None and high is not None and low > high:
        problems.append(f"{where}: minReplicas ({low}) is greater than maxReplicas ({high})")
    if replicas is not None and ((low is not None and replicas < low) or (high is not None and replicas > high)):
        problems.append(f"{where}.replicas: {replicas} is outside [minReplicas, maxReplicas]")
    return problems


def _rayjob_errors(obj: dict[str, Any]) -> list[str]:
    meta, spec = obj.get("metadata", {}), obj.get("spec", {})
    problems = _name_errors(meta.get("name"), "RayJob", _DNS1035, "DNS-1035", MAX_RAYJOB_NAME)
    cluster, selector = spec.get("rayClusterSpec"), spec.get("clusterSelector")
    mode = spec.get("submissionMode", "K8sJobMode")
    backoff = spec.get("backoffLimit", 0)
    if (cluster is None) == (selector is None):
        problems.append("spec: one of rayClusterSpec or clusterSelector must be set, not both or neither")
    if selector is not None:
        if not selector.get("ray.io/cluster"):
            problems.append("spec.clusterSelector: needs a non-empty 'ray.io/cluster' (the RayCluster's name)")
        if backoff > 0:
            problems.append("spec.backoffLimit: must be 0 with clusterSelector (a retry would need a new cluster)")
        if mode == "SidecarMode":
            problems.append("spec.submissionMode: SidecarMode cannot reuse a cluster (clusterSelector)")
        if spec.get("suspend"):
            problems.append("spec.suspend: not allowed with clusterSelector")
        if QUEUE_LABEL in meta.get("labels", {}):
            problems.append(
                f"metadata.labels.{QUEUE_LABEL}: Volcano cannot gang-schedule a RayJob that reuses a cluster; "
                "put the queue label on the RayCluster instead"
            )
    if mode not in _SUBMISSION_MODES:
        problems.append(f"spec.submissionMode: {mode!r} is not one of {', '.join(_SUBMISSION_MODES)}")
    if mode == "InteractiveMode" and backoff > 0:
        problems.append("spec.backoffLimit: must be 0 in InteractiveMode")
    if mode == "SidecarMode" and ("submitterPodTemplate" in spec or "submitterConfig" in spec):
        problems.append("spec: submitterPodTemplate and submitterConfig are not allowed in SidecarMode")
    if spec.get("suspend") and not spec.get("shutdownAfterJobFinishes"):
        problems.append("spec.suspend: requires shutdownAfterJobFinishes: true")
    if "deletionStrategy" in spec and spec.get("shutdownAfterJobFinishes"):
        problems.append("spec.deletionStrategy: cannot be combined with shutdownAfterJobFinishes")
    for key, low in (("ttlSecondsAfterFinished", 0), ("backoffLimit", 0), ("activeDeadlineSeconds", 1), ("preRunningDeadlineSeconds", 1)):
        if key in spec and spec[key] < low:
            problems.append(f"spec.{key}: must be at least {low} (got {spec[key]})")
    if cluster is not None:
        autoscaling = bool(cluster.get("enableInTreeAutoscaling"))
        problems += _group_errors(cluster.get("headGroupSpec", {}), "spec.rayClusterSpec.headGroupSpec", autoscaling)
        for i, group in enumerate(cluster.get("workerGroupSpecs", [])):
            problems += _group_errors(group, f"spec.rayClusterSpec.workerGroupSpecs[{i}]", autoscaling)
    return problems


def _spark_conf_errors(conf: dict[str, str], namespace: str | None) -> list[str]:
    problems = []
    for key, value in conf.items():
        if key in _DENIED_SPARK_CONF:
            problems.append(f"spec.sparkConf.{key}: denied by the Spark Operator webhook; {_DENIED_SPARK_CONF[key]}")
        elif key == "spark.kubernetes.namespace" and value != namespace:
            problems.append(f"spec.sparkConf.{key}: must equal the application namespace {namespace!r}")
        elif looks_secret(key) and ".secrets." not in key and ".secretKeyRef." not in key:
            problems.append(
                f"spec.sparkConf.{key}: a credential in sparkConf is stored in the manifest; "
                "take it from a Secret with secret_env in the cluster config"
            )
    return problems


def _spark_errors(obj: dict[str, Any]) -> list[str]:
    meta, spec = obj.get("metadata", {}), obj.get("spec", {})
    problems = _name_errors(meta.get("name"), "SparkApplication", _DNS1035, "DNS-1035", MAX_DNS_LABEL)
    problems += _spark_conf_errors(spec.get("sparkConf", {}), meta.get("namespace"))
    for role in ("driver", "executor"):
        pod = spec.get(role, {})
        for key in ("memory", "memoryOverhead", "memoryLimit"):
            if key in pod and not is_spark_memory(pod[key]):
                problems.append(f"spec.{role}.{key}: {pod[key]!r} is not a Spark size (expected e.g. 512m, 4g)")
        if spec.get("nodeSelector") and pod.get("nodeSelector"):
            problems.append(f"spec.{role}.nodeSelector: not allowed together with spec.nodeSelector")
        problems += _label_errors(pod.get("labels", {}), f"spec.{role}.labels")
    dynamic = spec.get("dynamicAllocation", {})
    if dynamic.get("enabled"):
        low, high = dynamic.get("minExecutors"), dynamic.get("maxExecutors")
        start = max(v for v in (low, dynamic.get("initialExecutors"), spec.get("executor", {}).get("instances"), 0) if v is not None)
        if low is not None and high is not None and low > high:
            problems.append(f"spec.dynamicAllocation.minExecutors ({low}) is greater than maxExecutors ({high})")
        if high is not None and start > high:
            problems.append(f"spec.dynamicAllocation: the initial executor count {start} exceeds maxExecutors ({high})")
    return problems


def _configmap_errors(obj: dict[str, Any]) -> list[str]:
    problems = _name_errors(obj.get("metadata", {}).get("name"), "ConfigMap", _DNS1123_SUBDOMAIN, "DNS-1123 subdomain", 253)
    data = obj.get("data", {})
    size = sum(len(k.encode()) + len(v.encode()) for k, v in data.items())
    if size > MAX_CONFIGMAP_BYTES:
        problems.append(f"data: {size} bytes; a ConfigMap holds at most {MAX_CONFIGMAP_BYTES}")
    problems += [f"data.{k}: not a valid ConfigMap key" for k in data if not _CONFIGMAP_KEY.match(k)]
    return problems


def _queue_errors(obj: dict[str, Any]) -> list[str]:
    name = obj.get("metadata", {}).get("name")
    return _name_errors(name, "Queue", _DNS1123_SUBDOMAIN, "DNS-1123 subdomain", 253) + queue_errors(obj)


def _job_errors(obj: dict[str, Any]) -> list[str]:
    name, spec = obj.get("metadata", {}).get("name"), obj.get("spec", {})
    # The Job controller labels every pod job-name=<name>, so the name is also a label value.
    problems = _name_errors(name, "Job", _DNS1123_LABEL, "DNS-1123 label", MAX_DNS_LABEL)
    if spec.get("completionMode") == "Indexed" and isinstance(name, str):
        host = f"{name}-{spec.get('completions', 1) - 1}"
        if len(host) > MAX_DNS_LABEL:
            problems.append(
                f"metadata.name: {name!r} makes the last pod's hostname {host!r} ({len(host)} characters); the Job "
                f"controller sets each pod's hostname to <name>-<index>, a DNS label of at most {MAX_DNS_LABEL}"
            )
    return problems


_RULES = {
    "RayJob": _rayjob_errors, "SparkApplication": _spark_errors, "ConfigMap": _configmap_errors, "Queue": _queue_errors,
    "Job": _job_errors,
}


def object_rule_errors(obj: dict[str, Any]) -> list[str]:
    """Return every controller, webhook and metadata rule ``obj`` breaks (empty when it passes)."""
    return _metadata_errors(obj) + _RULES[obj["kind"]](obj)
