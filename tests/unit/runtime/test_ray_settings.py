"""Ray memory settings: the object store size and spilling folder a local Ray starts with, the shuffle partition count."""
from __future__ import annotations

import json

from dataflow.engines.ray import session, shuffle


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


def test_shuffle_partitions_given_else_environment_else_two_per_cpu(monkeypatch):
    monkeypatch.setattr(session, "cluster_cpus", lambda: 3.0)
    monkeypatch.delenv("DATAFLOW_RAY_SHUFFLE_PARTITIONS", raising=False)
    assert shuffle.shuffle_partitions() == 6
    monkeypatch.setenv("DATAFLOW_RAY_SHUFFLE_PARTITIONS", "5")
    assert (shuffle.shuffle_partitions(), shuffle.shuffle_partitions(12)) == (5, 12)
