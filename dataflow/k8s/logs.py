"""Read the logs of submitted jobs: a RayJob's submitter pod, a SparkApplication's driver, every pod of a plain Job."""
from __future__ import annotations

from typing import Any

from dataflow.errors import RunError
from dataflow.k8s.render import Rendered
from dataflow.k8s.submit import _api_error, _kubernetes, _ref, job_states

__all__ = ["job_logs"]

_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


def job_logs(rendered: Rendered, api_client, *, tail_lines: int | None = None) -> dict[str, str]:
    """Return the driver log of every job, or the log of every pod of a plain Job.

    A RayJob's driver log is its submitter pod's (it follows ``ray job logs``); a SparkApplication's
    is its driver pod's.

    Raises:
        RunError: a pod or its log cannot be read.
    """
    kubernetes = _kubernetes()
    core = kubernetes.client.CoreV1Api(api_client)
    states = {s.name: s for s in job_states(rendered, api_client)}
    logs = {}
    for job in rendered.jobs:
        meta = job["metadata"]
        if job["kind"] == "Job":
            logs.update(_pod_logs(job, core, tail_lines, kubernetes.client.ApiException))
            continue
        try:
            if job["kind"] == "RayJob":
                pods = core.list_namespaced_pod(meta["namespace"], label_selector=f"job-name={meta['name']}").items
                if not pods:
                    raise RunError(f"{_ref(job)}: no submitter pod yet (state {states[meta['name']].state or 'Pending'})")
                pod_name = sorted(pods, key=lambda p: p.metadata.creation_timestamp or 0)[-1].metadata.name
            else:
                pod_name = states[meta["name"]].details.get("driver") or f"{meta['name']}-driver"
            kwargs: dict[str, Any] = {"tail_lines": tail_lines} if tail_lines else {}
            if job["kind"] == "SparkApplication":
                kwargs["container"] = "spark-kubernetes-driver"
            # NOTE: the raw response: the client's own decoding renders a text/plain log as "b'...'".
            response = core.read_namespaced_pod_log(pod_name, meta["namespace"], _preload_content=False, **kwargs)
            logs[_ref(job)] = response.data.decode("utf-8", errors="replace")
        except kubernetes.client.ApiException as exc:
            raise _api_error(f"read the log of {_ref(job)}", exc) from exc
    return logs


def _pod_order(p) -> tuple[int, str]:
    """Sort pods by completion index, then by age (a retried index has one pod per attempt)."""
    return int((p.metadata.annotations or {}).get(_INDEX_ANNOTATION, 0)), str(p.metadata.creation_timestamp or "")


def _pod_logs(job: dict[str, Any], core, tail_lines: int | None, api_exception) -> dict[str, str]:
    """Return the log of every pod of a plain Job, in completion-index order."""
    meta = job["metadata"]
    kwargs: dict[str, Any] = {"tail_lines": tail_lines} if tail_lines else {}
    try:
        pods = core.list_namespaced_pod(meta["namespace"], label_selector=f"job-name={meta['name']}").items
        logs = {}
        for p in sorted(pods, key=_pod_order):
            response = core.read_namespaced_pod_log(p.metadata.name, meta["namespace"], _preload_content=False, **kwargs)
            logs[f"{_ref(job)} pod/{p.metadata.name}"] = response.data.decode("utf-8", errors="replace")
    except api_exception as exc:
        raise _api_error(f"read the logs of {_ref(job)}", exc) from exc
    return logs
