"""Run a pipeline on the fleet: place it, submit it, follow it, and move it when capacity is taken back.

A move stops the job (SIGTERM, then SIGKILL after ``watch.grace_seconds``), waits until the Job
API reports it ended, and submits the same resolved pipeline elsewhere. The new ``dataflow run``
resumes from the shard markers under ``<sink>/_dataflow/progress/`` (what the killed run
committed is kept, the shard in flight is redone), so the output equals an uninterrupted run. A job
that committed the output before the stop landed (the Job API then says STOPPED, not SUCCEEDED:
the stop hit it as it exited) is not moved: the run ends there, as it would have on its own.
Moves are recorded under ``broker`` in ``<sink>/_dataflow/report.json``.
"""
from __future__ import annotations

import datetime as dt
import json
import posixpath
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from dataflow.broker.capacity import probe_all
from dataflow.broker.clusters import Fleet, RayCluster
from dataflow.broker.jobs import JobSubmission, stop_job, submit_job, tail_logs
from dataflow.broker.placement import Demand, NoCapacityError, Placement, place
from dataflow.broker.watch import FleetSource, Move, watch_job
from dataflow.errors import ConnectorError, RunError

__all__ = ["BrokeredRun", "place_or_wait", "run_on_fleet"]


@dataclass
class BrokeredRun:
    """Where a brokered run ran: its placement, every job it submitted, its moves and the final report."""

    pipeline: str
    sink: str
    placement: dict[str, Any]
    jobs: list[dict[str, Any]] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    report: dict[str, Any] | None = None

    def broker_section(self) -> dict[str, Any]:
        return {"placement": self.placement, "jobs": self.jobs, "moves": [m.to_dict() for m in self.moves]}

    def to_dict(self) -> dict[str, Any]:
        return {**(self.report or {"pipeline": self.pipeline, "output": self.sink}), "broker": self.broker_section()}


def _echo(text: str) -> None:
    print(f"dataflow: {text}", file=sys.stderr, flush=True)


def place_or_wait(
    source: FleetSource, demand: Demand, *, only: str | None, wait: bool, cooldown: dict[str, tuple[float, str]] | None = None,
    say: Callable[[str], None] = _echo,
) -> tuple[Fleet, Placement]:
    """Place the demand now; with ``wait``, probe again every ``watch.poll_seconds`` until something fits.

    Raises:
        NoCapacityError: nothing fits and ``wait`` is off (the reasons per cluster).
    """
    last = None
    while True:
        fleet = source.current()
        active = {name: text for name, (until, text) in (cooldown or {}).items() if time.monotonic() < until}
        placement = place(fleet, probe_all(fleet), demand, only=only, cooldown=active)
        if placement.chosen is not None:
            return fleet, placement
        if not wait:
            raise NoCapacityError(placement)
        text = placement.explain()
        if text != last:
            say(f"waiting for capacity (checking every {fleet.watch.poll_seconds:g} s):\n{text}")
            last = text
        time.sleep(fleet.watch.poll_seconds)


def _follow_logs(cluster: RayCluster, job_id: str, write: Callable[[str], None]) -> threading.Thread:
    def pump() -> None:
        try:
            tail_logs(cluster, job_id, write)
        except (OSError, RuntimeError) as exc:  # the stream is best effort; status comes from polling
            _echo(f"log stream of {job_id} ended: {exc}")

    thread = threading.Thread(target=pump, name=f"logs-{job_id}", daemon=True)
    thread.start()
    return thread


def _read_report(spec) -> dict[str, Any] | None:
    from connectors.registry import filesystem, strip_scheme

    path = posixpath.join(strip_scheme(spec.sink.uri), "_dataflow", "report.json")
    try:
        fs = filesystem(spec.sink.uri, spec.storage.options)
        return json.loads(fs.cat_file(path))
    except (OSError, ValueError, ConnectorError):
        return None


def _write_report(spec, data: dict[str, Any]) -> None:
    from connectors.registry import filesystem, strip_scheme

    fs = filesystem(spec.sink.uri, spec.storage.options)
    with fs.open(posixpath.join(strip_scheme(spec.sink.uri), "_dataflow", "report.json"), "wb") as f:
        f.write(json.dumps(data, indent=2).encode("utf-8"))


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).astimezone().isoformat(timespec="seconds")


def run_on_fleet(
    spec, pipeline_yaml: str, demand: Demand, source: FleetSource, *, only: str | None = None, wait: bool = False,
    restart: bool = False, cache_dir: str | None = None, logs: Callable[[str], None] | None = None,
    say: Callable[[str], None] = _echo,
) -> BrokeredRun:
    """Run ``pipeline_yaml`` (the resolved ``spec``) on the fleet until it succeeds, moving it when needed.

    Raises:
        NoCapacityError: nothing fits now and ``wait`` is off.
        RunError: the job failed, was stopped outside dataflow, or could not be stopped for a move.
    """
    fleet, placement = place_or_wait(source, demand, only=only, wait=wait, say=say)
    run = BrokeredRun(spec.name, spec.sink.uri, placement.to_dict())
    run_key, cooldown = uuid.uuid4().hex[:12], {}
    committed_before = _committed_run(spec)  # the sink's committed output before this run (its run id), if any
    attempt, decided = 0, 0.0
    while True:
        attempt += 1
        chosen = placement.chosen
        cluster = fleet.get(chosen.cluster)
        sub = JobSubmission(spec.name, pipeline_yaml, run_key, attempt, max_cpus=chosen.lend.cpus, max_gpus=chosen.lend.gpus,
                            restart=restart and attempt == 1, cache_dir=cache_dir, grace_seconds=fleet.watch.grace_seconds)
        job_id = submit_job(cluster, sub)
        if run.moves:
            move = run.moves[-1]
            move.to_cluster, move.to_job = cluster.name, job_id
            move.resubmit_seconds = time.monotonic() - decided
        say(f"{'resumed' if run.moves else 'submitted'} on '{cluster.name}' as job {job_id} (cap {chosen.lend.describe()}); "
            f"follow with 'dataflow jobs logs {job_id}'")
        entry = {"cluster": cluster.name, "job_id": job_id, "attempt": attempt, "submitted_at": _now(), "cap": vars(chosen.lend)}
        run.jobs.append(entry)
        stream = _follow_logs(cluster, job_id, logs) if logs else None
        try:
            outcome = watch_job(source, cluster, job_id)
        except KeyboardInterrupt:
            stop_job(cluster, job_id, wait_seconds=fleet.watch.grace_seconds + 10)
            raise RunError(f"interrupted: job {job_id} on '{cluster.name}' was stopped; run the same command again to resume") from None
        entry["status"] = outcome.record.status
        if outcome.give_back is None:
            if stream is not None:
                stream.join(timeout=10)
            return _finish(spec, run, outcome.record)
        decided = time.monotonic()
        say(f"giving '{cluster.name}' back ({outcome.give_back}): stopping job {job_id}")
        stopped = stop_job(cluster, job_id, wait_seconds=fleet.watch.grace_seconds + 10)
        entry["status"] = stopped.status
        run.moves.append(Move(_now(), outcome.give_back, cluster.name, job_id, stopped.status, time.monotonic() - decided))
        # It finished while being stopped (the stop may land after its commit, as it exits): nothing to move.
        committed = stopped.status == "STOPPED" and _committed_run(spec) not in (None, committed_before)
        if stopped.status == "SUCCEEDED" or committed:
            run.moves.pop()
            if committed:
                say(f"job {job_id} committed the output before it stopped: nothing to move")
            return _finish(spec, run, stopped, committed=committed)
        cooldown[cluster.name] = (time.monotonic() + fleet.watch.cooldown_seconds, f"given back at {_now()} ({outcome.give_back})")
        # A cluster asked for by name is waited for (its cooldown does not apply); auto moves elsewhere.
        fleet, placement = place_or_wait(source, demand, only=only, wait=True, cooldown=None if only else cooldown, say=say)


def _committed_run(spec) -> str | None:
    """The run id of the output committed in the sink (its manifest's), or None where it holds none or cannot be read."""
    from connectors.registry import filesystem, strip_scheme
    from dataflow.runtime.commit import SinkLayout, read_manifest

    try:
        manifest = read_manifest(filesystem(spec.sink.uri, spec.storage.options), SinkLayout(strip_scheme(spec.sink.uri), ""))
    except (OSError, ValueError, ConnectorError):
        return None
    return None if manifest is None else str(manifest.get("run_id"))


def _finish(spec, run: BrokeredRun, record, committed: bool = False) -> BrokeredRun:
    """The run's result once its last job ended: its report with the broker's section; ``committed``: a stopped job's output was committed."""
    if record.status != "SUCCEEDED" and not committed:
        why = "was stopped outside dataflow" if record.status == "STOPPED" else f"failed: {record.message or 'no message'}"
        raise RunError(f"job {record.job_id} on '{record.cluster}' {why}; see 'dataflow jobs logs {record.job_id}'; "
                       "committed shards are kept, so running the same command again resumes")
    run.report = _read_report(spec)
    if run.report is not None:
        run.report["broker"] = run.broker_section()
        _write_report(spec, run.report)
    return run
