"""Start or join a Ray cluster: the embedded local default, or the given address."""
from __future__ import annotations

import contextlib
import inspect
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

__all__ = ["cluster_cpus", "ensure_ray", "executing", "prompt_resource_limits", "release", "warm_workers", "warmed"]

_INIT_LOCK = threading.Lock()  # shards start from several threads; Ray starts once
_started = threading.Event()  # set when ensure_ray started or joined Ray (release leaves any other session alone)
_warming: list[threading.Thread] = []  # the warm-up of this connection to Ray (warm_workers), once
_warm_done = threading.Event()  # set when that warm-up ended (or none runs)
_warm_done.set()
_log = logging.getLogger(__name__)
_executing = threading.Event()  # set when an execution began (see executing)
# What a stage task deserializes first: Ray Data, Arrow and the modules of dataflow's stage functions.
WARM_MODULES = ("ray.data", "pyarrow", "pyarrow.compute", "dataflow.engines.ray.run", "dataflow.engines.ray.routed", "connectors.registry")


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

        # Ray Data's import (~1 s of Python) overlaps the wait for Ray's processes; `import ray.data`
        # on the main thread afterwards waits on the module's import lock, never imports it twice.
        threading.Thread(target=_import_ray_data, name="dataflow-import-ray-data", daemon=True).start()
        _init(ray, address or (warm.address if warm else None), object_store_memory, spill_dir, verbose)
        _started.set()


def _import_ray_data() -> None:
    try:
        import ray.data  # noqa: F401
    except Exception:  # noqa: BLE001 - the main thread's own import reports it
        pass


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
    with _lean_local_start() as lean:
        try:
            ray.init(include_dashboard=False, object_store_memory=object_store_memory, **kwargs)
            return
        except Exception as exc:  # noqa: BLE001 - Ray's own start below raises whatever is not the lean start's
            if not lean:
                raise
            _log.debug("dataflow: the lean start of a local Ray failed (%s); starting it as Ray does", exc)
    ray.shutdown()
    ray.init(include_dashboard=False, object_store_memory=object_store_memory, **kwargs)


_AGENT_PORTS = ("metrics_agent_port", "dashboard_agent_listen_port", "runtime_env_agent_port", "metrics_export_port")


@contextlib.contextmanager
def _lean_local_start() -> Iterator[bool]:
    """While the run's own local Ray starts, leave out the waits for what it never uses (~1 s of a 4 s start on 2 cores).

    NOTE: Ray 2.60's ``ray.init`` starts a minimal dashboard process (its API server) even with
    ``include_dashboard=False`` and waits for it (1.3 s here), and its raylet then waits for its two
    Python agents to report the ports they picked (1.2 s). The embedded Ray lives for one run and
    serves no dashboard, job or state API, so during this ``ray.init`` Ray's private
    ``services.start_api_server`` answers "no dashboard" (what it returns when one fails to start)
    and the agents get free ports chosen up front, as Ray chooses its other ports. Either alone
    gains nothing; together the cold e2e CLI run took 10.1 s instead of 11.3 s (medians of 5,
    alternated). Only where this Ray has both as expected (yields whether it applies), else Ray
    starts as usual, and so it does again when a lean start fails; ``DATAFLOW_RAY_LEAN_START=0``
    turns it off.
    """
    from ray._private import parameter, services

    from dataflow.engines.ray.local_cluster import free_ports

    params_init, api_server = parameter.RayParams.__init__, services.start_api_server
    known = set(inspect.signature(params_init).parameters) >= set(_AGENT_PORTS) and list(inspect.signature(api_server).parameters)[:2] == ["include_dashboard", "raise_on_failure"]
    if os.environ.get("DATAFLOW_RAY_LEAN_START", "1") == "0" or not known:
        yield False
        return

    def init(self, *args, **kwargs):
        params_init(self, *args, **kwargs)
        for name, port in zip(_AGENT_PORTS, free_ports(len(_AGENT_PORTS))):
            setattr(self, name, port)

    parameter.RayParams.__init__ = init
    services.start_api_server = lambda *args, **kwargs: (None, None)
    try:
        yield True
    finally:
        parameter.RayParams.__init__, services.start_api_server = params_init, api_server


#: How often (seconds) Ray Data's executor re-reads the cluster's resources; Ray 2.60's own is 1 s (see ``prompt_resource_limits``).
LIMITS_REFRESH_S = 0.05


def prompt_resource_limits() -> None:
    """Let each Ray Data execution use every CPU from its start, not after a second.

    NOTE: Ray 2.60's executor starts each execution with resource limits of zero: it asks its
    autoscaling coordinator (an actor) without waiting and re-reads the answer only every
    ``ResourceManager.GLOBAL_LIMITS_UPDATE_INTERVAL_S`` (1 s). Until then only one task runs:
    the logs benchmark's two read tasks ran one after the other (0.8 s each) on 2 CPUs. So the
    answer is re-read every ``LIMITS_REFRESH_S``, and the first read, made before the coordinator
    can have answered, takes the cluster's resources as Ray reports them (``_FirstReadSeeded``):
    at 50 ms alone the second task still waited for the executor's next loop (up to 0.1 s). A Ray
    version without the attribute, or whose ``ResourceManager`` takes no ``get_total_resources``,
    is left alone.
    """
    from ray.data._internal.execution.resource_manager import ResourceManager

    if getattr(ResourceManager, "GLOBAL_LIMITS_UPDATE_INTERVAL_S", 0) > LIMITS_REFRESH_S:
        ResourceManager.GLOBAL_LIMITS_UPDATE_INTERVAL_S = LIMITS_REFRESH_S
    init = ResourceManager.__init__
    signature = inspect.signature(init)
    if getattr(init, "_dataflow_seeded", False) or "get_total_resources" not in signature.parameters:
        return

    def seeded(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.arguments["get_total_resources"] = _FirstReadSeeded(bound.arguments["get_total_resources"])
        init(*bound.args, **bound.kwargs)

    seeded._dataflow_seeded = True  # type: ignore[attr-defined]
    ResourceManager.__init__ = seeded


class _FirstReadSeeded:
    """An execution's reads of its total resources: the cluster's (``ray.cluster_resources``) for a first answer of none, then the coordinator's."""

    def __init__(self, read):
        self.read, self.first = read, True

    def __call__(self):
        got = self.read()
        if self.first and not got.cpu and not got.gpu:
            import ray
            from ray.data import ExecutionResources

            total = ray.cluster_resources()
            got = ExecutionResources(cpu=total.get("CPU", 0.0), gpu=total.get("GPU", 0.0), object_store_memory=total.get("object_store_memory", 0.0))
        self.first = False
        return got


def operators_share_resources() -> bool:
    """Whether Ray Data's executor splits the cluster among a Dataset's operators (``DATAFLOW_RAY_OP_RESERVATION=1``; default: not).

    Ray Data 2.60 reserves each operator a share of the resources and splits the rest evenly among
    them, whether an operator uses its share or not: a light operator (a writer, a shuffle's reduce
    waiting for its map) holds CPUs the busy one cannot use. On 2 CPUs, 16 read tasks of a Parquet
    file's row groups and an image stage ran one at a time beside the writer (2.0-2.2 s; 1.25-1.30 s
    without the split), and a fresh process's dedup over 1M rows took 17.0 s (12.9-13.6 without).
    Without it an operator runs as many tasks as the cluster has room for, within Ray Data's
    backpressure (its output queue) and ``--max-cpus``.
    """
    return os.environ.get("DATAFLOW_RAY_OP_RESERVATION", "0") == "1"


def warm_workers(job: object | None = None, modules: tuple[str, ...] = WARM_MODULES) -> None:
    """Warm the connected Ray for this driver, on a background thread, once per connection.

    Ray Data's first execution in a driver process pays for what later ones reuse: the job's
    worker processes, their imports, and in the driver the executor's set-up (its stats and
    autoscaling actors, the first function export). One plain task per CPU, spread over the
    nodes, imports ``modules``, unpickles ``job`` (the compiled job: its op modules, e.g. DuckDB
    and sqlglot for the table ops, are what a stage task unpickles first) and sets up Ray Data's
    context there; the first shard's tasks then run in those warm workers. Then, unless an
    execution began meanwhile (it sets up the same itself), a tiny Dataset warms the driver's side.
    The runner starts it before it lists the inputs and plans the shards. A job that cannot be
    pickled is left out (the workers still start and import ``modules``; logged at debug level). It
    never fails a run: any other error is dropped. ``DATAFLOW_RAY_WARM_WORKERS=0`` turns it off.
    """
    if os.environ.get("DATAFLOW_RAY_WARM_WORKERS", "1") == "0":
        return
    with _INIT_LOCK:
        if _warming:
            return
        thread = threading.Thread(target=_warm, args=(modules, job), name="dataflow-warm-ray", daemon=True)
        _warming.append(thread)
        _warm_done.clear()
        _executing.clear()
    thread.start()


def warmed() -> threading.Event:
    """Set when this connection's warm-up ended (or when none runs)."""
    return _warm_done


def executing() -> None:
    """Note that an execution began: the warm-up then leaves the driver's side to it."""
    _executing.set()


def _warm(modules: tuple[str, ...], job: object | None) -> None:
    try:
        import ray

        if not ray.is_initialized():  # released meanwhile: never start a Ray of its own
            return
        cpus = max(1, int(cluster_cpus()))
        # The workers first, as plain tasks spread over the nodes (a Dataset would set up its executor before any),
        # submitted before this thread imports Ray Data: the workers start while the driver imports it.
        task = ray.remote(num_cpus=1, scheduling_strategy="SPREAD")(_warm_worker)
        job_ref = _job_ref(ray, job)
        ray.get([task.remote(modules, job_ref) for _ in range(cpus)])
        if _executing.is_set():
            return
        import ray.data

        ds = ray.data.range(cpus, override_num_blocks=cpus).map_batches(_import_modules, fn_kwargs={"modules": modules}, batch_size=None)
        ds.context.enable_progress_bars = False
        for _ in ds.iter_batches(batch_size=None):
            pass
    except Exception:  # noqa: BLE001 - a warm-up that fails leaves the run as it would be without it
        pass
    finally:
        _warm_done.set()


def _job_ref(ray, job: object | None):
    """``job`` in the object store, or None when it cannot be pickled: the workers then warm up without it."""
    try:
        return ray.put(job)
    except Exception as exc:  # noqa: BLE001 - pickling raises what the object's own __reduce__ raises (TypeError, PicklingError, ...)
        _log.debug("dataflow: the Ray warm-up goes on without the job, which cannot be pickled: %s", exc)
        return None


def _warm_worker(modules: tuple[str, ...], job: object | None) -> None:
    """In a worker: import ``modules`` (``job``, an argument, was unpickled already) and make Ray Data's context."""
    _import_modules(None, modules)
    from ray.data import DataContext

    DataContext.get_current()  # its defaults import Ray Data's issue detectors (~0.2 s), as a stage task's context does


def _import_modules(batch, modules: tuple[str, ...]):
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:  # one missing module leaves the others to import
            continue
    return batch


def cluster_cpus() -> float:
    """CPUs the connected Ray cluster reports."""
    import ray

    return float(ray.cluster_resources().get("CPU", 1.0))


def release() -> None:
    """Disconnect from the Ray ``ensure_ray`` started or joined; a local one is stopped at once (the CLI calls it when a run is done).

    ``ray.shutdown()`` stops a local Ray's processes one after another, giving each up to a second
    after SIGTERM, and at interpreter exit it first sleeps 0.5 s; a raylet given SIGTERM takes
    about a second to stop its workers. The run's output is committed by then and nothing of the
    local Ray is kept, so its processes and the raylet's children (workers, agents) are killed at
    once: 0.02 s instead of 1.2-1.4 s.
    """
    ray = sys.modules.get("ray")
    if _warming:  # a warm-up still asking Ray when it goes would print errors
        _warming.pop().join(timeout=10)
    if not _started.is_set() or ray is None or not ray.is_initialized():
        return
    _started.clear()
    from ray._private import worker

    node = worker._global_node
    if node is None or not node.is_head():  # joined a cluster: leave it running
        ray.shutdown()
        return
    node.destroy_external_storage()
    worker._global_node = None  # ray.shutdown then disconnects the driver but leaves the processes to us
    try:
        ray.shutdown()
    finally:
        _kill([i.process for infos in node.all_processes.values() for i in infos])


def _kill(processes: list[subprocess.Popen], wait_s: float = 5.0) -> None:
    """SIGKILL ``processes`` and every process they started, reap ``processes`` and wait (up to ``wait_s``) until the others are gone.

    A SIGKILL is delivered after ``kill`` returns, so a worker could still run for a moment after
    this returned; the others are not ours to reap (a dead one is a zombie until its new parent reaps it).
    """
    import psutil

    children = []
    for p in processes:
        try:
            children += psutil.Process(p.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            continue
    for child in children:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            continue
    for p in processes:
        if p.poll() is None:
            p.kill()
        p.wait()
    deadline = time.monotonic() + wait_s
    while (children := [c for c in children if _running(c)]) and time.monotonic() < deadline:
        time.sleep(0.001)  # polling the condition: each killed child gone or a zombie


def _running(process) -> bool:
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
