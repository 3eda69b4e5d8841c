"""Start or join a Ray cluster: the embedded local default, or the given address."""
from __future__ import annotations

import json
import logging
import os
import threading

__all__ = ["cluster_cpus", "ensure_ray"]

_INIT_LOCK = threading.Lock()  # shards start from several threads; Ray starts once


def ensure_ray(address: str | None = None, object_store_memory: int | None = None, spill_dir: str | None = None) -> None:
    """Connect to ``address`` (or ``RAY_ADDRESS``); without either, start a local Ray on 127.0.0.1.

    A local Ray's object store holds ``object_store_memory`` bytes (else
    ``DATAFLOW_RAY_OBJECT_STORE_MEMORY``, else Ray's default: 30% of RAM) and spills to
    ``spill_dir`` (else ``DATAFLOW_RAY_SPILL_DIR``, else Ray's temp folder) when full.
    """
    import ray

    with _INIT_LOCK:
        if not ray.is_initialized():
            _init(ray, address, object_store_memory, spill_dir)


def _init(ray, address: str | None, object_store_memory: int | None, spill_dir: str | None = None) -> None:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = address or os.environ.get("RAY_ADDRESS")
    kwargs = {"logging_level": logging.WARNING, "configure_logging": True}
    if address:
        ray.init(address=address, **kwargs)
        return
    # NOTE: keeps a local Ray on loopback instead of the machine's network interface.
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if object_store_memory is None and os.environ.get("DATAFLOW_RAY_OBJECT_STORE_MEMORY"):
        object_store_memory = int(os.environ["DATAFLOW_RAY_OBJECT_STORE_MEMORY"])
    spill_dir = spill_dir or os.environ.get("DATAFLOW_RAY_SPILL_DIR")
    if spill_dir:
        spilling = {"type": "filesystem", "params": {"directory_path": spill_dir}}
        kwargs["_system_config"] = {"object_spilling_config": json.dumps(spilling)}
    ray.init(include_dashboard=False, object_store_memory=object_store_memory, **kwargs)


def cluster_cpus() -> float:
    """CPUs the connected Ray cluster reports."""
    import ray

    return float(ray.cluster_resources().get("CPU", 1.0))
