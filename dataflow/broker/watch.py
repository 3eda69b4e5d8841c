"""Watch a borrowed cluster and decide when to give its capacity back.

A job is given back when the cluster's window closes, when its idle capacity falls under the
reserve (the owner's own work needs room), when its Volcano queue closes, or when the cluster is
removed from the clusters file. The file is read again whenever it changes, so an operator can
close a window or raise a reserve while a run is borrowing.
"""
from __future__ import annotations

import datetime as dt
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

from dataflow.broker.capacity import Capacity, probe
from dataflow.broker.clusters import Cluster, Fleet, load_clusters, window_state
from dataflow.broker.jobs import TERMINAL, JobRecord, job_record
from dataflow.errors import ConnectorError, PipelineSpecError, RunError

__all__ = ["FleetSource", "Move", "WatchOutcome", "give_back_reason", "watch_job"]

_EPS = 1e-9
LOST_AFTER_S = 120.0


def give_back_reason(cluster: Cluster, cap: Capacity, now: dt.datetime | None = None) -> str | None:
    """Why a run must leave ``cluster`` now, or None. A failed probe is no reason (it may be transient)."""
    is_open, text = window_state(cluster, now)
    if not is_open:
        return f"window {text}"
    if cap.error:
        return None
    r = cluster.reserve
    for what, idle, keep in (("CPU", cap.idle.cpus, r.num_cpus), ("GPU", cap.idle.gpus, r.num_gpus), ("bytes of memory", cap.idle.memory, r.memory)):
        if keep and idle + _EPS < keep:
            return f"idle {idle:g} {what} fell under the reserve of {keep:g}"
    if cap.queue is not None and cap.queue.get("state") not in (None, "Open"):
        return f"Volcano queue '{cap.queue['name']}' is {cap.queue['state']}"
    return None


@dataclass
class Move:
    """One give-back: the job stopped on one cluster and the run resumed on another."""

    at: str
    reason: str
    from_cluster: str
    from_job: str
    stopped_status: str
    stop_seconds: float
    to_cluster: str | None = None
    to_job: str | None = None
    resubmit_seconds: float | None = None  # from the decision to leave until the new job was accepted

    def to_dict(self) -> dict[str, Any]:
        d = dict(vars(self))
        for k in ("stop_seconds", "resubmit_seconds"):
            d[k] = round(d[k], 3) if d[k] is not None else None
        return d


class FleetSource:
    """The clusters file, read again when it changes; an invalid edit keeps the last good fleet."""

    def __init__(self, path: str | None, fleet: Fleet | None = None):
        self.path = path or os.environ.get("DATAFLOW_CLUSTERS")
        self._fleet = fleet or load_clusters(self.path)
        self._stamp = self._mtime()

    def _mtime(self) -> float | None:
        try:
            return os.stat(self.path).st_mtime_ns if self.path else None
        except OSError:
            return None

    def current(self) -> Fleet:
        stamp = self._mtime()
        if stamp is not None and stamp != self._stamp:
            self._stamp = stamp
            try:
                self._fleet = load_clusters(self.path)
            except PipelineSpecError as exc:
                print(f"dataflow: {self.path} is invalid, keeping the last good version:\n{exc}", file=sys.stderr, flush=True)
        return self._fleet


@dataclass(frozen=True)
class WatchOutcome:
    """How watching ended: the job reached a terminal state, or the run must give the cluster back."""

    record: JobRecord
    give_back: str | None = None


def watch_job(
    source: FleetSource, submitted: Cluster, job_id: str, *, poll_seconds: float | None = None,
    sleep: Callable[[float], None] = time.sleep, now: Callable[[], dt.datetime] | None = None,
) -> WatchOutcome:
    """Follow a job on the ``submitted`` cluster until it ends or the cluster must be given back.

    Raises:
        RunError: the cluster could not be reached for ``LOST_AFTER_S`` seconds (the job may still run).
    """
    lost_since, cluster_name = None, submitted.name
    while True:
        fleet = source.current()
        cluster = fleet.get(cluster_name)
        try:
            record = job_record(submitted, job_id)
        except ConnectorError as exc:
            lost_since = lost_since or time.monotonic()
            if time.monotonic() - lost_since > LOST_AFTER_S:
                raise RunError(f"lost contact with cluster '{cluster_name}' for {LOST_AFTER_S:.0f} s ({exc}); job {job_id} may still be running: "
                               "stop it, then run the same command again to resume") from exc
            sleep(poll_seconds or fleet.watch.poll_seconds)
            continue
        lost_since = None
        if record.status in TERMINAL:
            return WatchOutcome(record)
        reason = "removed from the clusters file" if cluster is None else give_back_reason(cluster, probe(cluster), now() if now else None)
        if reason:
            return WatchOutcome(record, reason)
        sleep(poll_seconds or fleet.watch.poll_seconds)

