"""The embedded defaults, in fresh processes: with no cluster named, ``dataflow run`` starts its own.

Each test runs a subprocess with ``RAY_ADDRESS`` / ``SPARK_MASTER`` unset, so it cannot join the
test session's Ray or Spark: Ray comes up on 127.0.0.1 with its files under a temporary
``RAY_TMPDIR`` (and ``HOME``, for its auth token); Spark starts ``local[*]`` with its scratch
folder under a temporary ``TMPDIR``.
"""
from __future__ import annotations

import json
import logging
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading

import pyarrow.parquet as pq
import pytest

ROOT = pathlib.Path(__file__).parents[2]


@pytest.fixture
def fresh_env(tmp_path):
    """The environment of a process that names no cluster; temporary HOME, RAY_TMPDIR and TMPDIR."""
    # NOTE: Ray's socket paths must stay short, so its folder is not under pytest's long tmp_path.
    ray_tmp = tempfile.mkdtemp(prefix="dfray-", dir="/tmp")
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "SPARK_MASTER", "PYSPARK_SUBMIT_ARGS")}
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir()
    env.update({
        "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"), "RAY_TMPDIR": ray_tmp,
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
        "DATAFLOW_RAY_OBJECT_STORE_MEMORY": str(200 * 1024 * 1024), "PYTHONPATH": str(ROOT),
    })
    yield env, pathlib.Path(ray_tmp)
    shutil.rmtree(ray_tmp, ignore_errors=True)


def test_quickstart_starts_its_own_ray_and_prints_the_summary(fresh_env, tmp_path):
    env, ray_tmp = fresh_env
    work = tmp_path / "qs"
    # 40 images: i=7 is truncated (a row error), i=5 and i=38 are tiny (dropped by image.filter_size).
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py"), "--images", "40", "--workdir", str(work)],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=420)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith(f"generated 40 images in {work / 'images'}: {{'good': 37, 'tiny': 2, 'corrupt': 1}}")
    assert f"thumbnails on ray: published -> {work / 'thumbs'}" in out.stdout
    assert "quickstart finished in " in out.stdout and "(exit 0)" in out.stdout
    summary = {k.strip(): v.strip() for k, v in (line.strip().split("  ", 1) for line in out.stdout.splitlines() if line.startswith("  ") and "  " in line.strip())}
    assert (summary["rows read"], summary["rows written"]) == ("40", "37")
    report = json.loads((work / "report.json").read_text())
    assert (report["engine"], report["rows_in"], report["rows_out"], report["rows_errored"]) == ("ray", 40, 37, 1)
    rows = [r for f in json.loads((work / "thumbs" / "_manifest.json").read_text())["files"] for r in pq.read_table(work / "thumbs" / f["path"]).to_pylist()]
    assert len(rows) == 37 and all(max(r["width"], r["height"]) <= 256 and r["bytes"][:4] == b"RIFF" for r in rows)
    # The run's own local Ray lived under this RAY_TMPDIR: it joined no other cluster.
    assert list((ray_tmp / "ray").glob("session_2*")), sorted(p.name for p in ray_tmp.rglob("*"))[:20]
    # It started lean (session._lean_local_start): a raylet and its agents, no dashboard API server.
    logs = [p.name for p in (ray_tmp / "ray").glob("session_2*/logs/*")]
    assert "raylet.out" in logs and "dashboard_agent.log" in logs and "dashboard.log" not in logs, sorted(logs)
    # Quiet by default: Ray's own INFO / WARNING lines (Python's and its C++ core's) stay out of the output.
    assert not re.search(r"\b(INFO|WARNING)\b|^\[\d{4}-\d\d-\d\d [\d:,]+ [IWE] ", out.stderr, re.M), out.stderr


def test_dataflow_up_keeps_a_warm_local_ray_that_runs_join_until_down(fresh_env, tmp_path):
    env, ray_tmp = fresh_env
    env = {**env, "DATAFLOW_STATE_DIR": str(tmp_path / "state")}
    (tmp_path / "t.jsonl").write_text("".join(f'{{"text": "document number {i}"}}\n' for i in range(30)))
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        f"name: warm\nengine: ray\nsource: {{uri: '{tmp_path / 't.jsonl'}', format: jsonl}}\n"
        "steps:\n  - op: text.filter_length\n    params: {min_chars: 18}\n"
        f"sink: {{uri: '{tmp_path / 'out'}', format: parquet}}\n"
    )

    def dataflow(*args):
        out = subprocess.run([sys.executable, "-m", "dataflow", *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        return out

    up = dataflow("up")
    address = re.search(r"local Ray started at (127\.0\.0\.1:\d+)", up.stdout).group(1)
    try:
        assert f"already running at {address}" in dataflow("up").stdout
        run = dataflow("run", str(pipeline), "--verbose", "--json", "--set", "sink.mode=overwrite")
        assert f"Connecting to existing Ray cluster at address: {address}" in run.stderr
        assert (json.loads(run.stdout)["rows_in"], json.loads(run.stdout)["rows_out"]) == (30, 20)
        assert json.loads(dataflow("run", str(pipeline), "--quiet", "--json", "--set", "sink.mode=overwrite").stdout)["rows_out"] == 20
        # The warm cluster keeps its own temp folder: a plain ray.init() elsewhere never finds it to join.
        assert not (ray_tmp / "ray" / "ray_current_cluster").exists()
    finally:
        down = dataflow("down")
    assert f"stopped the local Ray at {address}" in down.stdout
    assert not (tmp_path / "state" / "local-ray.json").exists()
    assert "no local Ray was running" in dataflow("down").stdout


def test_a_table_pipeline_starts_its_own_local_spark(fresh_env, tmp_path):
    env, _ = fresh_env
    (tmp_path / "t.jsonl").write_text('{"link": "a", "rx": -3.0}\n{"link": "b", "rx": -9.5}\nnot json\n')
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        f"name: weak\nsource: {{uri: '{tmp_path / 't.jsonl'}', format: jsonl}}\n"
        "steps:\n  - op: table.filter_rows\n    params: {where: 'rx < -5'}\n"
        f"sink: {{uri: '{tmp_path / 'out'}', format: parquet}}\n"
    )
    out = subprocess.run([sys.executable, "-m", "dataflow", "run", str(pipeline), "--quiet", "--json"],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (report["engine"], report["rows_in"], report["rows_out"], report["rows_errored"]) == ("spark", 3, 1, 1)
    # dataflow's own local[*] session keeps its scratch under TMPDIR (a given master would not).
    assert list((tmp_path / "tmp").glob("dataflow-spark-*"))


_RELEASE = """
import json, psutil, ray
from dataflow.engines.ray.session import ensure_ray, release
ensure_ray()
ray.get([ray.remote(lambda: 1).remote() for _ in range(2)])
node = ray._private.worker._global_node
procs = [i.process for infos in node.all_processes.values() for i in infos]
raylet = node.all_processes["raylet"][0].process
children = psutil.Process(raylet.pid).children(recursive=True)  # its workers and agents
release()

def running(p):
    try:
        return p.status() != psutil.STATUS_ZOMBIE  # killed: a zombie until its new parent reaps it
    except psutil.NoSuchProcess:
        return False

print(json.dumps({"initialized": ray.is_initialized(), "alive": [p.args[0] for p in procs if p.poll() is None], "count": len(procs),
                  "children": len(children), "children_alive": [c.pid for c in children if running(c)]}))
"""


def test_release_stops_the_local_ray_it_started_before_the_process_exits(fresh_env):
    env, _ = fresh_env
    out = subprocess.run([sys.executable, "-c", _RELEASE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["count"] >= 3 and result["alive"] == [] and not result["initialized"], result
    assert result["children"] >= 1 and result["children_alive"] == [], result


def test_release_leaves_a_ray_it_did_not_start_running(ray_local):
    from dataflow.engines.ray.session import release

    release()
    assert ray_local.is_initialized() and ray_local.get(ray_local.remote(lambda: 2).remote()) == 2


def test_the_worker_warm_up_imports_the_stage_modules_in_the_workers_once(ray_local, monkeypatch):
    from dataflow.engines.ray import session

    probe = pathlib.Path(tempfile.gettempdir()) / "dataflow-warm-probe"
    shutil.rmtree(probe, ignore_errors=True)
    monkeypatch.setattr(session, "_warming", [])
    monkeypatch.setenv("DATAFLOW_RAY_WARM_WORKERS", "0")
    session.warm_workers(modules=("tests.warm_probe",))
    assert session._warming == []  # turned off: no warm-up
    monkeypatch.delenv("DATAFLOW_RAY_WARM_WORKERS")
    session.warm_workers(modules=("tests.warm_probe",))
    session.warm_workers(modules=("tests.warm_probe",))  # once per connection
    assert len(session._warming) == 1
    session._warming[0].join(timeout=120)
    assert not session._warming[0].is_alive()
    pids = {int(p.name) for p in probe.iterdir()}
    assert pids and os.getpid() not in pids  # imported in workers, not in the driver


def test_the_worker_warm_up_unpickles_the_job_so_its_modules_are_imported_in_the_workers(ray_local, monkeypatch):
    """What a stage task unpickles first (the job's op modules) is imported by the warm-up, in the workers the first shard's tasks get."""
    from dataflow.engines.ray import session
    from tests import warm_job_probe

    shutil.rmtree(warm_job_probe.PROBE_DIR)  # the driver's own import
    monkeypatch.setattr(session, "_warming", [])
    session.warm_workers(warm_job_probe.ProbeJob(), modules=())
    session._warming[0].join(timeout=120)
    pids = {int(p.name) for p in warm_job_probe.PROBE_DIR.iterdir()} if warm_job_probe.PROBE_DIR.exists() else set()
    assert pids and os.getpid() not in pids  # the job's module was imported in workers, by unpickling the job


def test_a_job_that_cannot_be_pickled_still_gets_the_workers_warmed(ray_local, monkeypatch, caplog):
    """The job is left out, which is said at debug level; the workers still start and import the modules."""
    from dataflow.engines.ray import session

    probe = pathlib.Path(tempfile.gettempdir()) / "dataflow-warm-fallback-probe"
    shutil.rmtree(probe, ignore_errors=True)
    monkeypatch.setattr(session, "_warming", [])
    with caplog.at_level(logging.DEBUG, logger=session.__name__):
        session.warm_workers(threading.Lock(), modules=("tests.warm_fallback_probe",))  # a lock does not pickle
        session._warming[0].join(timeout=120)
    pids = {int(p.name) for p in probe.iterdir()} if probe.exists() else set()
    assert pids and os.getpid() not in pids  # imported in workers, not in the driver
    assert any("cannot be pickled" in r.getMessage() for r in caplog.records)


def test_a_failing_warm_up_never_fails(ray_local, monkeypatch):
    from dataflow.engines.ray import session

    monkeypatch.setattr(session, "_warming", [])
    session.warm_workers(modules=("dataflow_no_such_module",))
    session._warming[0].join(timeout=120)
    assert not session._warming[0].is_alive() and ray_local.is_initialized()


def test_the_engine_lets_ray_data_read_the_cluster_resources_promptly(ray_local):
    """Ray 2.60 re-reads them once a second, running a single task until then (see ``session.prompt_resource_limits``); a Ray without the setting is left alone and fails here."""
    from ray.data._internal.execution.resource_manager import ResourceManager

    from dataflow.engines.base import RunOptions
    from dataflow.engines.ray.engine import RayEngine
    from dataflow.engines.ray.session import LIMITS_REFRESH_S

    RayEngine().start(RunOptions(progress=False))
    assert ResourceManager.GLOBAL_LIMITS_UPDATE_INTERVAL_S == LIMITS_REFRESH_S


def _meet(batch, folder: str, timeout: float = 30.0):
    """A task that marks its start in ``folder`` and waits (up to ``timeout``) for the other task's mark: whether they met."""
    import pathlib
    import time

    here = pathlib.Path(folder)
    (here / str(int(batch["id"][0]))).touch()
    deadline = time.monotonic() + timeout
    while len(list(here.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # polling the condition: the other task's mark
    return {"met": [len(list(here.iterdir())) == 2] * len(batch["id"])}


def test_an_execution_runs_tasks_side_by_side_from_its_start(ray_local, tmp_path, monkeypatch):
    """Ray 2.60 asks for an execution's resources without waiting and reads limits of zero at first (one task); the first read is the cluster's (``session._FirstReadSeeded``).

    The refresh of the limits is turned off here, so only that first read lets the second task start while the first runs.
    """
    from ray.data._internal.execution.resource_manager import ResourceManager

    from dataflow.engines.base import RunOptions
    from dataflow.engines.ray.engine import RayEngine

    RayEngine().start(RunOptions(progress=False))
    monkeypatch.setattr(ResourceManager, "GLOBAL_LIMITS_UPDATE_INTERVAL_S", 1e9)
    ds = ray_local.data.range(2, override_num_blocks=2).map_batches(_meet, fn_kwargs={"folder": str(tmp_path)}, batch_size=1)
    assert [r["met"] for r in ds.take_all()] == [True, True]


def _same(batch):
    return batch


def test_an_operator_runs_tasks_side_by_side_beside_a_light_one(ray_local, tmp_path, monkeypatch):
    """Ray Data 2.60 splits the CPUs among a Dataset's operators: two tasks of the first of two operators on 2 CPUs ran one at a
    time, the second operator's share unused (``session.operators_share_resources``); ``DATAFLOW_RAY_OP_RESERVATION=1`` brings the split back."""
    from dataflow.engines.base import RunOptions
    from dataflow.engines.ray.engine import RayEngine

    assert ray_local.cluster_resources().get("CPU") == 2
    monkeypatch.delenv("DATAFLOW_RAY_OP_RESERVATION", raising=False)
    RayEngine().start(RunOptions(progress=False))
    ds = ray_local.data.range(2, override_num_blocks=2).map_batches(_meet, fn_kwargs={"folder": str(tmp_path)}, batch_size=1)
    ds = ds.map_batches(_same, batch_size=None, num_cpus=0.5)  # other resources: a second operator, not fused with the first
    assert [r["met"] for r in ds.take_all()] == [True, True]


def test_the_operator_split_comes_back_when_asked(ray_local, monkeypatch):
    from ray.data import DataContext

    from dataflow.engines.base import RunOptions
    from dataflow.engines.ray.engine import RayEngine

    monkeypatch.setenv("DATAFLOW_RAY_OP_RESERVATION", "1")
    try:
        RayEngine().start(RunOptions(progress=False))
        assert DataContext.get_current().op_resource_reservation_enabled is True
    finally:
        monkeypatch.delenv("DATAFLOW_RAY_OP_RESERVATION")
        RayEngine().start(RunOptions(progress=False))  # the session's Ray goes on without the split
    assert DataContext.get_current().op_resource_reservation_enabled is False
