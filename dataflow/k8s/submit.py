"""Submit rendered objects with the kubernetes client, follow their status, fetch logs, delete them.

Order of a submit: the Volcano Queue (cluster-scoped; one that exists already is kept), the
pipeline ConfigMap (refused if it exists: it would hold another run's pipeline), the jobs
(with ``fieldValidation=Strict``, so the API server rejects an unknown field instead of dropping
it), and finally the ConfigMap's ``ownerReferences`` to the jobs, so deleting the jobs garbage-
collects it. With ``dry_run`` every create carries ``dryRun=All``: the API server and its
admission webhooks check everything and persist nothing.

Plain Jobs (``--target job``) go through the ``BatchV1Api`` the same way. Their commit Job is
created suspended; ``wait(resume=True)`` resumes it once the shard Job is ``Complete``. Logs are
read in ``dataflow.k8s.logs`` (``job_logs``, importable from here too).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from dataflow.errors import ConnectorError, RunError
from dataflow.k8s.job import AFTER_ANNOTATION
from dataflow.k8s.render import Rendered
from dataflow.k8s.schema import KINDS

__all__ = ["JobState", "Submitted", "delete", "job_states", "kube_client", "submit", "wait"]

_TERMINAL = {
    "RayJob": {"Complete": True, "Failed": False, "ValidationFailed": False},
    "SparkApplication": {"COMPLETED": True, "FAILED": False, "SUBMISSION_FAILED": False},
    "Job": {"Complete": True, "Failed": False},
}
# The Job conditions that name a state, in the order they win (FailureTarget / SuccessCriteriaMet come
# before the terminal Failed / Complete).
_JOB_CONDITIONS = ("Failed", "Complete", "FailureTarget", "SuccessCriteriaMet", "Suspended")


def _kubernetes():
    try:
        import kubernetes
    except ImportError as exc:
        raise ConnectorError("dataflow k8s submit needs the kubernetes client; install it with pip install 'dataflow[k8s]'") from exc
    return kubernetes


def kube_client(kubeconfig: str | None = None, context: str | None = None):
    """Return an ``ApiClient`` from a kubeconfig file (default ``~/.kube/config``), or in-cluster credentials.

    Raises:
        ConnectorError: the client is not installed, or no usable configuration was found.
    """
    kubernetes = _kubernetes()
    configuration = kubernetes.client.Configuration()
    try:
        kubernetes.config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
    except (kubernetes.config.ConfigException, OSError) as exc:
        if kubeconfig is not None or context is not None:
            raise ConnectorError(f"kubeconfig {kubeconfig or '~/.kube/config'}: {exc}") from exc
        try:
            kubernetes.config.load_incluster_config(client_configuration=configuration)
        except kubernetes.config.ConfigException as inner:
            raise ConnectorError(
                f"no Kubernetes configuration: {exc}; pass --kubeconfig, or run inside a pod with a service account"
            ) from inner
    return kubernetes.client.ApiClient(configuration)


def _api_error(action: str, exc) -> RunError:
    try:
        message = json.loads(exc.body or "{}").get("message") or exc.reason
    except ValueError:
        message = exc.reason
    return RunError(f"{action}: the API server answered {exc.status} {exc.reason}: {message}")


def _ref(obj: dict[str, Any]) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


@dataclass(frozen=True)
class Submitted:
    """One object the API server accepted (or, with dry_run, would accept)."""

    kind: str
    name: str
    note: str = "created"


def submit(
    rendered: Rendered, api_client, *, dry_run: bool = False, on_done: Callable[[Submitted], None] = lambda done: None
) -> list[Submitted]:
    """Create the rendered objects in order (see the module docstring), calling ``on_done`` after each.

    Raises:
        RunError: the API server refused an object (the ConfigMap created by this call is removed again).
    """
    kubernetes = _kubernetes()
    ApiException = kubernetes.client.ApiException
    custom = kubernetes.client.CustomObjectsApi(api_client)
    core = kubernetes.client.CoreV1Api(api_client)
    batch = kubernetes.client.BatchV1Api(api_client)
    options = {"field_validation": "Strict", **({"dry_run": "All"} if dry_run else {})}
    done: list[Submitted] = []

    def record(item: Submitted) -> None:
        done.append(item)
        on_done(item)

    config_map = next(o for o in rendered.objects if o["kind"] == "ConfigMap")
    namespace = config_map["metadata"]["namespace"]
    for queue in (o for o in rendered.objects if o["kind"] == "Queue"):
        crd = KINDS["Queue"]
        try:
            custom.create_cluster_custom_object(crd.group, crd.version, crd.plural, queue, **options)
            record(Submitted("Queue", queue["metadata"]["name"]))
        except ApiException as exc:
            if exc.status != 409:
                raise _api_error(f"create {_ref(queue)}", exc) from exc
            record(Submitted("Queue", queue["metadata"]["name"], "exists, kept"))
    try:
        core.create_namespaced_config_map(namespace, config_map, **options)
    except ApiException as exc:
        hint = "; delete the earlier run first (dataflow k8s delete)" if exc.status == 409 else ""
        raise RunError(str(_api_error(f"create {_ref(config_map)}", exc)) + hint) from exc
    record(Submitted("ConfigMap", config_map["metadata"]["name"]))
    owners = []
    for job in rendered.jobs:
        try:
            if job["kind"] == "Job":
                # NOTE: the raw answer, a dict like the custom objects API's (not a V1Job model).
                created = json.loads(batch.create_namespaced_job(namespace, job, _preload_content=False, **options).data)
            else:
                crd = KINDS[job["kind"]]
                created = custom.create_namespaced_custom_object(crd.group, crd.version, namespace, crd.plural, job, **options)
        except ApiException as exc:
            if not dry_run:
                core.delete_namespaced_config_map(config_map["metadata"]["name"], namespace)
            raise _api_error(f"create {_ref(job)}", exc) from exc
        after = job["metadata"].get("annotations", {}).get(AFTER_ANNOTATION)
        note = f"created, suspended until {after} completes" if job["spec"].get("suspend") and after else "created"
        record(Submitted(job["kind"], job["metadata"]["name"], note))
        uid = created.get("metadata", {}).get("uid")
        if uid:
            owners.append({"apiVersion": job["apiVersion"], "kind": job["kind"], "name": job["metadata"]["name"], "uid": uid})
    if owners and not dry_run:
        patch = {"metadata": {"ownerReferences": owners}}
        try:
            core.patch_namespaced_config_map(config_map["metadata"]["name"], namespace, patch)
        except ApiException as exc:
            raise _api_error(f"set the owners of {_ref(config_map)}", exc) from exc
    return done


@dataclass(frozen=True)
class JobState:
    """What the operator reports about one job."""

    kind: str
    name: str
    state: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.state in _TERMINAL[self.kind]

    @property
    def succeeded(self) -> bool:
        return _TERMINAL[self.kind].get(self.state, False)

    def __str__(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in self.details.items() if v not in (None, ""))
        return f"{self.kind}/{self.name}: {self.state or 'Pending'}" + (f" ({extra})" if extra else "")


def _job_state(name: str, obj: dict[str, Any]) -> JobState:
    status = obj.get("status") or {}
    true = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
    state = next((c for c in _JOB_CONDITIONS if c in true), "Running" if status.get("active") else "")
    keys = ("active", "succeeded", "failed", "completedIndexes", "failedIndexes")
    details = {k: status.get(k) for k in keys}
    if state == "Suspended":
        details["after"] = (obj.get("metadata", {}).get("annotations") or {}).get(AFTER_ANNOTATION)
    return JobState("Job", name, state, details)


def _state(kind: str, name: str, obj: dict[str, Any]) -> JobState:
    if kind == "Job":
        return _job_state(name, obj)
    status = obj.get("status") or {}
    if kind == "RayJob":
        details = {k: status.get(k) for k in ("jobStatus", "reason", "message", "rayClusterName", "dashboardURL")}
        return JobState(kind, name, status.get("jobDeploymentStatus", ""), details)
    app = status.get("applicationState") or {}
    details = {"errorMessage": app.get("errorMessage"), "driver": (status.get("driverInfo") or {}).get("podName")}
    return JobState(kind, name, app.get("state", ""), details)


def job_states(rendered: Rendered, api_client) -> list[JobState]:
    """Return the current state of every job of ``rendered``.

    Raises:
        RunError: a job does not exist or cannot be read.
    """
    kubernetes = _kubernetes()
    custom = kubernetes.client.CustomObjectsApi(api_client)
    batch = kubernetes.client.BatchV1Api(api_client)
    states = []
    for job in rendered.jobs:
        meta = job["metadata"]
        try:
            if job["kind"] == "Job":
                obj = json.loads(batch.read_namespaced_job_status(meta["name"], meta["namespace"], _preload_content=False).data)
            else:
                crd = KINDS[job["kind"]]
                obj = custom.get_namespaced_custom_object_status(crd.group, crd.version, meta["namespace"], crd.plural, meta["name"])
        except kubernetes.client.ApiException as exc:
            raise _api_error(f"read {_ref(job)}", exc) from exc
        states.append(_state(job["kind"], meta["name"], obj))
    return states


def _resume(job: dict[str, Any], api_client) -> None:
    kubernetes = _kubernetes()
    meta = job["metadata"]
    try:
        kubernetes.client.BatchV1Api(api_client).patch_namespaced_job(meta["name"], meta["namespace"], {"spec": {"suspend": False}})
    except kubernetes.client.ApiException as exc:
        raise _api_error(f"resume {_ref(job)}", exc) from exc


def wait(
    rendered: Rendered, api_client, *, timeout: float, interval: float = 10.0,
    on_change: Callable[[JobState], None] = lambda state: None, resume: bool = False,
) -> list[JobState]:
    """Poll until every job has finished; call ``on_change`` whenever a job's state changes.

    A suspended Job whose ``dataflow.io/after`` job has succeeded (the commit Job of ``--target
    job``) is resumed when ``resume`` is set; otherwise the wait ends there, leaving it suspended.

    Raises:
        RunError: a job failed, or ``timeout`` seconds passed first.
    """
    deadline = time.monotonic() + timeout
    seen: dict[str, str] = {}
    while True:
        states = job_states(rendered, api_client)
        for state in states:
            if seen.get(state.name) != str(state):
                seen[state.name] = str(state)
                on_change(state)
        failed = [s for s in states if s.finished and not s.succeeded]
        if failed:
            raise RunError("; ".join(str(s) for s in failed))
        if all(s.finished for s in states):
            return states
        succeeded = {f"{s.kind}/{s.name}" for s in states if s.succeeded}
        ready = {s.name for s in states if s.state == "Suspended" and s.details.get("after") in succeeded}
        if resume:
            for job in (j for j in rendered.jobs if j["metadata"]["name"] in ready):
                _resume(job, api_client)
        elif ready and all(s.finished or s.name in ready for s in states):
            return states
        if time.monotonic() >= deadline:
            raise RunError(f"jobs still running after {timeout:g} s: " + "; ".join(str(s) for s in states if not s.finished))
        time.sleep(interval)


def delete(rendered: Rendered, api_client, *, dry_run: bool = False) -> list[Submitted]:
    """Delete the jobs and the ConfigMap (the Queue is shared and stays); missing objects are skipped.

    Raises:
        RunError: the API server refused a deletion.
    """
    kubernetes = _kubernetes()
    custom = kubernetes.client.CustomObjectsApi(api_client)
    core = kubernetes.client.CoreV1Api(api_client)
    batch = kubernetes.client.BatchV1Api(api_client)
    options = {"dry_run": "All"} if dry_run else {}
    done = []
    for obj in (*rendered.jobs, next(o for o in rendered.objects if o["kind"] == "ConfigMap")):
        meta = obj["metadata"]
        try:
            if obj["kind"] == "ConfigMap":
                core.delete_namespaced_config_map(meta["name"], meta["namespace"], **options)
            elif obj["kind"] == "Job":
                # NOTE: Background, as kubectl does: the API's default for a Job orphans its pods.
                batch.delete_namespaced_job(meta["name"], meta["namespace"], propagation_policy="Background", **options)
            else:
                crd = KINDS[obj["kind"]]
                custom.delete_namespaced_custom_object(
                    crd.group, crd.version, meta["namespace"], crd.plural, meta["name"], propagation_policy="Background", **options
                )
            done.append(Submitted(obj["kind"], meta["name"], "deleted"))
        except kubernetes.client.ApiException as exc:
            if exc.status != 404:
                raise _api_error(f"delete {_ref(obj)}", exc) from exc
            done.append(Submitted(obj["kind"], meta["name"], "not found"))
    return done



def __getattr__(name: str):
    # ``job_logs`` lives in ``dataflow.k8s.logs``, which reads job states from here: looked up when asked.
    if name == "job_logs":
        from dataflow.k8s.logs import job_logs

        return job_logs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
