"""Rendering pipelines as RayJob / SparkApplication / Queue objects: resources from the plan, storage, validation."""
from __future__ import annotations

import pathlib
from dataclasses import replace

import pytest
import yaml

from dataflow.dsl.parse import load_pipeline
from dataflow.errors import PipelineSpecError
from dataflow.k8s.config import load_cluster_config
from dataflow.k8s.render import ManifestError, render_plan
from dataflow.k8s.schema import schema_errors
from dataflow.engines.registry import engine_caps
from dataflow.plan import build_plan, optimize
from dataflow.plan.rules import AssignEngines, FuseAdjacentMaps
from tests.unit.k8s.rendering import GPU_RESIZE, MIXED, ROOT, TABLE_ONLY, THUMBNAILS, job, render


def _groups(rayjob: dict) -> dict[str, dict]:
    return {g["groupName"]: g for g in rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"]}


def _container(template: dict) -> dict:
    return template["spec"]["containers"][0]


def _pods(rayjob: dict) -> list[dict]:
    cluster = rayjob["spec"]["rayClusterSpec"]
    return [cluster["headGroupSpec"]["template"], *(g["template"] for g in cluster["workerGroupSpecs"])]


#: The job kind the planner's engine gives each shipped pipeline (auto: media -> Ray, tables -> Spark).
SHIPPED_KINDS = {
    "audio_curation.yaml": "RayJob",
    "image_curation.yaml": "RayJob",
    "optical_module_faults.yaml": "SparkApplication",
    "text_curation.yaml": "RayJob",
    "thumbnails.yaml": "RayJob",
}
BORROW = {"volcano.queue": "lent", "volcano.profile": "borrow"}


def test_every_shipped_pipeline_has_an_expected_kind():
    assert sorted(p.name for p in (ROOT / "pipelines").glob("*.yaml")) == sorted(SHIPPED_KINDS)


@pytest.mark.parametrize("overrides", [{}, BORROW], ids=["default", "borrow-volcano"])
@pytest.mark.parametrize("name", sorted(SHIPPED_KINDS))
def test_every_shipped_pipeline_renders_valid_objects_of_its_engines_kind(name, overrides):
    rendered = render(str(ROOT / "pipelines" / name), **overrides)
    assert [o["kind"] for o in rendered.objects] == ["ConfigMap", SHIPPED_KINDS[name]]
    assert all(schema_errors(o) == [] for o in rendered.jobs)
    (only,) = rendered.jobs
    if only["kind"] == "RayJob":
        labels = only["metadata"]["labels"]
        assert (labels.get("volcano.sh/queue-name"), labels.get("ray.io/priority-class-name")) == (
            ("lent", "dataflow-borrow") if overrides else (None, None)
        )
        assert "activeDeadlineSeconds" not in only["spec"]  # no wall-clock limit unless configured
    else:
        assert only["spec"].get("batchSchedulerOptions") == ({"queue": "lent", "priorityClassName": "dataflow-borrow"} if overrides else None)


def test_rayjob_active_deadline_comes_from_the_config(tmp_path):
    rayjob = job(render(THUMBNAILS, "ray: {active_deadline_seconds: 7200}\n", tmp_path))
    assert rayjob["spec"]["activeDeadlineSeconds"] == 7200 and schema_errors(rayjob) == []
    with pytest.raises(PipelineSpecError, match="ray.active_deadline_seconds"):
        render(THUMBNAILS, "ray: {active_deadline_seconds: 0}\n", tmp_path)


def test_thumbnails_renders_configmap_and_rayjob_running_the_mounted_pipeline():
    rendered = render(THUMBNAILS)
    config_map, rayjob = rendered.objects
    assert config_map["metadata"]["name"] == "thumbnails-pipeline"
    assert config_map["data"] == {"pipeline.yaml": pathlib.Path(THUMBNAILS).read_text()}
    assert rayjob["apiVersion"] == "ray.io/v1" and rayjob["metadata"]["name"] == "thumbnails"
    spec = rayjob["spec"]
    assert spec["entrypoint"] == "dataflow run /etc/dataflow/pipeline.yaml"
    assert (spec["submissionMode"], spec["shutdownAfterJobFinishes"], spec["ttlSecondsAfterFinished"], spec["backoffLimit"]) == (
        "K8sJobMode", True, 300, 0,
    )
    head = spec["rayClusterSpec"]["headGroupSpec"]
    assert head["rayStartParams"] == {"num-cpus": "0"}
    assert {"name": "dataflow-pipeline", "mountPath": "/etc/dataflow", "readOnly": True} in _container(head["template"])["volumeMounts"]
    assert {"name": "dataflow-pipeline", "configMap": {"name": "thumbnails-pipeline"}} in head["template"]["spec"]["volumes"]
    assert list(_groups(rayjob)) == ["cpu"]  # no step asks for a GPU
    cpu = _groups(rayjob)["cpu"]
    assert (cpu["replicas"], cpu["minReplicas"], cpu["maxReplicas"]) == (1, 1, 4)
    assert _container(cpu["template"])["resources"]["limits"] == {"cpu": 4, "memory": "16Gi"}
    # The YAML output is the same objects, and parses back.
    assert list(yaml.safe_load_all(rendered.to_yaml())) == list(rendered.objects)


def test_cache_and_scratch_volumes_with_cache_dir_in_every_pod(tmp_path):
    rayjob = job(render(THUMBNAILS, "cache: {host_path: /mnt/nvme0/dataflow, dir: /cache}\nscratch: {size_limit: 50Gi}\n", tmp_path))
    for template in _pods(rayjob):
        volumes = {v["name"]: v for v in template["spec"]["volumes"]}
        assert volumes["dataflow-cache"] == {"name": "dataflow-cache", "hostPath": {"path": "/mnt/nvme0/dataflow", "type": "DirectoryOrCreate"}}
        assert volumes["spark-local-dir-scratch"] == {"name": "spark-local-dir-scratch", "emptyDir": {"sizeLimit": "50Gi"}}
        container = _container(template)
        assert {"name": "DATAFLOW_CACHE_DIR", "value": "/cache"} in container["env"]
        assert {"name": "dataflow-cache", "mountPath": "/cache"} in container["volumeMounts"]
    default = job(render(THUMBNAILS))
    assert {"name": "dataflow-cache", "emptyDir": {}} in _pods(default)[0]["spec"]["volumes"]


def test_cache_volume_follows_the_pipelines_declared_cache_dir(tmp_path):
    path = tmp_path / "cached.yaml"
    path.write_text(pathlib.Path(THUMBNAILS).read_text() + "storage:\n  cache: {dir: /mnt/nvme/df, max_bytes: 100GB}\n")
    for template in _pods(job(render(str(path), "cache: {host_path: /mnt/nvme}\n", tmp_path))):
        container = _container(template)
        assert {"name": "DATAFLOW_CACHE_DIR", "value": "/mnt/nvme/df"} in container["env"]
        assert {"name": "dataflow-cache", "mountPath": "/mnt/nvme/df"} in container["volumeMounts"]


def test_gpu_step_gets_gpu_group_with_limits_and_no_node_selector_by_default():
    rayjob = job(render(GPU_RESIZE))
    gpu = _groups(rayjob)["gpu"]
    limits = _container(gpu["template"])["resources"]["limits"]
    assert limits == {"cpu": 8, "memory": "32Gi", "nvidia.com/gpu": 1}
    assert _container(gpu["template"])["resources"]["requests"] == limits
    assert (gpu["minReplicas"], gpu["maxReplicas"]) == (0, 3)  # concurrency 3 x 1 GPU, one GPU per pod
    assert "nodeSelector" not in gpu["template"]["spec"] and "tolerations" not in gpu["template"]["spec"]
    assert "nvidia.com/gpu" not in _container(_groups(rayjob)["cpu"]["template"])["resources"]["limits"]


def test_gpu_group_takes_node_config_and_grows_to_fit_the_step(tmp_path):
    config = """\
gpu_resource: amd.com/gpu
ray:
  autoscaling: false
  gpu_workers:
    gpus: 2
    cpu: 2
    memory: 4Gi
    node_selector: {gpu.vendor: amd}
    tolerations: [{key: amd.com/gpu, operator: Exists, effect: NoSchedule}]
"""
    gpu = _groups(job(render(GPU_RESIZE, config, tmp_path)))["gpu"]
    spec = gpu["template"]["spec"]
    assert spec["nodeSelector"] == {"gpu.vendor": "amd"}
    assert spec["tolerations"] == [{"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    # two 1-GPU tasks per pod, each 2 CPUs and 8 GiB: the pod grows to 4 CPUs and 16 GiB
    assert _container(gpu["template"])["resources"]["limits"] == {"cpu": 4, "memory": "16Gi", "amd.com/gpu": 2}
    # autoscaling off: a fixed size, ceil(3 tasks x 1 GPU / 2 GPUs per pod) = 2
    assert (gpu["replicas"], gpu["minReplicas"], gpu["maxReplicas"]) == (2, 2, 2)


def test_cpu_concurrency_raises_the_replica_bound(tmp_path):
    text = pathlib.Path(THUMBNAILS).read_text().replace("resources: {batch_size: 64}", "resources: {batch_size: 64, num_cpus: 1, concurrency: 24}")
    path = tmp_path / "busy.yaml"
    path.write_text(text)
    cpu = _groups(job(render(str(path))))["cpu"]
    assert cpu["maxReplicas"] == 6  # 24 tasks x 1 CPU on 4-CPU pods


def test_table_only_pipeline_renders_a_spark_application():
    rendered = render(TABLE_ONLY)
    config_map, app = rendered.objects
    assert app["apiVersion"] == "sparkoperator.k8s.io/v1beta2" and app["metadata"]["name"] == "events-table"
    spec = app["spec"]
    assert (spec["type"], spec["pythonVersion"], spec["mode"], spec["sparkVersion"]) == ("Python", "3", "cluster", "4.3.0")
    assert spec["mainApplicationFile"] == "local:///etc/dataflow/entrypoint.py"
    assert spec["arguments"] == ["run", "/etc/dataflow/pipeline.yaml"]
    assert "from dataflow.cli.main import main" in config_map["data"]["entrypoint.py"]
    assert (spec["driver"]["cores"], spec["driver"]["memory"], spec["driver"]["serviceAccount"]) == (1, "2g", "spark-operator-spark")
    assert (spec["executor"]["cores"], spec["executor"]["memory"], spec["executor"]["instances"]) == (2, "4g", 2)
    assert spec["dynamicAllocation"] == {
        "enabled": True, "initialExecutors": 2, "minExecutors": 0, "maxExecutors": 8, "shuffleTrackingEnabled": True,
    }
    assert spec["restartPolicy"]["type"] == "OnFailure"
    assert {"name": "dataflow-pipeline", "mountPath": "/etc/dataflow", "readOnly": True} in spec["driver"]["volumeMounts"]
    assert "batchScheduler" not in spec and "sparkConf" not in spec


def test_spark_concurrency_and_static_allocation(tmp_path):
    app = job(render(TABLE_ONLY, "spark: {dynamic_allocation: {enabled: false}, executor: {cores: 4}}\n", tmp_path))
    assert app["spec"]["dynamicAllocation"] == {"enabled": False}
    assert app["spec"]["executor"]["instances"] == 3  # concurrency 12 x 1 CPU on 4-core executors
    assert job(render(TABLE_ONLY, "spark: {dynamic_allocation: {max_executors: 2}}\n", tmp_path))["spec"]["dynamicAllocation"]["maxExecutors"] == 6


def test_volcano_labels_and_spark_batch_scheduler():
    rayjob = job(render(THUMBNAILS, **{"volcano.queue": "ai-data", "volcano.priority_class": "batch-low"}))
    assert {k: v for k, v in rayjob["metadata"]["labels"].items() if "/" in k and not k.startswith(("app.", "dataflow."))} == {
        "volcano.sh/queue-name": "ai-data", "ray.io/priority-class-name": "batch-low", "ray.io/scheduler-name": "volcano",
    }
    assert all(t["spec"]["priorityClassName"] == "batch-low" for t in _pods(rayjob))
    assert all("annotations" not in t["metadata"] for t in _pods(rayjob))  # not the borrow profile
    app = job(render(TABLE_ONLY, **{"volcano.queue": "ai-data", "volcano.priority_class": "batch-low"}))
    assert app["spec"]["batchScheduler"] == "volcano"
    assert app["spec"]["batchSchedulerOptions"] == {"queue": "ai-data", "priorityClassName": "batch-low"}
    assert "volcano.sh/queue-name" not in app["metadata"]["labels"]


def test_borrow_profile_is_low_priority_preemptible_and_its_queue_reclaimable(tmp_path):
    config = "volcano: {queue: lent, profile: borrow, create_queue: true, capability: {cpu: 64, nvidia.com/gpu: 8}, deserved: {cpu: 16}}\n"
    rendered = render(GPU_RESIZE, config, tmp_path)
    queue, _config_map, rayjob = rendered.objects
    assert (queue["kind"], queue["metadata"]["name"]) == ("Queue", "lent")
    assert queue["spec"] == {"weight": 1, "capability": {"cpu": 64, "nvidia.com/gpu": 8}, "deserved": {"cpu": 16}, "reclaimable": True}
    assert schema_errors(queue) == []
    assert rayjob["metadata"]["labels"]["ray.io/priority-class-name"] == "dataflow-borrow"
    for template in _pods(rayjob):
        assert template["metadata"]["annotations"] == {"volcano.sh/preemptable": "true"}
        assert template["spec"]["priorityClassName"] == "dataflow-borrow"
    app = job(render(TABLE_ONLY, config, tmp_path))
    assert app["spec"]["batchSchedulerOptions"] == {"queue": "lent", "priorityClassName": "dataflow-borrow"}
    assert app["spec"]["driver"]["annotations"] == app["spec"]["executor"]["annotations"] == {"volcano.sh/preemptable": "true"}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("volcano: {profile: borrow}\n", "volcano.queue: the borrow profile needs a Volcano queue"),
        ("volcano: {queue: q, profile: borrow, reclaimable: false}\n", "lent capacity, which must stay reclaimable"),
    ],
    ids=["borrow-without-queue", "borrow-not-reclaimable"],
)
def test_borrow_profile_contradictions_are_refused(tmp_path, config, message):
    with pytest.raises(PipelineSpecError, match=message):
        render(THUMBNAILS, config, tmp_path)


def test_queue_webhook_rules_refuse_guarantee_above_deserved_above_capability(tmp_path):
    config = "volcano: {queue: q, create_queue: true, capability: {cpu: 8}, deserved: {cpu: 16, memory: 1Gi}, guarantee: {memory: 2Gi, nvidia.com/gpu: 1}}\n"
    with pytest.raises(ManifestError) as info:
        render(THUMBNAILS, config, tmp_path)
    assert str(info.value).splitlines() == [
        "Queue/q: spec.guarantee.resource.memory: 2.14748e+09 exceeds deserved 1.07374e+09",
        "Queue/q: spec.guarantee.resource.nvidia.com/gpu: also needs an entry in deserved (guarantee <= deserved)",
        "Queue/q: spec.deserved.cpu: 16 exceeds capability 8",
    ]


def test_long_pipeline_name_is_a_clear_error(tmp_path):
    path = tmp_path / "long.yaml"
    path.write_text(pathlib.Path(THUMBNAILS).read_text().replace("name: thumbnails", "name: " + "thumbnails_for_the_catalogue_of_the_spring_sales"))
    with pytest.raises(ManifestError) as info:
        render(str(path))
    text = str(info.value)
    assert "RayJob/thumbnails-for-the-catalogue-of-the-spring-sales: metadata.name: 'thumbnails-for-the-catalogue-of-the-spring-sales' has 48 characters; a RayJob name may have at most 47" in text
    assert "hint: object names come from the pipeline's name:; set a shorter DNS name with name: in the cluster config" in text
    assert job(render(str(path), **{"name": "spring-thumbs"}))["metadata"]["name"] == "spring-thumbs"


def test_cluster_selector_reuses_a_running_cluster_through_the_submitter(tmp_path):
    rayjob = job(render(THUMBNAILS, "ray: {cluster_selector: shared-ray}\nenv: {DATAFLOW_LOG_LEVEL: INFO}\n", tmp_path))
    spec = rayjob["spec"]
    assert "rayClusterSpec" not in spec and spec["clusterSelector"] == {"ray.io/cluster": "shared-ray"}
    assert spec["entrypoint"] == "dataflow run pipeline.yaml"
    assert yaml.safe_load(spec["runtimeEnvYAML"]) == {"working_dir": "/etc/dataflow", "env_vars": {"DATAFLOW_LOG_LEVEL": "INFO"}}
    submitter = spec["submitterPodTemplate"]["spec"]
    assert submitter["volumes"] == [{"name": "dataflow-pipeline", "configMap": {"name": "thumbnails-pipeline"}}]
    with pytest.raises(ManifestError, match="Volcano cannot gang-schedule a RayJob that reuses a cluster"):
        render(THUMBNAILS, "ray: {cluster_selector: shared-ray}\nvolcano: {queue: q}\n", tmp_path)
    with pytest.raises(PipelineSpecError, match="a running RayCluster keeps its own pod environment"):
        render(THUMBNAILS, "ray: {cluster_selector: shared-ray}\nenv_from_secrets: [s3]\n", tmp_path)


def test_pipeline_variable_the_pods_lack_is_an_error_and_config_env_provides_it(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(pathlib.Path(THUMBNAILS).read_text().replace("${DATAFLOW_DATA:-./data/images}", "${IMAGES_URI}"))
    with pytest.raises(PipelineSpecError, match=r"p.yaml:6:\d+: source.uri: environment variable 'IMAGES_URI' is not set"):
        render(str(path))
    rayjob = job(render(str(path), "env: {IMAGES_URI: 's3://bucket/images/'}\n", tmp_path))
    assert {"name": "IMAGES_URI", "value": "s3://bucket/images/"} in _container(_pods(rayjob)[0])["env"]


def test_cluster_config_errors_name_the_line_and_suggest(tmp_path):
    with pytest.raises(PipelineSpecError) as info:
        render(THUMBNAILS, "namespace: data\nray:\n  backof_limit: 2\n", tmp_path)
    issue = info.value.issues[0]
    assert (issue.line, issue.key, issue.hint) == (3, "ray.backof_limit", "did you mean 'backoff_limit'?")


def test_mixed_pipeline_renders_one_job_per_stage_with_the_handoff_described():
    rendered = render(MIXED)
    config_map, first, second = rendered.objects
    assert (first["kind"], first["metadata"]["name"], second["kind"], second["metadata"]["name"]) == (
        "RayJob", "mixed-catalogue-media", "SparkApplication", "mixed-catalogue-tables",
    )
    assert "entrypoint.py" in config_map["data"]  # one ConfigMap serves both stages
    assert first["spec"]["entrypoint"] == "dataflow run /etc/dataflow/pipeline.yaml --stage media"
    assert second["spec"]["arguments"] == ["run", "/etc/dataflow/pipeline.yaml", "--stage", "tables"]
    assert "gpu" in _groups(first)  # each stage is sized from its own steps
    assert "gpu" not in second["spec"]["executor"]
    assert first["metadata"]["annotations"]["dataflow.io/stage"] == "1/2: media on ray"
    assert first["metadata"]["annotations"]["dataflow.io/reads"] == "s3://catalogue/images/"
    assert second["metadata"]["annotations"]["dataflow.io/after"] == "RayJob/mixed-catalogue-media"
    assert second["metadata"]["annotations"]["dataflow.io/writes"] == "s3://catalogue/small/"
    assert second["metadata"]["labels"]["dataflow.io/stage"] == "tables"


def test_plan_without_stage_names_names_stages_by_position():
    spec = load_pipeline(TABLE_ONLY)
    plan = optimize(build_plan(spec), (AssignEngines(engine_caps(installed_only=False)), FuseAdjacentMaps()))
    plan = replace(plan, nodes=(*plan.nodes[:-1], replace(plan.nodes[-1], engine="ray")))
    first, second = render_plan(plan, "name: events_table\n", load_cluster_config(None)).jobs
    assert (first["metadata"]["name"], second["metadata"]["name"]) == ("events-table-s0-spark", "events-table-s1-ray")
    assert second["spec"]["entrypoint"] == "dataflow run /etc/dataflow/pipeline.yaml --stage 1"
