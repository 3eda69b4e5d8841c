"""Run pipelines on Ray clusters through the Job API: submit, status, logs, stop, find a job by id.

A submitted job runs ``python -m dataflow run pipeline.yaml`` inside the cluster. Its runtime env
carries the resolved pipeline (working_dir) and dataflow itself (``py_modules``: the installed
``dataflow`` and ``connectors`` packages), so the cluster needs only Ray and dataflow's
dependencies. Every request carries the cluster's bearer token.
"""
from __future__ import annotations

import asyncio
import importlib.util
import os
import shlex
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from dataflow.broker.clusters import Fleet, RayCluster, auth_headers
from dataflow.errors import ConnectorError, RunError

__all__ = ["TERMINAL", "JobRecord", "JobSubmission", "find_job", "job_client", "list_jobs", "stop_job", "submit_job", "tail_logs"]

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
RUN_KEY = "dataflow_run"  # metadata key shared by every attempt of one brokered run


@dataclass(frozen=True)
class JobRecord:
    """One job on one cluster, as the Job API reports it."""

    cluster: str
    job_id: str
    status: str
    entrypoint: str
    message: str | None
    metadata: dict[str, str]
    start_time: float | None
    end_time: float | None

    @classmethod
    def of(cls, cluster: str, info: Any) -> JobRecord:
        status = getattr(info.status, "value", str(info.status))
        return cls(cluster, info.submission_id or info.job_id, status, info.entrypoint, info.message, dict(info.metadata or {}),
                   info.start_time / 1000 if info.start_time else None, info.end_time / 1000 if info.end_time else None)

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class JobSubmission:
    """What to run: the resolved pipeline and how the remote ``dataflow run`` is capped."""

    pipeline: str
    pipeline_yaml: str
    run_key: str
    attempt: int
    max_cpus: float
    max_gpus: float
    restart: bool = False
    cache_dir: str | None = None
    grace_seconds: int = 30


_CLIENTS: dict[tuple[str, str], Any] = {}


def job_client(cluster: RayCluster):
    """A ``JobSubmissionClient`` for the cluster with its bearer token (one per cluster and process).

    Raises:
        ConnectorError: the Job API cannot be reached or refuses the token.
    """
    from ray.job_submission import JobSubmissionClient

    key = (cluster.name, cluster.address)
    if key not in _CLIENTS:
        try:
            _CLIENTS[key] = JobSubmissionClient(cluster.address, headers=auth_headers(cluster))
        except (RuntimeError, OSError) as exc:
            raise ConnectorError(f"cluster '{cluster.name}': Job API at {cluster.address} is not reachable: {str(exc).splitlines()[0][:300]}") from exc
    return _CLIENTS[key]


def _package_dir(name: str) -> str:
    spec = importlib.util.find_spec(name)
    return list(spec.submodule_search_locations)[0]


def entrypoint(sub: JobSubmission) -> str:
    """The command the job runs inside the cluster."""
    args = ["python", "-m", "dataflow", "run", "pipeline.yaml", "--max-cpus", f"{sub.max_cpus:g}"]
    if sub.max_gpus:
        args += ["--max-gpus", f"{sub.max_gpus:g}"]
    if sub.restart:
        args.append("--restart")
    if sub.cache_dir is not None:
        args += ["--cache-dir", sub.cache_dir]
    return " ".join(shlex.quote(a) for a in args)


def submit_job(cluster: RayCluster, sub: JobSubmission) -> str:
    """Submit the pipeline to the cluster; return the job's submission id.

    Raises:
        ConnectorError: the Job API is unreachable.
        RunError: the cluster refused the job.
    """
    client = job_client(cluster)
    job_id = f"dataflow-{sub.pipeline}-{uuid.uuid4().hex[:8]}"
    env = {
        # Ray SIGKILLs the driver this long after the SIGTERM of a stop.
        "RAY_JOB_STOP_WAIT_TIME_S": str(sub.grace_seconds),
        # NOTE: one shard at a time, so the --max-cpus cap (per Ray Data execution) is the run's cap.
        "DATAFLOW_SHARD_CONCURRENCY": "1",
    }
    metadata = {RUN_KEY: sub.run_key, "dataflow_pipeline": sub.pipeline, "dataflow_attempt": str(sub.attempt)}
    with tempfile.TemporaryDirectory(prefix="dataflow-job-") as workdir:
        with open(os.path.join(workdir, "pipeline.yaml"), "w", encoding="utf-8") as f:
            f.write(sub.pipeline_yaml)
        runtime_env = {
            "working_dir": workdir,
            "py_modules": [_package_dir("dataflow"), _package_dir("connectors")],
            "excludes": ["__pycache__", "*.pyc"],
            "env_vars": env,
        }
        try:
            return client.submit_job(entrypoint=entrypoint(sub), submission_id=job_id, runtime_env=runtime_env, metadata=metadata)
        except (RuntimeError, OSError) as exc:
            raise RunError(f"cluster '{cluster.name}' refused job {job_id}: {str(exc)[:500]}") from exc


def job_record(cluster: RayCluster, job_id: str) -> JobRecord:
    """The job's current record.

    Raises:
        ConnectorError: the cluster cannot be reached.
        RunError: the cluster does not know the job.
    """
    try:
        return JobRecord.of(cluster.name, job_client(cluster).get_job_info(job_id))
    except OSError as exc:  # requests' connection errors
        raise ConnectorError(f"cluster '{cluster.name}': Job API at {cluster.address} is not reachable: {str(exc)[:200]}") from exc
    except RuntimeError as exc:
        raise RunError(f"cluster '{cluster.name}' has no job {job_id}: {str(exc)[:200]}") from exc


def _ray_clusters(fleet: Fleet, only: str | None = None) -> list[RayCluster]:
    return [c for c in fleet.clusters if isinstance(c, RayCluster) and (only is None or c.name == only)]


def list_jobs(fleet: Fleet, *, everything: bool = False, only: str | None = None) -> tuple[list[JobRecord], dict[str, str]]:
    """Jobs on every Ray cluster (only dataflow's unless ``everything``), newest first, and the clusters that failed."""

    def one(cluster: RayCluster) -> list[JobRecord] | str:
        try:
            return [JobRecord.of(cluster.name, info) for info in job_client(cluster).list_jobs()]
        except (ConnectorError, RuntimeError, OSError) as exc:
            return str(exc)

    clusters = _ray_clusters(fleet, only)
    records, failed = [], {}
    with ThreadPoolExecutor(max_workers=max(1, len(clusters))) as pool:
        for cluster, got in zip(clusters, pool.map(one, clusters)):
            if isinstance(got, str):
                failed[cluster.name] = got
            else:
                records += [r for r in got if everything or RUN_KEY in r.metadata]
    return sorted(records, key=lambda r: r.start_time or 0, reverse=True), failed


def find_job(fleet: Fleet, job_id: str) -> tuple[RayCluster, JobRecord]:
    """The cluster that runs ``job_id`` and the job's record, asking every Ray cluster at once.

    Raises:
        RunError: no cluster knows the job (lists the clusters asked and those unreachable).
    """

    def one(cluster: RayCluster) -> JobRecord | str:
        try:
            return job_record(cluster, job_id)
        except (ConnectorError, RunError) as exc:
            return str(exc)

    clusters = _ray_clusters(fleet)
    with ThreadPoolExecutor(max_workers=max(1, len(clusters))) as pool:
        answers = list(pool.map(one, clusters))
    for cluster, got in zip(clusters, answers):
        if isinstance(got, JobRecord):
            return cluster, got
    unreachable = [f"{c.name} ({a})" for c, a in zip(clusters, answers) if "not reachable" in a]
    note = f"; unreachable: {', '.join(unreachable)}" if unreachable else ""
    raise RunError(f"no cluster has job {job_id} (asked {', '.join(c.name for c in clusters) or 'no Ray clusters'}{note}); 'dataflow jobs list' shows the jobs")


def stop_job(cluster: RayCluster, job_id: str, *, wait_seconds: float) -> JobRecord:
    """Stop a job: Ray sends SIGTERM, then SIGKILL after the job's grace; wait until it is terminal.

    Raises:
        RunError: the job is still running after ``wait_seconds`` (a second stop was sent).
    """
    client = job_client(cluster)
    deadline = time.monotonic() + wait_seconds
    client.stop_job(job_id)
    hard_sent = False
    while True:
        record = job_record(cluster, job_id)
        if record.status in TERMINAL:
            return record
        if time.monotonic() > deadline:
            if hard_sent:
                raise RunError(f"job {job_id} on cluster '{cluster.name}' did not stop within {2 * wait_seconds:.0f} s; stop it with 'ray job stop' before resuming elsewhere")
            client.stop_job(job_id)
            hard_sent, deadline = True, time.monotonic() + wait_seconds
        time.sleep(0.2)


def tail_logs(cluster: RayCluster, job_id: str, write: Callable[[str], None]) -> None:
    """Call ``write`` with each chunk of the job's log until the job ends (the Job API's websocket)."""
    client = job_client(cluster)

    async def pump() -> None:
        async for chunk in client.tail_job_logs(job_id):
            write(chunk)

    asyncio.run(pump())
