"""A move whose stopped job had already committed the output ends the run there instead of resubmitting it.

The Job API reports such a job STOPPED when the stop lands while it exits after its commit: a race of the job's exit that
a real cluster here cannot be made to lose on purpose, so the Job API calls are replaced (the sink is a real folder,
its manifest the runner's); the move itself runs against real local clusters in ``tests/integration/test_broker.py``.
"""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import dataflow.broker.remote_run as remote_run
from dataflow.broker.jobs import JobRecord
from dataflow.dsl.parse import parse_pipeline


class _Moved(Exception):
    """The second placement: the move looks for another cluster."""


def _commit(sink, run_id: str) -> None:
    sink.mkdir(parents=True, exist_ok=True)
    (sink / "_manifest.json").write_text(json.dumps({"run_id": run_id, "files": []}))
    (sink / "_SUCCESS").write_text("")


def _record(status: str) -> JobRecord:
    return JobRecord(cluster="a", job_id="job-1", status=status, entrypoint="dataflow run", message=None, metadata={}, start_time=None, end_time=None)


@pytest.fixture
def fleet(monkeypatch):
    """One cluster that a window closes on while the job runs; a second placement (a move) raises ``_Moved``."""
    lend = SimpleNamespace(cpus=1.0, gpus=0.0, describe=lambda: "1 CPU")
    placement = SimpleNamespace(chosen=SimpleNamespace(cluster="a", lend=lend), to_dict=lambda: {"cluster": "a"})
    fake = SimpleNamespace(get=lambda name: SimpleNamespace(name=name), watch=SimpleNamespace(grace_seconds=1, cooldown_seconds=600))
    calls = {"placed": 0, "submitted": 0, "job": None}

    def place_or_wait(*args, **kwargs):
        calls["placed"] += 1
        if calls["placed"] > 1:
            raise _Moved
        return fake, placement

    def submit_job(cluster, sub):
        calls["submitted"] += 1
        if calls["job"] is not None:
            calls["job"]()  # what the job does before the stop lands
        return "job-1"

    monkeypatch.setattr(remote_run, "place_or_wait", place_or_wait)
    monkeypatch.setattr(remote_run, "submit_job", submit_job)
    monkeypatch.setattr(remote_run, "watch_job", lambda source, cluster, job_id: SimpleNamespace(record=_record("RUNNING"), give_back="window closed (test)"))
    monkeypatch.setattr(remote_run, "stop_job", lambda cluster, job_id, wait_seconds: _record("STOPPED"))
    return calls


def _spec(sink):
    return parse_pipeline({"name": "p", "source": {"uri": str(sink.parent / "in"), "format": "jsonl"}, "steps": [],
                           "sink": {"uri": str(sink), "format": "parquet", "mode": "overwrite"}})


def _run(spec, said: list[str]):
    return remote_run.run_on_fleet(spec, "name: p", demand=None, source=None, say=said.append)


@pytest.mark.parametrize("before", [None, "r-old"], ids=["empty-sink", "older-output"])
def test_a_stopped_job_that_committed_its_output_is_not_moved(fleet, tmp_path, before):
    sink = tmp_path / "out"
    if before:
        _commit(sink, before)
    fleet["job"] = lambda: _commit(sink, "r-new")
    said: list[str] = []
    run = _run(_spec(sink), said)
    assert fleet["submitted"] == 1 and fleet["placed"] == 1 and run.moves == []
    assert [j["status"] for j in run.jobs] == ["STOPPED"]
    assert "job job-1 committed the output before it stopped: nothing to move" in said


@pytest.mark.parametrize("before", [None, "r-old"], ids=["empty-sink", "older-output"])
def test_a_stopped_job_that_committed_nothing_is_moved(fleet, tmp_path, before):
    sink = tmp_path / "out"
    if before:
        _commit(sink, before)  # an earlier run's output, still there: not this job's commit
    with pytest.raises(_Moved):
        _run(_spec(sink), [])
    assert fleet["placed"] == 2
