"""Start or join a Ray cluster: the embedded local default, or the given address."""
from __future__ import annotations

import json
import logging
import os
import sys
import threading

__all__ = ["cluster_cpus", "ensure_ray"]

_INIT_LOCK = threading.Lock()  # shards start from several threads; Ray starts once


def ensure_ray(address: str | None = None, object_store_memory: int | None = None, spill_dir: str | None = None, verbose: bool = False) -> None:
    """Connect to ``address`` (or ``RAY_ADDRESS``, or the warm local Ray of ``dataflow up``); else start a local Ray on 127.0.0.1.

    Call it on the main thread: Ray sets its signal handlers there, and a driver started on
    another thread takes 10-15 s to shut down at exit. Ray's own INFO and WARNING lines show only
    with ``verbose``.

    A local Ray's object store holds ``object_store_memory`` bytes (else
    ``DATAFLOW_RAY_OBJECT_STORE_MEMORY``, else Ray's default: 30% of RAM) and spills to
    ``spill_dir`` (else ``DATAFLOW_RAY_SPILL_DIR``, else Ray's temp folder) when full.
    """
    from dataflow.engines.ray.local_cluster import running

    with _INIT_LOCK:
        if "ray" in sys.modules and sys.modules["ray"].is_initialized():
            return
        address = address or os.environ.get("RAY_ADDRESS") or None  # an empty RAY_ADDRESS names no cluster
        warm = None if address else running()
        if address is None:
            # NOTE: read when ray is imported: keeps the driver (and a local Ray) on loopback instead of the
            # machine's network interface; `dataflow up` turned token auth on (token in ~/.ray/auth_token).
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
            if warm is not None:
                os.environ.setdefault("RAY_AUTH_MODE", "token")
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        import ray

        _init(ray, address or (warm.address if warm else None), object_store_memory, spill_dir, verbose)


def _init(ray, address: str | None, object_store_memory: int | None, spill_dir: str | None = None, verbose: bool = False) -> None:
    level = logging.INFO if verbose else logging.ERROR
    logging.getLogger("ray").setLevel(level)  # before init: its start-up warnings (token auth) come from here
    kwargs = {"logging_level": level, "configure_logging": True, "log_to_driver": verbose}
    if address:
        ray.init(address=address, **kwargs)
        return
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
