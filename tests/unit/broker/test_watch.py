"""Giving capacity back: when a borrowed cluster must be left, and the clusters file read again while watching."""
from __future__ import annotations

import datetime as dt
import os

import pytest

import dataflow.broker.watch as watch
from dataflow.broker.capacity import Amount, Capacity
from dataflow.broker.clusters import RayCluster
from dataflow.broker.jobs import JobRecord
from dataflow.broker.watch import FleetSource, give_back_reason, watch_job

NOON = dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.timezone.utc)
FLEET = """\
clusters:
  - name: a
    kind: ray
    address: http://127.0.0.1:9
    timezone: UTC
{extra}
watch: {{poll_seconds: 0.01}}
"""


def _cap(idle_cpus=4.0, idle_gpus=0.0, **kw):
    return Capacity("a", "ray", total=Amount(8, 1), idle=Amount(idle_cpus, idle_gpus), **kw)


def test_window_reserve_and_queue_are_reasons_to_give_back():
    open_all_day = RayCluster(name="a", kind="ray", address="http://x:1")
    assert give_back_reason(open_all_day, _cap(), NOON) is None
    morning = RayCluster(name="a", kind="ray", address="http://x:1", windows=["06:00-11:59"], timezone="UTC")
    assert give_back_reason(morning, _cap(), NOON) == "window closed (06:00-11:59 UTC; now 12:00:00)"
    reserved = RayCluster(name="a", kind="ray", address="http://x:1", reserve={"num_cpus": 2, "num_gpus": 1})
    assert give_back_reason(reserved, _cap(idle_cpus=2.0, idle_gpus=1.0), NOON) is None  # exactly the reserve is fine
    assert give_back_reason(reserved, _cap(idle_cpus=1.5, idle_gpus=1.0), NOON) == "idle 1.5 CPU fell under the reserve of 2"
    assert give_back_reason(reserved, _cap(idle_cpus=3.0, idle_gpus=0.0), NOON) == "idle 0 GPU fell under the reserve of 1"
    closed_queue = _cap(queue={"name": "q", "state": "Closed"})
    assert give_back_reason(open_all_day, closed_queue, NOON) == "Volcano queue 'q' is Closed"
    assert give_back_reason(reserved, Capacity("a", "ray", error="unreachable"), NOON) is None  # a failed probe is no reason


def test_fleet_source_reads_an_edited_file_and_keeps_the_last_good_one(tmp_path, capsys):
    path = tmp_path / "clusters.yaml"
    path.write_text(FLEET.format(extra=""))
    source = FleetSource(str(path))
    assert source.current().get("a").windows == []
    path.write_text(FLEET.format(extra="    windows: ['22:00-08:00']"))
    os.utime(path, ns=(1, 2))  # a distinct mtime even on coarse clocks
    assert source.current().get("a").windows == ["22:00-08:00"]
    path.write_text(FLEET.format(extra="    windos: ['22:00-08:00']"))
    os.utime(path, ns=(3, 4))
    assert source.current().get("a").windows == ["22:00-08:00"]
    assert "is invalid, keeping the last good version" in capsys.readouterr().err


def _record(status):
    return JobRecord("a", "dataflow-p-1", status, "python -m dataflow run pipeline.yaml", None, {}, None, None)


def test_watch_returns_the_reason_once_the_window_closes_mid_run(tmp_path, monkeypatch):
    """The Job API and the probe are stand-ins here; the integration tests run this against live clusters."""
    path = tmp_path / "clusters.yaml"
    path.write_text(FLEET.format(extra="    windows: ['11:00-12:00']"))
    source = FleetSource(str(path))
    monkeypatch.setattr(watch, "job_record", lambda cluster, job_id: _record("RUNNING"))
    monkeypatch.setattr(watch, "probe", lambda cluster: _cap())
    clock = iter([NOON - dt.timedelta(minutes=2), NOON - dt.timedelta(minutes=1), NOON])
    outcome = watch_job(source, source.current().get("a"), "dataflow-p-1", sleep=lambda s: None, now=lambda: next(clock))
    assert outcome.give_back == "window closed (11:00-12:00 UTC; now 12:00:00)" and outcome.record.status == "RUNNING"


def test_watch_ends_with_the_job_and_gives_up_on_a_lost_cluster(tmp_path, monkeypatch):
    from dataflow.errors import ConnectorError, RunError

    path = tmp_path / "clusters.yaml"
    path.write_text(FLEET.format(extra=""))
    source = FleetSource(str(path))
    cluster = source.current().get("a")
    states = iter(["PENDING", "RUNNING", "SUCCEEDED"])
    monkeypatch.setattr(watch, "job_record", lambda c, j: _record(next(states)))
    monkeypatch.setattr(watch, "probe", lambda c: _cap())
    assert watch_job(source, cluster, "dataflow-p-1", sleep=lambda s: None).record.status == "SUCCEEDED"

    def unreachable(c, j):
        raise ConnectorError("cluster 'a': Job API at http://127.0.0.1:9 is not reachable")

    monkeypatch.setattr(watch, "job_record", unreachable)
    monkeypatch.setattr(watch, "LOST_AFTER_S", 0.0)
    with pytest.raises(RunError, match="lost contact with cluster 'a'.*may still be running"):
        watch_job(source, cluster, "dataflow-p-1", sleep=lambda s: None)
