"""The resource broker against two real Ray clusters on 127.0.0.1 (``ray start --head``, 1 CPU each, token auth).

Each cluster has its own ports, temp dir and ``HOME`` (its token is ``$HOME/.ray/auth_token``); the
broker reaches them only over HTTP (dashboard and Job API) with the bearer token. The tests stop
only the processes these clusters started.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime as dt
import hashlib
import json
import os
import pathlib
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataflow.cli.main import cli
from tests.datagen import write_images

MOVE_ROUNDS = int(os.environ.get("DATAFLOW_MOVE_ROUNDS", "1"))
# A shard an image: the run on a must outlast the stop (its poll, SIGTERM, exit: ~2-3 s) after its first shard commits;
# with 24 shards 20 were committed by then (a runs at ~0.1 s a shard) and under load the run could end first.
IMAGES = 96
PIPELINE = """\
version: 1
name: borrowed
source:
  uri: "{src}"
  format: image
  options: {{files_per_shard: 1}}
steps:
  - op: image.decode
  - op: image.resize
    params: {{max_side: 32}}
  - op: image.encode
    params: {{format: png}}
sink: {{uri: "{out}", format: parquet, rows_per_file: 2}}
"""


@dataclasses.dataclass
class LocalCluster:
    """One ``ray start --head`` cluster started by this module."""

    name: str
    root: str
    address: str
    gcs_port: int
    token_file: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {pathlib.Path(self.token_file).read_text().strip()}"}


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _worker_ranges(count: int, size: int = 40) -> list[int]:
    """Bases of ``count`` disjoint worker-port ranges below the ephemeral range (so no bind(0) port lands inside)."""
    base = 20000 + secrets.randbelow(90) * 100
    for start in range(base, base + 10000, 100 * count):
        try:
            for port in range(start, start + 100 * count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return [start + 100 * i for i in range(count)]
    raise RuntimeError("no free worker port range between 20000 and 30000")


def _start_cluster(name: str, ports: list[int], worker: int) -> LocalCluster:
    root = tempfile.mkdtemp(prefix=f"dfb-{name}-", dir="/tmp")  # short: Ray's socket paths must stay under 108 bytes
    home = pathlib.Path(root, "home")
    (home / ".ray").mkdir(parents=True)
    token_file = home / ".ray" / "auth_token"
    token_file.write_text(secrets.token_hex(32))
    gcs, dash, client, agent, agent_grpc, metrics, runtime_env, node_mgr, obj_mgr = ports
    env = {**os.environ, "HOME": str(home), "RAY_AUTH_MODE": "token", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    cmd = [
        sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--node-ip-address=127.0.0.1", "--dashboard-host=127.0.0.1",
        f"--port={gcs}", f"--dashboard-port={dash}", f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent}",
        f"--dashboard-agent-grpc-port={agent_grpc}", f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={runtime_env}",
        f"--node-manager-port={node_mgr}", f"--object-manager-port={obj_mgr}", f"--min-worker-port={worker}", f"--max-worker-port={worker + 40}",
        f"--temp-dir={root}/ray", "--num-cpus=1", "--memory=1000000000", "--object-store-memory=200000000", "--disable-usage-stats",
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    cluster = LocalCluster(name, root, f"http://127.0.0.1:{dash}", gcs, str(token_file))
    if done.returncode != 0:
        _stop_cluster(cluster)
        raise RuntimeError(f"ray start for {name} failed: {done.stderr[-2000:]}")
    deadline = time.monotonic() + 60
    while True:  # the Job API answers, and the GCS has a load report (what the broker probes), a little after `ray start` returns
        try:
            urllib.request.urlopen(urllib.request.Request(f"{cluster.address}/api/jobs/", headers=cluster.headers()), timeout=5)
            with urllib.request.urlopen(urllib.request.Request(f"{cluster.address}/api/cluster_status", headers=cluster.headers()), timeout=5) as r:
                report = ((json.load(r).get("data") or {}).get("clusterStatus") or {}).get("loadMetricsReport") or {}
            if report.get("usageByNode"):
                return cluster
        except OSError:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise TimeoutError(f"cluster {name} reports no nodes after 60 s")
        time.sleep(0.5)


def _stop_cluster(cluster: LocalCluster) -> None:
    """Stop the processes whose command line names this cluster's temp dir, their children, and its client server."""
    import psutil

    mine = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if cluster.root in cmd or ("ray.util.client.server" in cmd and f"--address=127.0.0.1:{cluster.gcs_port} " in cmd + " "):
            mine.append(proc)
    procs = set(mine)
    for proc in mine:
        try:
            procs.update(proc.children(recursive=True))
        except psutil.NoSuchProcess:
            continue
    for proc in procs:
        try:
            proc.terminate()
        except psutil.NoSuchProcess:
            continue
    _, alive = psutil.wait_procs(list(procs), timeout=15)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            continue
    shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.fixture(scope="module")
def two_clusters():
    """Clusters ``a`` and ``b``, started side by side; stopped (only their processes) at the end of the module.

    On a loaded machine a raylet can miss Ray's fixed 30 s registration deadline; a cluster that
    failed to start is started once more, alone, on fresh ports.
    """
    names = ("a", "b")
    ports, workers = _free_ports(18), _worker_ranges(2)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = dict(zip(names, (pool.submit(_start_cluster, n, ports[9 * i : 9 * i + 9], workers[i]) for i, n in enumerate(names))))
    started = {n: f.result() for n, f in futures.items() if f.exception() is None}
    try:
        for name in (n for n in names if n not in started):
            started[name] = _start_cluster(name, _free_ports(9), _worker_ranges(1)[0])
        yield started
    finally:
        for c in started.values():
            _stop_cluster(c)


def _fleet_yaml(clusters: dict[str, LocalCluster], extra: dict[str, str] | None = None) -> str:
    """A clusters.yaml for the local pair; ``a`` ranks first (priority 10) unless it cannot lend."""
    lines = ["clusters:"]
    for name, priority in (("a", 10), ("b", 0)):
        c = clusters[name]
        lines += [f"  - name: {name}", "    kind: ray", f"    address: {c.address}", f"    token_file: {c.token_file}", f"    priority: {priority}"]
        lines += [f"    {line}" for line in (extra or {}).get(name, "").splitlines()]
    lines.append("watch: {poll_seconds: 0.5, grace_seconds: 5, cooldown_seconds: 600}")
    return "\n".join(lines) + "\n"


def _digest(sink: pathlib.Path) -> list[tuple[str, str]]:
    """Every output row as (source, hash of its bytes), sorted; a duplicate would show twice."""
    manifest = json.loads((sink / "_manifest.json").read_text())
    rows = []
    for f in manifest["files"]:
        for r in pq.read_table(sink / f["path"], columns=["__source__", "bytes"]).to_pylist():
            rows.append((r["__source__"], hashlib.sha1(r["bytes"]).hexdigest()))
    return sorted(rows)


def _probe_json(fleet: pathlib.Path) -> dict:
    result = CliRunner().invoke(cli, ["clusters", "--clusters", str(fleet), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _idle_cpus(fleet: pathlib.Path) -> dict[str, float] | None:
    """Idle CPUs per cluster, or None while a cluster's probe has no figures (Ray's status report can be briefly empty)."""
    clusters = _probe_json(fleet)["clusters"]
    return None if any(c["error"] for c in clusters) else {c["cluster"]: c["idle"]["cpus"] for c in clusters}


def _wait_for(what, check, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def _cli_env() -> dict[str, str]:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    return env


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("broker") / "images"
    write_images(folder, IMAGES, size=(120, 90))
    return folder


@pytest.fixture(scope="module")
def fleet_file(two_clusters, tmp_path_factory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("fleet") / "clusters.yaml"
    path.write_text(_fleet_yaml(two_clusters))
    return path


@pytest.fixture(scope="module")
def saturated_run(two_clusters, fleet_file, images, tmp_path_factory):
    """A blocking job holds a's only CPU; `dataflow clusters` shows it live; the pipeline lands on b (the clean reference)."""
    from ray.job_submission import JobSubmissionClient

    a = two_clusters["a"]
    client = JobSubmissionClient(a.address, headers=a.headers())
    blocker = client.submit_job(entrypoint="sleep 600", entrypoint_num_cpus=1)
    try:
        table_before = CliRunner().invoke(cli, ["clusters", "--clusters", str(fleet_file)]).output
        idle = _wait_for("a's CPU to show as taken", lambda: (lambda d: d if d and d["a"] == 0 else None)(_idle_cpus(fleet_file)))
        table_busy = _wait_for("a table with figures for both", lambda: (lambda t: t if "no nodes yet" not in t else None)(
            CliRunner().invoke(cli, ["clusters", "--clusters", str(fleet_file)]).output))
        out = tmp_path_factory.mktemp("saturated") / "out"
        pipeline = out.parent / "p.yaml"
        pipeline.write_text(PIPELINE.format(src=images, out=out))
        report = out.parent / "report.json"
        start = time.monotonic()
        result = CliRunner().invoke(cli, ["run", str(pipeline), "--cluster", "auto", "--clusters", str(fleet_file), "--report", str(report), "--quiet"])
        wall = time.monotonic() - start
    finally:
        stopped = CliRunner().invoke(cli, ["jobs", "stop", blocker, "--clusters", str(fleet_file)])  # by id; the CLI finds it on a
    free = _wait_for("a's CPU to be idle again", lambda: (lambda d: d if d and d["a"] == 1 else None)(_idle_cpus(fleet_file)))
    return {"result": result, "out": out, "report": report, "idle_busy": idle, "idle_free": free, "table_before": table_before,
            "table_busy": table_busy, "wall": wall,
            "stopped": stopped, "blocker": blocker}


def test_clusters_table_shows_both_clusters_with_live_idle_figures(saturated_run, fleet_file):
    lines = {line.split()[0]: line for line in saturated_run["table_busy"].splitlines()[1:3]}
    assert set(lines) == {"a", "b"}
    assert lines["a"].split()[2:7] == ["always", "1", "CPU,", "0.9", "GiB"]  # window, then total
    assert "0 CPU" in lines["a"] and "1 CPU, 0.9 GiB  1 CPU, 0.9 GiB  1 CPU, 0.9 GiB" in lines["b"]
    assert saturated_run["idle_busy"] == {"a": 0.0, "b": 1.0} and saturated_run["idle_free"]["a"] == 1.0
    assert saturated_run["stopped"].output.strip() == f"{saturated_run['blocker']} on 'a': STOPPED"
    probe = _probe_json(fleet_file)
    each = ", ".join(f"{c['cluster']} {c['seconds'] * 1000:.0f} ms" for c in probe["clusters"])
    print(f"\nprobe of 2 clusters: {probe['probe_seconds'] * 1000:.0f} ms ({each})")
    assert probe["probe_seconds"] < 5


def test_saturated_cluster_sends_the_pipeline_to_the_other(saturated_run, images):
    result = saturated_run["result"]
    assert result.exit_code == 0, result.output
    report = json.loads(saturated_run["report"].read_text())
    verdicts = {v["cluster"]: v for v in report["broker"]["placement"]["verdicts"]}
    assert report["broker"]["placement"]["chosen"] == "b" and not report["broker"]["moves"]
    assert "needs 1 CPU for one worker, lends 0" in verdicts["a"]["reasons"][0]
    assert [j["cluster"] for j in report["broker"]["jobs"]] == ["b"] and report["broker"]["jobs"][0]["status"] == "SUCCEEDED"
    assert report["rows_out"] == IMAGES and report["published"]
    assert len(_digest(saturated_run["out"])) == IMAGES
    # The report in the sink carries the broker's record too.
    assert json.loads((saturated_run["out"] / "_dataflow" / "report.json").read_text())["broker"]["jobs"][0]["cluster"] == "b"
    print(f"\nbrokered run on b: {saturated_run['wall']:.1f} s end to end")


def _close_window_of_a(fleet: pathlib.Path, clusters) -> None:
    """Give a a window (UTC) that ended a second ago: the watcher re-reads the file and must give a back."""
    now = dt.datetime.now(dt.timezone.utc)
    span = f"{(now - dt.timedelta(hours=2)):%H:%M:%S}-{(now - dt.timedelta(seconds=1)):%H:%M:%S}"
    fleet.write_text(_fleet_yaml(clusters, {"a": f"windows: ['{span}']\ntimezone: UTC"}))


@pytest.mark.parametrize("round_", range(MOVE_ROUNDS), ids=[f"round-{i}" for i in range(MOVE_ROUNDS)])
def test_window_closing_mid_run_moves_the_job_and_output_equals_a_clean_run(two_clusters, saturated_run, images, tmp_path, round_):
    clean = _digest(saturated_run["out"])
    fleet = tmp_path / "clusters.yaml"
    fleet.write_text(_fleet_yaml(two_clusters))
    out = tmp_path / "out"
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(PIPELINE.format(src=images, out=out))
    report = tmp_path / "report.json"
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "dataflow", "run", str(pipeline), "--cluster", "auto", "--clusters", str(fleet), "--report", str(report)],
                            env=_cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    markers = out / "_dataflow" / "progress"
    try:
        _wait_for("a first committed shard on a", lambda: proc.poll() is not None or (markers.exists() and any(markers.glob("*.json"))), timeout=180)
        assert proc.poll() is None, f"the run ended before the window closed: {proc.communicate()}"
        _close_window_of_a(fleet, two_clusters)
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    wall = time.monotonic() - start
    assert proc.returncode == 0, stderr[-3000:]
    data = json.loads(report.read_text())
    moves, jobs = data["broker"]["moves"], data["broker"]["jobs"]
    assert [(m["from_cluster"], m["to_cluster"]) for m in moves] == [("a", "b")], moves
    assert moves[0]["reason"].startswith("window closed") and moves[0]["stopped_status"] == "STOPPED"
    assert [(j["cluster"], j["status"]) for j in jobs] == [("a", "STOPPED"), ("b", "SUCCEEDED")]
    # What the CLI said on stderr: where it submitted, why it gave a back, and the job logs it streamed.
    assert f"dataflow: submitted on 'a' as job {jobs[0]['job_id']}" in stderr
    assert "dataflow: giving 'a' back (window closed" in stderr and f"stopping job {jobs[0]['job_id']}" in stderr
    assert f"dataflow: resumed on 'b' as job {jobs[1]['job_id']}" in stderr
    assert re.search(rf"^dataflow: resuming: \d+ of {IMAGES} shards already committed$", stderr, re.M), stderr[-3000:]  # streamed from b's job log
    assert _digest(out) == clean  # complete and duplicate-free: equal to the uninterrupted run
    assert not markers.exists() and (out / "_SUCCESS").exists()
    logs = CliRunner().invoke(cli, ["jobs", "logs", jobs[1]["job_id"], "--clusters", str(fleet)])
    resumed = next(line for line in logs.output.splitlines() if "resuming:" in line)
    assert int(resumed.split("resuming:")[1].split()[0]) >= 1, resumed  # b resumed from a's markers, not from scratch
    status = CliRunner().invoke(cli, ["jobs", "status", jobs[0]["job_id"], "--clusters", str(fleet), "--json"])
    assert json.loads(status.output)["status"] == "STOPPED" and json.loads(status.output)["cluster"] == "a"
    listed = CliRunner().invoke(cli, ["jobs", "list", "--clusters", str(fleet)]).output
    assert jobs[0]["job_id"] in listed and jobs[1]["job_id"] in listed
    print(f"\nmove a -> b: stop {moves[0]['stop_seconds']:.1f} s, resubmitted {moves[0]['resubmit_seconds']:.1f} s after the decision; "
          f"{resumed.strip()}; whole run {wall:.1f} s")


def test_nothing_fits_exits_2_with_a_reason_per_cluster(two_clusters, images, tmp_path):
    fleet = tmp_path / "clusters.yaml"
    now = dt.datetime.now(dt.timezone.utc)
    closed = f"{(now + dt.timedelta(hours=1)):%H:%M}-{(now + dt.timedelta(hours=2)):%H:%M}"
    fleet.write_text(_fleet_yaml(two_clusters, {"a": f"windows: ['{closed}']\ntimezone: UTC", "b": "reserve: {num_cpus: 1}"}))
    # b's CPU idle again: the job the test before ran there has ended, but its worker's lease may come back a moment later.
    _wait_for("b's CPU to be idle", lambda: (lambda d: d if d and d["b"] == 1 else None)(_idle_cpus(fleet)))
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(PIPELINE.format(src=images, out=tmp_path / "out"))
    result = CliRunner().invoke(cli, ["run", str(pipeline), "--cluster", "auto", "--clusters", str(fleet)])
    assert result.exit_code == 2, result.output
    assert "no cluster can run 'borrowed' now" in result.output
    assert f"a  no      window closed ({closed} UTC" in result.output
    assert "b  no      needs 1 CPU for one worker, lends 0 (idle 1 CPU" in result.output and "reserve 1 CPU" in result.output
    assert not (tmp_path / "out").exists()


def test_explain_names_the_missing_gpu_model_and_submits_nothing(two_clusters, images, tmp_path):
    fleet = tmp_path / "clusters.yaml"
    fleet.write_text(_fleet_yaml(two_clusters))
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(PIPELINE.format(src=images, out=tmp_path / "out"))
    args = ["run", str(pipeline), "--cluster", "auto", "--clusters", str(fleet), "--explain", "--set", "steps[1].resources.num_gpus=1", "--gpu-type", "A100"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert "a  no      needs 1 A100 GPU for one worker, lends 0" in result.output
    assert not (tmp_path / "out").exists()


def test_stage_concurrency_is_clamped_to_the_lent_cpus():
    from ray.data import DataContext, ExecutionResources

    from dataflow.engines.ray.compile import RayStage
    from dataflow.engines.ray.run import _stage_kwargs

    ctx = DataContext.get_current()
    saved = ctx.execution_options.resource_limits
    try:
        ctx.execution_options.resource_limits = ExecutionResources.for_limits(cpu=1.5)
        pool = RayStage(name="stage-1", label="x", calls=(), compute="actors", batch_size=8, num_cpus=0.5, concurrency=8)
        assert _stage_kwargs(pool)["concurrency"] == 3
        tasks = RayStage(name="stage-1", label="x", calls=(), compute="tasks", batch_size=8)
        assert "concurrency" not in _stage_kwargs(tasks)  # Ray Data keeps tasks within the limits itself
    finally:
        ctx.execution_options.resource_limits = saved
