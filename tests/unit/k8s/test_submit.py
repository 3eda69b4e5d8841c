"""Submit, follow, read logs and delete with the real kubernetes client.

No API server runs here: the client talks over HTTP to a small server on 127.0.0.1
(``fake_apiserver.py``) that records every request and answers like the API server. It is the
only mock, and the assertions are on the exact requests (method, path, query, body) it received.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dataflow.cli.main import cli
from dataflow.errors import RunError
from dataflow.k8s.submit import job_states, kube_client, submit, wait
from tests.unit.k8s.rendering import TABLE_ONLY, THUMBNAILS, job, render

pytest.importorskip("kubernetes")

CM_PATH = "/api/v1/namespaces/data/configmaps"
RAYJOBS = "/apis/ray.io/v1/namespaces/data/rayjobs"
SPARKAPPS = "/apis/sparkoperator.k8s.io/v1beta2/namespaces/data/sparkapplications"


def _cli(*args):
    return CliRunner().invoke(cli, ["k8s", *args], catch_exceptions=False)


def _calls(api_server):
    return [(r.method, r.path, r.query) for r in api_server.requests]


def test_submit_dry_run_sends_exactly_the_rendered_objects(api_server, kubeconfig):
    result = _cli("submit", THUMBNAILS, "--namespace", "data", "--dry-run", "--kubeconfig", kubeconfig)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["ConfigMap/thumbnails-pipeline: created (dry run)", "RayJob/thumbnails: created (dry run)"]
    rendered = render(THUMBNAILS, **{"namespace": "data"})
    strict_dry = {"fieldValidation": "Strict", "dryRun": "All"}
    assert _calls(api_server) == [("POST", CM_PATH, strict_dry), ("POST", RAYJOBS, strict_dry)]
    assert [r.body for r in api_server.requests] == [json.loads(json.dumps(o)) for o in rendered.objects]
    assert api_server.objects == {}  # a dry run persists nothing


def test_submit_creates_queue_configmap_job_then_owns_the_configmap(api_server, kubeconfig, tmp_path):
    config = tmp_path / "k8s.yaml"
    config.write_text("namespace: data\nvolcano: {queue: ai-data, create_queue: true, capability: {cpu: 32}}\n")
    result = _cli("submit", TABLE_ONLY, "--cluster-config", str(config), "--kubeconfig", kubeconfig)
    assert result.exit_code == 0, result.output
    strict = {"fieldValidation": "Strict"}
    assert _calls(api_server) == [
        ("POST", "/apis/scheduling.volcano.sh/v1beta1/queues", strict),
        ("POST", CM_PATH, strict),
        ("POST", SPARKAPPS, strict),
        ("PATCH", f"{CM_PATH}/events-table-pipeline", {}),
    ]
    queue, config_map, app = render(TABLE_ONLY, config.read_text(), tmp_path).objects
    assert [r.body for r in api_server.requests[:3]] == [queue, config_map, app]
    uid = api_server.objects[f"{SPARKAPPS}/events-table"]["metadata"]["uid"]
    assert api_server.requests[3].body == {
        "metadata": {"ownerReferences": [{"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication", "name": "events-table", "uid": uid}]}
    }
    # A second submit keeps the shared queue but refuses to overwrite the earlier run's pipeline.
    again = CliRunner().invoke(cli, ["k8s", "submit", TABLE_ONLY, "--cluster-config", str(config), "--kubeconfig", kubeconfig])
    assert again.exit_code == 1
    assert "Queue/ai-data: exists, kept" in again.output
    assert 'create ConfigMap/events-table-pipeline: the API server answered 409 Conflict: configmaps "events-table-pipeline" already exists; delete the earlier run first (dataflow k8s delete)' in again.output
    assert [c[:2] for c in _calls(api_server)[4:]] == [("POST", "/apis/scheduling.volcano.sh/v1beta1/queues"), ("POST", CM_PATH)]


def test_refused_job_removes_the_configmap_it_just_created(api_server, kubeconfig):
    api_server.objects[f"{RAYJOBS}/thumbnails"] = job(render(THUMBNAILS, **{"namespace": "data"}))
    with pytest.raises(RunError, match="create RayJob/thumbnails: the API server answered 409"):
        submit(render(THUMBNAILS, **{"namespace": "data"}), kube_client(kubeconfig))
    assert _calls(api_server)[-1][:2] == ("DELETE", f"{CM_PATH}/thumbnails-pipeline")
    assert f"{CM_PATH}/thumbnails-pipeline" not in api_server.objects


def test_status_and_wait_follow_the_rayjob_until_complete(api_server, kubeconfig):
    rendered = render(THUMBNAILS, **{"namespace": "data"})
    submit(rendered, kube_client(kubeconfig))
    api_server.set_status(
        f"{RAYJOBS}/thumbnails",
        {"jobDeploymentStatus": "Initializing"},
        {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING", "rayClusterName": "thumbnails-x7k2p"},
        {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "rayClusterName": "thumbnails-x7k2p"},
    )
    result = _cli("status", THUMBNAILS, "--namespace", "data", "--kubeconfig", kubeconfig)
    assert result.output == "RayJob/thumbnails: Initializing\n"
    seen = []
    (final,) = wait(rendered, kube_client(kubeconfig), timeout=10, interval=0.01, on_change=lambda s: seen.append(str(s)))
    assert final.succeeded
    assert seen == [
        "RayJob/thumbnails: Running (jobStatus=RUNNING, rayClusterName=thumbnails-x7k2p)",
        "RayJob/thumbnails: Complete (jobStatus=SUCCEEDED, rayClusterName=thumbnails-x7k2p)",
    ]
    assert _calls(api_server)[-1] == ("GET", f"{RAYJOBS}/thumbnails/status", {})


def test_failed_spark_application_makes_wait_fail(api_server, kubeconfig):
    rendered = render(TABLE_ONLY, **{"namespace": "data"})
    submit(rendered, kube_client(kubeconfig))
    api_server.set_status(f"{SPARKAPPS}/events-table", {"applicationState": {"state": "FAILED", "errorMessage": "driver exited 1"}})
    with pytest.raises(RunError, match=r"SparkApplication/events-table: FAILED \(errorMessage=driver exited 1\)"):
        wait(rendered, kube_client(kubeconfig), timeout=10, interval=0.01)
    assert not job_states(rendered, kube_client(kubeconfig))[0].succeeded


def test_logs_of_the_submitter_and_the_spark_driver(api_server, kubeconfig):
    for pipeline in (THUMBNAILS, TABLE_ONLY):
        submit(render(pipeline, **{"namespace": "data"}), kube_client(kubeconfig))
    api_server.pods.append({"metadata": {"name": "thumbnails-abcde", "labels": {"job-name": "thumbnails"}}})
    api_server.logs.update({"thumbnails-abcde": "rows in 120, out 118\n", "events-table-driver": "spark done\n"})
    ray_logs = _cli("logs", THUMBNAILS, "--namespace", "data", "--kubeconfig", kubeconfig)
    assert ray_logs.output == "==> RayJob/thumbnails <==\nrows in 120, out 118\n"
    spark_logs = _cli("logs", TABLE_ONLY, "--namespace", "data", "--kubeconfig", kubeconfig, "--tail", "5")
    assert spark_logs.output == "==> SparkApplication/events-table <==\nspark done\n"
    assert ("GET", "/api/v1/namespaces/data/pods", {"labelSelector": "job-name=thumbnails"}) in _calls(api_server)
    assert _calls(api_server)[-1] == (
        "GET", "/api/v1/namespaces/data/pods/events-table-driver/log", {"container": "spark-kubernetes-driver", "tailLines": "5"},
    )


def test_delete_removes_job_and_configmap_and_tolerates_missing(api_server, kubeconfig):
    submit(render(THUMBNAILS, **{"namespace": "data"}), kube_client(kubeconfig))
    first = _cli("delete", THUMBNAILS, "--namespace", "data", "--kubeconfig", kubeconfig)
    assert first.output.splitlines() == ["RayJob/thumbnails: deleted", "ConfigMap/thumbnails-pipeline: deleted"]
    assert api_server.objects == {}
    assert ("DELETE", f"{RAYJOBS}/thumbnails", {"propagationPolicy": "Background"}) in _calls(api_server)
    second = _cli("delete", THUMBNAILS, "--namespace", "data", "--kubeconfig", kubeconfig)
    assert second.output.splitlines() == ["RayJob/thumbnails: not found", "ConfigMap/thumbnails-pipeline: not found"]


def test_missing_kubeconfig_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(cli, ["k8s", "status", THUMBNAILS, "--kubeconfig", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert f"kubeconfig {tmp_path / 'nope'}:" in result.output
