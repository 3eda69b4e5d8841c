"""Volcano scheduling: queue labels for KubeRay, batchScheduler options for Spark, the borrowing profile, Queues.

KubeRay (started with ``--batch-scheduler=volcano``) reads two labels of the RayJob and copies
them into the PodGroup it creates: ``volcano.sh/queue-name`` and ``ray.io/priority-class-name``.
The Spark Operator (``--enable-batch-scheduler``) reads ``spec.batchScheduler: volcano`` and
``spec.batchSchedulerOptions``. The *borrow* profile marks work placed on capacity other queues
lent: a low PriorityClass and ``volcano.sh/preemptable: "true"`` on every pod, so Volcano's
``reclaim`` action may evict it when the lender wants its share back.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dataflow.errors import PipelineSpecError, SpecIssue
from dataflow.k8s.config import ClusterConfig, VolcanoConfig
from dataflow.k8s.quantity import parse_quantity

__all__ = [
    "PREEMPTABLE",
    "QUEUE_LABEL",
    "RAY_PRIORITY_LABEL",
    "RAY_SCHEDULER_LABEL",
    "VolcanoSettings",
    "pod_annotations",
    "queue_errors",
    "queue_object",
    "ray_labels",
    "spark_batch_scheduler",
    "volcano_settings",
]

QUEUE_LABEL = "volcano.sh/queue-name"
RAY_PRIORITY_LABEL = "ray.io/priority-class-name"
# NOTE: read only by KubeRay < 1.3 with the legacy --enable-batch-scheduler flag; harmless since.
RAY_SCHEDULER_LABEL = "ray.io/scheduler-name"
PREEMPTABLE = "volcano.sh/preemptable"


@dataclass(frozen=True)
class VolcanoSettings:
    """What the scheduler needs to know about one job."""

    queue: str
    priority_class: str | None
    preemptable: bool


def volcano_settings(config: ClusterConfig, file: str | None = None) -> VolcanoSettings | None:
    """Return the Volcano settings of a job, or None when no queue is configured.

    Raises:
        PipelineSpecError: the borrow profile without a queue, or a borrow queue that is not reclaimable.
    """
    volcano = config.volcano
    if volcano.queue is None:
        if volcano.profile == "borrow" or volcano.create_queue:
            what = "the borrow profile" if volcano.profile == "borrow" else "create_queue"
            raise PipelineSpecError(
                [SpecIssue(key="volcano.queue", file=file, message=f"{what} needs a Volcano queue (set volcano.queue or --queue)")]
            )
        return None
    borrow = volcano.profile == "borrow"
    if borrow and volcano.reclaimable is False:
        raise PipelineSpecError(
            [
                SpecIssue(
                    key="volcano.reclaimable", file=file,
                    message="the borrow profile runs on lent capacity, which must stay reclaimable (remove reclaimable: false)",
                )
            ]
        )
    priority = volcano.priority_class or (volcano.borrow_priority_class if borrow else None)
    return VolcanoSettings(queue=volcano.queue, priority_class=priority, preemptable=borrow)


def ray_labels(settings: VolcanoSettings | None) -> dict[str, str]:
    """Return the RayJob labels KubeRay turns into the PodGroup's queue and priority class."""
    if settings is None:
        return {}
    labels = {QUEUE_LABEL: settings.queue, RAY_SCHEDULER_LABEL: "volcano"}
    if settings.priority_class:
        labels[RAY_PRIORITY_LABEL] = settings.priority_class
    return labels


def pod_annotations(settings: VolcanoSettings | None) -> dict[str, str]:
    """Return the pod annotations of the profile (preemptable for borrowed capacity)."""
    return {PREEMPTABLE: "true"} if settings is not None and settings.preemptable else {}


def spark_batch_scheduler(settings: VolcanoSettings | None) -> dict[str, Any]:
    """Return the SparkApplication spec keys that hand the app to Volcano."""
    if settings is None:
        return {}
    options = {"queue": settings.queue}
    if settings.priority_class:
        options["priorityClassName"] = settings.priority_class
    return {"batchScheduler": "volcano", "batchSchedulerOptions": options}


def queue_object(config: ClusterConfig, labels: dict[str, str]) -> dict[str, Any]:
    """Return the (cluster-scoped) Queue of ``config.volcano``; borrow queues are reclaimable."""
    volcano: VolcanoConfig = config.volcano
    spec: dict[str, Any] = {"weight": volcano.weight}
    if volcano.capability:
        spec["capability"] = dict(volcano.capability)
    if volcano.deserved:
        spec["deserved"] = dict(volcano.deserved)
    if volcano.guarantee:
        spec["guarantee"] = {"resource": dict(volcano.guarantee)}
    reclaimable = True if volcano.profile == "borrow" else volcano.reclaimable
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": volcano.queue, "labels": dict(labels)},
        "spec": spec,
    }


def _amounts(resources: dict[str, Any], where: str, problems: list[str]) -> dict[str, float]:
    out = {}
    for name, value in resources.items():
        try:
            out[name] = parse_quantity(value)
        except ValueError as exc:
            problems.append(f"{where}.{name}: {exc}")
            continue
        if out[name] < 0:
            problems.append(f"{where}.{name}: must not be negative (got {value!r})")
    return out


def queue_errors(queue: dict[str, Any]) -> list[str]:
    """Return the Volcano admission-webhook rules a Queue breaks (guarantee <= deserved <= capability)."""
    spec = queue.get("spec", {})
    problems: list[str] = []
    capability = _amounts(spec.get("capability", {}), "spec.capability", problems)
    deserved = _amounts(spec.get("deserved", {}), "spec.deserved", problems)
    guarantee = _amounts(spec.get("guarantee", {}).get("resource", {}), "spec.guarantee.resource", problems)
    for name, amount in guarantee.items():
        if name not in deserved:
            problems.append(f"spec.guarantee.resource.{name}: also needs an entry in deserved (guarantee <= deserved)")
        elif amount > deserved[name]:
            problems.append(f"spec.guarantee.resource.{name}: {amount:g} exceeds deserved {deserved[name]:g}")
    for name, amount in deserved.items():
        if name in capability and amount > capability[name]:
            problems.append(f"spec.deserved.{name}: {amount:g} exceeds capability {capability[name]:g}")
    return problems
