"""Session fixtures: one real local Ray per test run (loopback only)."""
from __future__ import annotations

import os
import tempfile

import pytest


@pytest.fixture(scope="session")
def ray_local():
    """A real local Ray on 127.0.0.1 with 2 CPUs; the engine reuses it (no second cluster)."""
    import ray

    home = tempfile.mkdtemp(prefix="dataflow-ray-home-")
    os.environ["HOME"] = home  # Ray writes its auth token under $HOME/.ray
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=512 * 1024 * 1024, logging_level="WARNING")
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    yield ray
    ray.shutdown()
