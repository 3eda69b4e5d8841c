"""CLI paths of the broker that need no live cluster: usage errors, spec errors, unreachable clusters, the entrypoint."""
from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from dataflow.broker.jobs import JobSubmission, entrypoint
from dataflow.cli.main import cli
from tests.datagen import write_images

UNREACHABLE = """\
clusters:
  - name: train-a
    kind: ray
    address: http://127.0.0.1:9
  - name: train-b
    kind: ray
    address: http://127.0.0.1:9
    windows: ["{closed}"]
    timezone: UTC
"""


def _pipeline(tmp_path):
    write_images(tmp_path / "images", 2, size=(32, 24))
    path = tmp_path / "p.yaml"
    path.write_text(f"name: p\nsource: {{uri: '{tmp_path / 'images'}', format: image}}\nsteps: [{{op: image.decode}}]\nsink: {{uri: '{tmp_path / 'out'}'}}\n")
    return path


def _fleet(tmp_path):
    import datetime as dt

    now = dt.datetime.now(dt.timezone.utc)
    closed = f"{now + dt.timedelta(hours=1):%H:%M}-{now + dt.timedelta(hours=2):%H:%M}"
    path = tmp_path / "clusters.yaml"
    path.write_text(UNREACHABLE.format(closed=closed))
    return path, closed


def test_nothing_reachable_exits_2_with_each_clusters_reason(tmp_path):
    fleet, closed = _fleet(tmp_path)
    result = CliRunner().invoke(cli, ["run", str(_pipeline(tmp_path)), "--cluster", "auto", "--clusters", str(fleet)])
    assert result.exit_code == 2, result.output
    assert "error: no cluster can run 'p' now" in result.output
    assert "train-a  no      unreachable at http://127.0.0.1:9" in result.output
    assert f"train-b  no      window closed ({closed} UTC" in result.output
    assert not (tmp_path / "out").exists()


def test_clusters_table_marks_unreachable_and_closed_clusters(tmp_path):
    fleet, closed = _fleet(tmp_path)
    result = CliRunner().invoke(cli, ["clusters", "--clusters", str(fleet)])
    assert result.exit_code == 0, result.output
    header, a, b, footer = result.output.splitlines()
    assert header.split() == ["CLUSTER", "KIND", "WINDOW", "TOTAL", "IDLE", "LENDABLE", "NOW", "NOTE"]
    assert a.split()[:6] == ["train-a", "ray", "always", "-", "-", "-"] and "unreachable" in a
    assert f"closed {closed}" in b and footer.startswith("probed 2 clusters in ")


def test_usage_and_spec_errors_exit_2(tmp_path, monkeypatch):
    monkeypatch.delenv("DATAFLOW_CLUSTERS", raising=False)
    pipeline = _pipeline(tmp_path)
    fleet, _ = _fleet(tmp_path)
    runner = CliRunner()
    flag_only = runner.invoke(cli, ["run", str(pipeline), "--wait"])
    assert flag_only.exit_code == 2 and "go with --cluster auto|NAME" in flag_only.output
    typo = runner.invoke(cli, ["run", str(pipeline), "--cluster", "trian-a", "--clusters", str(fleet)])
    assert typo.exit_code == 2 and "did you mean 'train-a'?" in typo.output
    sharded = runner.invoke(cli, ["run", str(pipeline), "--cluster", "auto", "--clusters", str(fleet), "--shard", "0/2"])
    assert sharded.exit_code == 2 and "--shard" in sharded.output
    local = runner.invoke(cli, ["run", str(pipeline), "--cluster", "auto", "--clusters", str(fleet), "--stream-shards", "--shuffle-partitions", "8"])
    assert local.exit_code == 2 and "--shuffle-partitions, --stream-shards configure a local engine; they do not combine with --cluster" in local.output
    no_file = runner.invoke(cli, ["clusters"])
    assert no_file.exit_code == 2 and "pass --clusters FILE or set DATAFLOW_CLUSTERS" in no_file.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("clusters:\n  - name: x\n    kind: ray\n    adress: http://h:8265\n")
    spec_error = runner.invoke(cli, ["clusters", "--clusters", str(bad)])
    assert spec_error.exit_code == 2 and f"{bad}:4:5: clusters[0].adress: unknown key of cluster 'x'" in spec_error.output


def test_jobs_status_names_the_clusters_asked(tmp_path):
    fleet, _ = _fleet(tmp_path)
    result = CliRunner().invoke(cli, ["jobs", "status", "dataflow-p-00000000", "--clusters", str(fleet)])
    assert result.exit_code == 1
    assert "no cluster has job dataflow-p-00000000 (asked train-a, train-b; unreachable: train-a" in result.output


def test_the_remote_entrypoint_carries_the_lent_share():
    sub = JobSubmission("p", "name: p\n", "k", 2, max_cpus=1.5, max_gpus=1, restart=True, cache_dir="/mnt/cache dir")
    assert entrypoint(sub) == "python -m dataflow run pipeline.yaml --max-cpus 1.5 --max-gpus 1 --restart --cache-dir '/mnt/cache dir'"


def test_broker_modules_never_load_ray_data_or_pyspark():
    code = (
        "import sys, dataflow.broker.clusters, dataflow.broker.capacity, dataflow.broker.placement, dataflow.broker.watch, "
        "dataflow.broker.remote_run, dataflow.broker.jobs, dataflow.cli.clusters\n"
        "import dataflow.broker.jobs as j; import ray.job_submission\n"
        "print(sorted(m for m in sys.modules if m in ('ray.data', 'pyspark')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


FITTING = """\
clusters:
  - name: train-a
    kind: ray
    address: http://127.0.0.1:9
watch: {poll_seconds: 0.01, grace_seconds: 1, cooldown_seconds: 1}
"""


def _capacity(idle_cpus: float):
    from dataflow.broker.capacity import Amount, Capacity, NodeCapacity

    total, idle = Amount(2.0, 0.0, 4e9), Amount(idle_cpus, 0.0, 4e9)
    return {"train-a": Capacity("train-a", "ray", total=total, idle=idle, nodes=(NodeCapacity("n1", total, idle),))}


def test_wait_probes_again_until_a_cluster_fits_then_submits_there(tmp_path, monkeypatch):
    """Probes are replayed (busy, busy, then free); the submission is recorded instead of sent to a cluster."""
    import dataflow.broker.remote_run as remote_run
    from dataflow.errors import RunError

    fleet = tmp_path / "clusters.yaml"
    fleet.write_text(FITTING)
    probes = iter([_capacity(0.0), _capacity(0.0), _capacity(2.0)])
    submitted = []

    def submit(cluster, sub):
        submitted.append((cluster.name, sub.max_cpus))
        raise RunError(f"cluster '{cluster.name}' refused job (recorded)")

    monkeypatch.setattr(remote_run, "probe_all", lambda _fleet: next(probes))
    monkeypatch.setattr(remote_run, "submit_job", submit)
    result = CliRunner().invoke(cli, ["run", str(_pipeline(tmp_path)), "--cluster", "auto", "--clusters", str(fleet), "--wait"])
    assert result.exit_code == 1, result.output
    assert result.output.count("dataflow: waiting for capacity (checking every 0.01 s)") == 1  # the same reasons are said once
    assert "train-a  no      needs 1 CPU for one worker, lends 0" in result.output
    assert submitted == [("train-a", 2.0)] and next(probes, None) is None
    assert "error: cluster 'train-a' refused job (recorded)" in result.output


def test_explain_prints_the_chosen_cluster_and_exits_0_without_submitting(tmp_path, monkeypatch):
    import dataflow.broker.capacity as capacity
    import dataflow.broker.remote_run as remote_run

    fleet = tmp_path / "clusters.yaml"
    fleet.write_text(FITTING)
    monkeypatch.setattr(capacity, "probe_all", lambda _fleet: _capacity(2.0))
    monkeypatch.setattr(remote_run, "submit_job", lambda *a: pytest.fail("--explain submitted a job"))
    result = CliRunner().invoke(cli, ["run", str(_pipeline(tmp_path)), "--cluster", "auto", "--clusters", str(fleet), "--explain"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("placement of 'p' (")
    assert "train-a  chosen  fits: lends 2 CPU" in result.output and "chosen: priority 0" in result.output
    assert not (tmp_path / "out").exists()
