"""A warm local Ray for repeated CLI runs: ``dataflow up`` starts it, ``dataflow down`` stops it.

``up`` runs ``ray start --head --block`` on 127.0.0.1 as a detached process group and records its
address and process id in ``<state dir>/local-ray.json`` (``DATAFLOW_STATE_DIR``, default
``~/.cache/dataflow``); its Ray temp folder is its own, so a plain ``ray.init()`` elsewhere on
the machine never joins it by accident. Every later ``dataflow run`` without ``--address`` / ``RAY_ADDRESS``
joins it instead of starting Ray, so it pays neither Ray's start nor its shutdown. ``down`` ends
the process group (Ray stops its own processes on SIGTERM) and removes the record. A record whose
process is gone is stale and ignored.
"""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

__all__ = ["LocalCluster", "free_ports", "running", "start", "stop"]

_READY = "Ray runtime started"


@dataclass(frozen=True)
class LocalCluster:
    """A started local Ray: its GCS address, the ``ray start`` process id and its log."""

    address: str
    pid: int
    log: str


def _state_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("DATAFLOW_STATE_DIR") or pathlib.Path.home() / ".cache" / "dataflow")


def _record() -> pathlib.Path:
    return _state_dir() / "local-ray.json"


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, which nobody reaped in a container without init, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def running() -> LocalCluster | None:
    """The local Ray ``dataflow up`` started, when it still runs."""
    try:
        cluster = LocalCluster(**json.loads(_record().read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return cluster if _alive(cluster.pid) else None


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on every interface now (the sockets are held until all are found)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(n)]
        for s in sockets:
            s.bind(("", 0))
        return [s.getsockname()[1] for s in sockets]


def start(num_cpus: int | None = None, object_store_memory: int | None = None, spill_dir: str | None = None, timeout: float = 120.0) -> LocalCluster:
    """Start a local Ray head on 127.0.0.1 (or return the running one); raise RuntimeError if it does not come up."""
    current = running()
    if current is not None:
        return current
    folder = _state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    port = free_ports(1)[0]
    # Its own temp folder: Ray's default one would record the cluster where every plain ray.init() on this
    # machine (tests, other tools) looks for a cluster to join.
    # Ray's socket paths must stay short: under RAY_TMPDIR or /tmp, as Ray's own default, not TMPDIR.
    temp_dir = pathlib.Path(os.environ.get("RAY_TMPDIR") or "/tmp") / f"dataflow-ray-{os.getuid()}"
    cmd = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--node-ip-address=127.0.0.1",
           f"--port={port}", "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp_dir}"]
    if num_cpus is not None:
        cmd.append(f"--num-cpus={num_cpus}")
    if object_store_memory is not None:
        cmd.append(f"--object-store-memory={object_store_memory}")
    if spill_dir:
        spilling = {"type": "filesystem", "params": {"directory_path": spill_dir}}
        cmd.append("--system-config=" + json.dumps({"object_spilling_config": json.dumps(spilling)}))
    # Token auth on, unless the user turned it off: the token is ~/.ray/auth_token (made here if missing; never printed),
    # which joining drivers read.
    env = {"RAY_AUTH_MODE": "token", **os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    if env["RAY_AUTH_MODE"] == "token":
        subprocess.run([sys.executable, "-m", "ray.scripts.scripts", "get-auth-token", "--generate"], env=env, capture_output=True, check=True)
    log = folder / "local-ray.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    deadline = time.monotonic() + timeout
    while _READY not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the local Ray did not start (see {log}):\n{tail}")
        time.sleep(0.2)
    cluster = LocalCluster(address=f"127.0.0.1:{port}", pid=proc.pid, log=str(log))
    _record().write_text(json.dumps(asdict(cluster)))
    return cluster


def _end(pid: int, grace: float = 5.0) -> None:
    """SIGTERM the process group, SIGKILL it after ``grace`` seconds (Ray's graceful stop can take 30 s on a busy machine)."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)  # whatever Ray left behind in the group
    except ProcessLookupError:
        pass


def stop() -> LocalCluster | None:
    """Stop the local Ray ``dataflow up`` started; return it (None when none ran)."""
    cluster = running()
    if cluster is not None:
        _end(cluster.pid)
    _record().unlink(missing_ok=True)
    return cluster
