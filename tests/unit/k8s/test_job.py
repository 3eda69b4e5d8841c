"""``--target job``: a map-only pipeline as a batch/v1 Indexed Job of shards plus a suspended commit Job.

The rendered Jobs are validated strictly (unknown keys rejected) against the Kubernetes core
OpenAPI schemas that kubernetes-validate ships, offline. Submitting talks to the recording API
server on 127.0.0.1 (``fake_apiserver.py``), the only mock: the assertions are on the exact
requests it received.
"""
from __future__ import annotations

import json
import pathlib

import pytest
import yaml
from click.testing import CliRunner

from dataflow.cli.main import cli
from dataflow.errors import PlanError, RunError
from dataflow.k8s.config import load_cluster_config
from dataflow.k8s.controller_rules import object_rule_errors
from dataflow.k8s.job import MIN_KUBERNETES
from dataflow.k8s.render import ManifestError, render_pipeline
from tests.unit.k8s.rendering import GPU_RESIZE, MIXED, ROOT, TABLE_ONLY, THUMBNAILS

kubernetes_validate = pytest.importorskip("kubernetes_validate")

JOBS = "/apis/batch/v1/namespaces/data/jobs"
CM_PATH = "/api/v1/namespaces/data/configmaps"
S3_OUT = {"DATAFLOW_OUT": "s3://media/thumbs", "DATAFLOW_DATA": "s3://media/raw"}


def _render(pipeline: str, config_yaml: str = "", tmp_path: pathlib.Path | None = None, **overrides):
    config_file = None
    if config_yaml:
        config_file = str(tmp_path / "k8s.yaml")
        pathlib.Path(config_file).write_text(config_yaml)
    return render_pipeline(pipeline, load_cluster_config(config_file, **overrides), config_file=config_file, target="job")


def _thumbnails(**overrides):
    return _render(THUMBNAILS, **{"env": S3_OUT, **overrides})


def _pod(job: dict) -> dict:
    return job["spec"]["template"]["spec"]


def _container(job: dict) -> dict:
    (only,) = _pod(job)["containers"]
    return only


def _validate(obj: dict, version: str) -> str:
    return kubernetes_validate.validate(obj, version, strict=True)


def test_thumbnails_renders_pipeline_configmap_indexed_job_and_suspended_commit_job():
    rendered = _thumbnails()
    config_map, shards, commit = rendered.objects
    assert (config_map["kind"], config_map["data"]) == ("ConfigMap", {"pipeline.yaml": pathlib.Path(THUMBNAILS).read_text()})
    assert rendered.jobs == (shards, commit)
    assert [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in rendered.jobs] == [
        ("batch/v1", "Job", "thumbnails"), ("batch/v1", "Job", "thumbnails-commit"),
    ]
    spec = shards["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"], spec["backoffLimitPerIndex"]) == ("Indexed", 8, 4, 2)
    assert "backoffLimit" not in spec and "suspend" not in spec
    assert spec["podFailurePolicy"]["rules"] == [
        {"action": "FailJob", "onExitCodes": {"containerName": "dataflow", "operator": "In", "values": [2]}},
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
    ]
    assert _pod(shards)["restartPolicy"] == "Never"  # what backoffLimitPerIndex and podFailurePolicy require
    assert _container(shards)["command"] == ["dataflow", "run", "/etc/dataflow/pipeline.yaml", "--shard", "$(JOB_COMPLETION_INDEX)/8"]
    assert {"name": "dataflow-pipeline", "configMap": {"name": "thumbnails-pipeline"}} in _pod(shards)["volumes"]
    # A local Ray in the pod needs a real /dev/shm for its object store.
    assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in _pod(shards)["volumes"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in _container(shards)["volumeMounts"]
    assert commit["spec"]["suspend"] is True and commit["spec"]["backoffLimit"] == 2
    assert commit["metadata"]["annotations"] == {"dataflow.io/after": "Job/thumbnails"}
    assert _container(commit)["command"] == ["dataflow", "commit", "s3://media/thumbs", "--shards", "8"]
    assert _container(commit)["resources"]["limits"] == {"cpu": 1, "memory": "2Gi"}
    assert all(v["name"] != "dataflow-pipeline" for v in _pod(commit)["volumes"])  # commit reads the recorded pipeline
    assert list(yaml.safe_load_all(rendered.to_yaml())) == list(rendered.objects)


@pytest.mark.parametrize(
    "pipeline, config_yaml",
    [
        (THUMBNAILS, "env: {DATAFLOW_OUT: 's3://media/thumbs'}\n"),
        (str(ROOT / "pipelines" / "audio_curation.yaml"), "env: {DATAFLOW_OUT: 's3://media/audio'}\n"),
        (GPU_RESIZE, ""),
        (
            GPU_RESIZE,
            "volcano: {queue: ai-data, profile: borrow}\n"
            "job: {node_selector: {gpu: h100}, tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]}\n",
        ),
        (TABLE_ONLY, "secret_env: {AWS_SECRET_ACCESS_KEY: {secret: s3, key: secret}}\nenv_from_secrets: [lake]\n"),
        (MIXED, "volcano: {queue: ai-data, priority_class: batch-low}\ncache: {host_path: /mnt/nvme}\njob: {active_deadline_seconds: 7200}\n"),
    ],
    ids=["thumbnails", "audio", "gpu", "gpu-volcano-borrow", "spark-secrets", "mixed-volcano-hostpath"],
)
def test_rendered_jobs_validate_strictly_against_kubernetes_core_schemas(pipeline, config_yaml, tmp_path):
    rendered = _render(pipeline, config_yaml, tmp_path)
    for obj in rendered.objects:
        assert _validate(obj, MIN_KUBERNETES) == MIN_KUBERNETES
        assert _validate(obj, kubernetes_validate.latest_version()) == kubernetes_validate.utils.major_minor(kubernetes_validate.latest_version())


def test_the_minimum_kubernetes_version_is_real():
    shards = _thumbnails().jobs[0]
    # 1.27 knows neither backoffLimitPerIndex nor a podFailurePolicy rule without onPodConditions.
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(shards, "1.27")
    # An unknown key is refused, so the schema check above is strict.
    _container(shards)["resource"] = {}
    with pytest.raises(kubernetes_validate.ValidationError, match="'resource' was unexpected"):
        _validate(shards, MIN_KUBERNETES)


@pytest.mark.parametrize(
    "pipeline, named",
    [
        ("image_curation.yaml", "steps[6] (image.dedup_phash): a global step needs every row at once"),
        ("text_curation.yaml", "steps[4] (text.dedup_exact), steps[5] (text.dedup_minhash): global steps need every row at once"),
    ],
    ids=["one-global-step", "two-global-steps"],
)
def test_a_global_step_is_refused_by_name(pipeline, named):
    with pytest.raises(PlanError) as info:
        _render(str(ROOT / "pipelines" / pipeline), **{"env": S3_OUT})
    assert str(info.value).startswith(named)
    assert "--target job takes map-only pipelines" in str(info.value)


def test_a_sink_the_pods_cannot_share_is_refused(tmp_path):
    with pytest.raises(PlanError, match=r"^sink.uri: './out/thumbs' is on the pod's own filesystem"):
        _render(THUMBNAILS)
    with pytest.raises(PlanError, match="^sink.uri: refers to a variable only a Secret provides"):
        _render(THUMBNAILS, "secret_env: {DATAFLOW_OUT: {secret: paths, key: out}}\n", tmp_path)


def test_cli_shards_option_sets_completions_and_both_commands(tmp_path):
    config = tmp_path / "k8s.yaml"
    config.write_text("env: {DATAFLOW_OUT: 's3://media/thumbs'}\njob: {shards: 3, parallelism: 32}\n")
    args = ["k8s", "render", THUMBNAILS, "--target", "job", "--cluster-config", str(config), "-o", "json"]
    from_config = json.loads(CliRunner().invoke(cli, args).output)["items"]
    assert (from_config[1]["spec"]["completions"], from_config[1]["spec"]["parallelism"]) == (3, 3)  # capped at the shards
    result = CliRunner().invoke(cli, [*args, "--shards", "16"])
    assert result.exit_code == 0, result.output
    _, shards, commit = json.loads(result.output)["items"]
    assert (shards["spec"]["completions"], shards["spec"]["parallelism"]) == (16, 16)
    assert _container(shards)["command"][-1] == "$(JOB_COMPLETION_INDEX)/16"
    assert _container(commit)["command"][-2:] == ["--shards", "16"]
    refused = CliRunner().invoke(cli, ["k8s", "render", str(ROOT / "pipelines" / "image_curation.yaml"), "--target", "job"])
    assert refused.exit_code == 2
    assert "error: steps[6] (image.dedup_phash): a global step" in refused.output


def test_volcano_borrow_profile_reaches_both_jobs_and_their_pods():
    rendered = _render(GPU_RESIZE, **{"volcano.queue": "ai-data", "volcano.profile": "borrow"})
    for job in rendered.jobs:
        assert job["metadata"]["labels"]["volcano.sh/queue-name"] == "ai-data"
        template = job["spec"]["template"]
        assert template["metadata"]["labels"]["volcano.sh/queue-name"] == "ai-data"
        # Volcano's podgroup controller takes a plain pod's queue from this annotation.
        assert template["metadata"]["annotations"] == {"scheduling.volcano.sh/queue-name": "ai-data", "volcano.sh/preemptable": "true"}
        assert (template["spec"]["schedulerName"], template["spec"]["priorityClassName"]) == ("volcano", "dataflow-borrow")
    without = _render(GPU_RESIZE)
    assert all("schedulerName" not in _pod(j) and "annotations" not in j["spec"]["template"]["metadata"] for j in without.jobs)


def test_secrets_by_reference_cache_and_scratch_volumes(tmp_path):
    config = (
        "secret_env: {AWS_SECRET_ACCESS_KEY: {secret: s3-credentials, key: secret_key}}\n"
        "env_from_secrets: [lake-credentials]\ncache: {host_path: /mnt/nvme/dataflow}\nscratch: {size_limit: 50Gi}\n"
    )
    rendered = _render(TABLE_ONLY, config, tmp_path)
    assert "entrypoint.py" not in rendered.objects[0]["data"]  # the Spark Operator's entrypoint is not used
    for job in rendered.jobs:
        container = _container(job)
        assert {"name": "AWS_SECRET_ACCESS_KEY", "valueFrom": {"secretKeyRef": {"name": "s3-credentials", "key": "secret_key"}}} in container["env"]
        assert container["envFrom"] == [{"secretRef": {"name": "lake-credentials"}}]
        volumes = {v["name"]: v for v in _pod(job)["volumes"]}
        assert volumes["dataflow-cache"] == {"name": "dataflow-cache", "hostPath": {"path": "/mnt/nvme/dataflow", "type": "DirectoryOrCreate"}}
        assert volumes["spark-local-dir-scratch"]["emptyDir"] == {"sizeLimit": "50Gi"}
        assert "dshm" not in volumes  # a Spark-only pipeline starts no Ray
    assert "s3-credentials" not in json.dumps(rendered.objects[0]) and "secret_key" not in rendered.objects[0]["data"]["pipeline.yaml"]


def test_one_pod_holds_every_actor_pool_of_the_plan(tmp_path):
    # gpu_resize: a pool of 3 actors x (1 GPU, 2 CPUs, 8 GiB), plus a CPU for the read and write tasks.
    shards = _render(GPU_RESIZE).jobs[0]
    assert _container(shards)["resources"]["limits"] == {"cpu": 7, "memory": "24Gi", "nvidia.com/gpu": 3}
    assert "nodeSelector" not in _pod(shards)  # a GPU stage with no GPU node config
    configured = _render(GPU_RESIZE, "job: {cpu: 16, memory: 64Gi, gpus: 4, node_selector: {gpu: h100}}\n", tmp_path).jobs[0]
    assert _container(configured)["resources"]["requests"] == {"cpu": 16, "memory": "64Gi", "nvidia.com/gpu": 4}
    assert _pod(configured)["nodeSelector"] == {"gpu": "h100"}
    assert "nvidia.com/gpu" not in _container(_thumbnails().jobs[0])["resources"]["limits"]


def test_names_leave_room_for_the_commit_suffix():
    ok = _thumbnails(**{"name": "n" * 56})
    assert [j["metadata"]["name"] for j in ok.jobs] == ["n" * 56, "n" * 56 + "-commit"]
    with pytest.raises(ManifestError) as info:
        _thumbnails(**{"name": "n" * 57})
    assert str(info.value).splitlines() == [
        f"Job/{'n' * 57}-commit: metadata.name: '{'n' * 57}-commit' has 64 characters; a Job name may have at most 63",
        "hint: object names come from the cluster config's name:; set a shorter DNS name with name: in the cluster config",
    ]


@pytest.mark.parametrize("shards, longest", [(8, 61), (11, 60)], ids=["index-7", "index-10"])
def test_an_indexed_job_name_leaves_room_for_the_pod_hostname_suffix(shards, longest):
    job = _thumbnails(**{"job.shards": shards}).jobs[0]
    job["metadata"]["name"] = "n" * longest
    assert object_rule_errors(job) == []
    job["metadata"]["name"] = "n" * (longest + 1)
    host = f"{'n' * (longest + 1)}-{shards - 1}"
    assert object_rule_errors(job) == [
        f"metadata.name: '{'n' * (longest + 1)}' makes the last pod's hostname '{host}' (64 characters); the Job "
        "controller sets each pod's hostname to <name>-<index>, a DNS label of at most 63"
    ]


def test_unknown_target_is_refused():
    with pytest.raises(PlanError, match=r"^target 'cronjob': expected one of auto, job$"):
        render_pipeline(GPU_RESIZE, load_cluster_config(None), target="cronjob")


# --- submit / status / logs / delete against the recording API server ---------------------------

def _cli(*args):
    return CliRunner().invoke(cli, ["k8s", *args], catch_exceptions=False)


def _calls(api_server):
    return [(r.method, r.path, r.query) for r in api_server.requests]


@pytest.fixture
def kube():
    pytest.importorskip("kubernetes")
    from dataflow.k8s import submit

    return submit


def test_submit_dry_run_posts_configmap_and_both_jobs_through_batch_v1(api_server, kubeconfig, kube):
    result = _cli("submit", GPU_RESIZE, "--target", "job", "--namespace", "data", "--dry-run", "--kubeconfig", kubeconfig)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "ConfigMap/gpu-resize-pipeline: created (dry run)",
        "Job/gpu-resize: created (dry run)",
        "Job/gpu-resize-commit: created, suspended until Job/gpu-resize completes (dry run)",
    ]
    strict_dry = {"fieldValidation": "Strict", "dryRun": "All"}
    assert _calls(api_server) == [("POST", CM_PATH, strict_dry), ("POST", JOBS, strict_dry), ("POST", JOBS, strict_dry)]
    rendered = _render(GPU_RESIZE, **{"namespace": "data"})
    assert [r.body for r in api_server.requests] == [json.loads(json.dumps(o)) for o in rendered.objects]
    assert api_server.objects == {}


def test_submit_wait_resumes_the_commit_job_after_every_shard_succeeded(api_server, kubeconfig, kube):
    rendered = _render(GPU_RESIZE, **{"namespace": "data", "job.shards": 3})
    client = kube.kube_client(kubeconfig)
    kube.submit(rendered, client)
    owners = api_server.requests[3]
    assert (owners.method, owners.path) == ("PATCH", f"{CM_PATH}/gpu-resize-pipeline")
    uids = [api_server.objects[f"{JOBS}/{n}"]["metadata"]["uid"] for n in ("gpu-resize", "gpu-resize-commit")]
    assert owners.body == {"metadata": {"ownerReferences": [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "gpu-resize", "uid": uids[0]},
        {"apiVersion": "batch/v1", "kind": "Job", "name": "gpu-resize-commit", "uid": uids[1]},
    ]}}
    suspended = {"conditions": [{"type": "Suspended", "status": "True"}]}
    api_server.set_status(
        f"{JOBS}/gpu-resize",
        {"active": 3},
        {"active": 1, "succeeded": 2, "completedIndexes": "0,2"},
        {"succeeded": 3, "completedIndexes": "0-2", "conditions": [{"type": "Complete", "status": "True"}]},
    )
    api_server.set_status(
        f"{JOBS}/gpu-resize-commit", suspended, suspended, suspended,
        {"active": 1, "conditions": [{"type": "Suspended", "status": "False"}]},
        {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]},
    )
    seen = []
    final = kube.wait(rendered, client, timeout=10, interval=0.01, on_change=lambda s: seen.append(str(s)), resume=True)
    assert [s.succeeded for s in final] == [True, True]
    assert seen == [
        "Job/gpu-resize: Running (active=3)",
        "Job/gpu-resize-commit: Suspended (after=Job/gpu-resize)",
        "Job/gpu-resize: Running (active=1, succeeded=2, completedIndexes=0,2)",
        "Job/gpu-resize: Complete (succeeded=3, completedIndexes=0-2)",
        "Job/gpu-resize-commit: Running (active=1)",
        "Job/gpu-resize-commit: Complete (succeeded=1)",
    ]
    patches = [r for r in api_server.requests if r.method == "PATCH" and r.path.startswith(JOBS)]
    assert [(r.path, r.body) for r in patches] == [(f"{JOBS}/gpu-resize-commit", {"spec": {"suspend": False}})]


def test_status_watch_stops_at_the_suspended_commit_job_without_resuming(api_server, kubeconfig, kube):
    kube.submit(_render(GPU_RESIZE, **{"namespace": "data"}), kube.kube_client(kubeconfig))
    api_server.set_status(f"{JOBS}/gpu-resize", {"succeeded": 8, "conditions": [{"type": "Complete", "status": "True"}]})
    api_server.set_status(f"{JOBS}/gpu-resize-commit", {"conditions": [{"type": "Suspended", "status": "True"}]})
    result = _cli("status", GPU_RESIZE, "--target", "job", "--namespace", "data", "--kubeconfig", kubeconfig, "--watch", "10", "--interval", "0.01")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "Job/gpu-resize: Complete (succeeded=8)", "Job/gpu-resize-commit: Suspended (after=Job/gpu-resize)",
    ]
    assert ("GET", f"{JOBS}/gpu-resize-commit/status", {}) in _calls(api_server)
    assert not [r for r in api_server.requests if r.method == "PATCH" and r.path.startswith(JOBS)]


def test_failed_shards_fail_the_wait_with_their_indexes(api_server, kubeconfig, kube):
    rendered = _render(GPU_RESIZE, **{"namespace": "data"})
    kube.submit(rendered, kube.kube_client(kubeconfig))
    api_server.set_status(
        f"{JOBS}/gpu-resize",
        {"succeeded": 6, "failed": 3, "failedIndexes": "4", "conditions": [{"type": "Failed", "status": "True", "reason": "FailedIndexes"}]},
    )
    with pytest.raises(RunError, match=r"^Job/gpu-resize: Failed \(succeeded=6, failed=3, failedIndexes=4\)$"):
        kube.wait(rendered, kube.kube_client(kubeconfig), timeout=10, interval=0.01, resume=True)


def test_logs_of_every_shard_pod_in_index_order(api_server, kubeconfig, kube):
    kube.submit(_render(GPU_RESIZE, **{"namespace": "data"}), kube.kube_client(kubeconfig))
    index = "batch.kubernetes.io/job-completion-index"
    api_server.pods += [
        {"metadata": {"name": "gpu-resize-1-bbbbb", "labels": {"job-name": "gpu-resize"}, "annotations": {index: "1"}}},
        {"metadata": {"name": "gpu-resize-0-aaaaa", "labels": {"job-name": "gpu-resize"}, "annotations": {index: "0"}}},
        {"metadata": {"name": "gpu-resize-commit-ccccc", "labels": {"job-name": "gpu-resize-commit"}}},
    ]
    api_server.logs.update({"gpu-resize-0-aaaaa": "shard 0 done\n", "gpu-resize-1-bbbbb": "shard 1 done\n", "gpu-resize-commit-ccccc": "published\n"})
    result = _cli("logs", GPU_RESIZE, "--target", "job", "--namespace", "data", "--kubeconfig", kubeconfig, "--tail", "20")
    assert result.output.splitlines() == [
        "==> Job/gpu-resize pod/gpu-resize-0-aaaaa <==", "shard 0 done",
        "==> Job/gpu-resize pod/gpu-resize-1-bbbbb <==", "shard 1 done",
        "==> Job/gpu-resize-commit pod/gpu-resize-commit-ccccc <==", "published",
    ]
    assert ("GET", "/api/v1/namespaces/data/pods/gpu-resize-1-bbbbb/log", {"tailLines": "20"}) in _calls(api_server)


def test_delete_removes_both_jobs_with_their_pods_then_the_configmap(api_server, kubeconfig, kube):
    kube.submit(_render(GPU_RESIZE, **{"namespace": "data"}), kube.kube_client(kubeconfig))
    result = _cli("delete", GPU_RESIZE, "--target", "job", "--namespace", "data", "--kubeconfig", kubeconfig)
    assert result.output.splitlines() == [
        "Job/gpu-resize: deleted", "Job/gpu-resize-commit: deleted", "ConfigMap/gpu-resize-pipeline: deleted",
    ]
    assert [c for c in _calls(api_server) if c[0] == "DELETE"] == [
        ("DELETE", f"{JOBS}/gpu-resize", {"propagationPolicy": "Background"}),
        ("DELETE", f"{JOBS}/gpu-resize-commit", {"propagationPolicy": "Background"}),
        ("DELETE", f"{CM_PATH}/gpu-resize-pipeline", {}),
    ]
    assert api_server.objects == {}
