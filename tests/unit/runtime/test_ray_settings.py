"""Ray session settings: object store size and spilling folder, the lean local start, shuffle partitions, quiet logs, the record of ``dataflow up``."""
from __future__ import annotations

import json
import logging
import os
import pathlib
import subprocess
import sys
import time

import pytest

from dataflow.engines.ray import local_cluster, session, shuffle


class _FakeRay:
    def __init__(self):
        self.kwargs = None

    def init(self, **kwargs):
        self.kwargs = kwargs


def test_a_local_ray_spills_to_the_given_folder_with_the_given_object_store(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    fake = _FakeRay()
    session._init(fake, None, 2 << 30, "/scratch/spill")
    assert fake.kwargs["object_store_memory"] == 2 << 30
    assert json.loads(fake.kwargs["_system_config"]["object_spilling_config"]) == {"type": "filesystem", "params": {"directory_path": "/scratch/spill"}}


def test_the_spilling_folder_comes_from_the_environment_else_rays_default(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("DATAFLOW_RAY_SPILL_DIR", "/env/spill")
    fake = _FakeRay()
    session._init(fake, None, None)
    assert "/env/spill" in fake.kwargs["_system_config"]["object_spilling_config"]
    monkeypatch.delenv("DATAFLOW_RAY_SPILL_DIR")
    session._init(fake, None, None)
    assert "_system_config" not in fake.kwargs


class _StartingRay:
    """``ray.init`` that records what a local head start would meet: the API server starter and the agents' ports."""

    def init(self, **kwargs):
        from ray._private import parameter, services

        self.api_server = services.start_api_server
        self.ports = [getattr(parameter.RayParams(), name) for name in session._AGENT_PORTS]


def test_a_local_start_skips_the_api_server_and_gives_the_agents_free_ports_then_restores_ray(monkeypatch):
    from ray._private import parameter, services

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("DATAFLOW_RAY_LEAN_START", raising=False)
    before = parameter.RayParams.__init__, services.start_api_server
    fake = _StartingRay()
    session._init(fake, None, None)
    assert fake.api_server is not before[1] and fake.api_server(None, False) == (None, None), "no dashboard process is started (or waited for)"
    assert len(set(fake.ports)) == 4 and all(isinstance(p, int) and p > 0 for p in fake.ports)
    assert (parameter.RayParams.__init__, services.start_api_server) == before, "Ray's own functions are back after the start"
    assert [getattr(parameter.RayParams(), n) for n in ("metrics_agent_port", "runtime_env_agent_port")] == [None, None], "later RayParams are Ray's own"


def test_the_lean_start_is_off_with_the_environment_or_a_ray_of_another_shape(monkeypatch):
    from ray._private import ray_constants, services

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("DATAFLOW_RAY_LEAN_START", "0")
    fake = _StartingRay()
    session._init(fake, None, None)
    assert fake.api_server is services.start_api_server and fake.ports == [None, ray_constants.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT, None, None], "Ray's own start"
    monkeypatch.delenv("DATAFLOW_RAY_LEAN_START")

    def api_server(include_dashboard, host, raise_on_failure):  # another Ray's signature: left alone
        raise AssertionError("not called here")

    monkeypatch.setattr(services, "start_api_server", api_server)
    fake = _StartingRay()
    session._init(fake, None, None)
    assert fake.api_server is api_server


def test_a_lean_start_that_fails_is_started_again_as_ray_does(monkeypatch):
    from ray._private import services

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("DATAFLOW_RAY_LEAN_START", raising=False)
    original = services.start_api_server

    class FailsLean(_StartingRay):
        def __init__(self):
            self.calls = []

        def init(self, **kwargs):
            super().init(**kwargs)
            self.calls.append(self.api_server is original)
            if self.api_server is not original:
                raise RuntimeError("a Ray that wants its API server")

        def shutdown(self):
            self.calls.append("shutdown")

    fake = FailsLean()
    session._init(fake, None, None)
    assert fake.calls == [False, "shutdown", True]

    class FailsAlways(FailsLean):
        def init(self, **kwargs):
            self.calls.append("init")
            raise ValueError("object_store_memory too large")

    monkeypatch.setenv("DATAFLOW_RAY_LEAN_START", "0")
    fake = FailsAlways()
    with pytest.raises(ValueError, match="too large"):
        session._init(fake, None, None)
    assert fake.calls == ["init"], "Ray's own start fails once, as it is"


def test_shuffle_partitions_given_else_environment_else_two_per_cpu(monkeypatch):
    monkeypatch.setattr(session, "cluster_cpus", lambda: 3.0)
    monkeypatch.delenv("DATAFLOW_RAY_SHUFFLE_PARTITIONS", raising=False)
    assert shuffle.shuffle_partitions() == 6
    monkeypatch.setenv("DATAFLOW_RAY_SHUFFLE_PARTITIONS", "5")
    assert (shuffle.shuffle_partitions(), shuffle.shuffle_partitions(12)) == (5, 12)


def test_ray_is_quiet_unless_verbose(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    fake = _FakeRay()
    session._init(fake, None, None)
    assert (fake.kwargs["logging_level"], fake.kwargs["log_to_driver"]) == (logging.ERROR, False)
    session._init(fake, None, None, verbose=True)
    assert (fake.kwargs["logging_level"], fake.kwargs["log_to_driver"]) == (logging.INFO, True)


def test_a_record_of_dataflow_up_whose_process_is_gone_is_ignored(monkeypatch, tmp_path):
    monkeypatch.setenv("DATAFLOW_STATE_DIR", str(tmp_path))
    assert local_cluster.running() is None  # no record
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / "local-ray.json").write_text(json.dumps({"address": "127.0.0.1:1", "pid": gone.pid, "log": ""}))
    assert local_cluster.running() is None
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])  # exited, not yet reaped
    while pathlib.Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)
    (tmp_path / "local-ray.json").write_text(json.dumps({"address": "127.0.0.1:1", "pid": zombie.pid, "log": ""}))
    assert local_cluster.running() is None
    zombie.wait()
    (tmp_path / "local-ray.json").write_text(json.dumps({"address": "127.0.0.1:1", "pid": os.getpid(), "log": ""}))
    assert local_cluster.running() == local_cluster.LocalCluster("127.0.0.1:1", os.getpid(), "")
