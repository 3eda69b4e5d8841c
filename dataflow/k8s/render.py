"""Render a pipeline as Kubernetes objects, validated before anything is printed or submitted.

The objects, in the order they are applied:

1. a Volcano ``Queue``, when the cluster config asks for one (cluster-scoped);
2. a ``ConfigMap`` holding the pipeline YAML verbatim (``${VAR}`` references unresolved, so the
   pod's environment, with its Secret references, resolves them) and, for Spark, ``entrypoint.py``;
3. one job per stage of the optimized plan: a KubeRay ``RayJob`` for a Ray stage, a Spark Operator
   ``SparkApplication`` for a Spark stage. Each runs ``dataflow run /etc/dataflow/pipeline.yaml``.
   With ``target="job"`` instead: a ``batch/v1`` Indexed Job running one input shard per pod and
   a suspended commit Job (see ``dataflow.k8s.job``), for map-only pipelines on any cluster.

Every custom object is validated strictly against the vendored CRD schema and against the
controllers' own rules; rendering fails with every problem listed rather than emit an invalid object.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import yaml

from connectors.registry import storage_traits
from dataflow.dsl.parse import locate_issues, parse_pipeline
from dataflow.dsl.yaml_io import load
from dataflow.errors import PipelineSpecError, PlanError, SpecIssue
from dataflow.k8s import pod
from dataflow.k8s.config import ClusterConfig
from dataflow.k8s.controller_rules import object_rule_errors
from dataflow.k8s.credentials import check_env, check_pipeline_credentials, referenced_variables
from dataflow.k8s.job import check_map_only, commit_job, shard_job
from dataflow.k8s.naming import dns_name
from dataflow.k8s.rayjob import ray_job
from dataflow.k8s.schema import kind_of, schema_errors
from dataflow.k8s.spark_application import ENTRYPOINT_FILE, ENTRYPOINT_SCRIPT, spark_application
from dataflow.k8s.stages import Stage, plan_stages
from dataflow.k8s.volcano import queue_object, ray_labels, volcano_settings
from dataflow.engines.registry import engine_caps
from dataflow.plan.nodes import LogicalPlan
from dataflow.plan.planner import plan_pipeline
from dataflow.runtime.settings import RunSettings, resolve_settings

__all__ = ["ManifestError", "Rendered", "TARGETS", "image_extras", "pod_settings", "render_pipeline", "render_plan"]

PIPELINE_KEY = "pipeline.yaml"
# NOTE: stands in for Secret-provided variables while planning; the plan never reaches a manifest.
_SECRET_PLACEHOLDER = "<from-secret>"
_BUILDERS = {"ray": ray_job, "spark": spark_application}
# auto: the operator object of each stage's engine; job: plain batch/v1 Jobs (map-only pipelines).
TARGETS = ("auto", "job")


class _BlockDumper(yaml.SafeDumper):
    """Writes multi-line strings (the pipeline, the entrypoint) as ``|`` blocks, readable in ``kubectl get -o yaml``."""


def _str(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value and not any(line != line.rstrip() for line in value.splitlines()) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


class ManifestError(PlanError):
    """A rendered object would be rejected by the API server, an operator or its webhook."""


@dataclass(frozen=True)
class Rendered:
    """The objects of one pipeline, in apply order, and the stages they run."""

    objects: tuple[dict[str, Any], ...]
    stages: tuple[Stage, ...]
    extras: tuple[str, ...] = ()  # the dataflow[...] extras the image needs for these ops

    def to_yaml(self) -> str:
        """Return the objects as one multi-document YAML stream (``kubectl apply -f -`` reads it)."""
        return "---\n".join(yaml.dump(o, Dumper=_BlockDumper, sort_keys=False, width=120) for o in self.objects)

    def to_json(self) -> str:
        """Return the objects as a ``v1`` ``List``."""
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(self.objects)}, indent=2)

    @property
    def jobs(self) -> tuple[dict[str, Any], ...]:
        """The RayJob / SparkApplication objects, one per stage, or the shard and commit Jobs."""
        return tuple(o for o in self.objects if o["kind"] in ("RayJob", "SparkApplication", "Job"))


def _labels(config: ClusterConfig, base: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "dataflow", "app.kubernetes.io/managed-by": "dataflow", "dataflow.io/pipeline": base, **config.labels}


def _command(stage: Stage) -> list[str]:
    command = ["dataflow", "run", pod.PIPELINE_FILE]
    return [*command, "--stage", stage.selector] if stage.count > 1 else command


def _job_name(base: str, stage: Stage) -> str:
    return f"{base}-{stage.name}" if stage.name else base


def _stage_annotations(stages: tuple[Stage, ...], stage: Stage, base: str, config: ClusterConfig) -> dict[str, str]:
    notes = dict(config.annotations)
    if stage.count > 1:
        notes["dataflow.io/stage"] = f"{stage.index + 1}/{stage.count}: {stage.selector} on {stage.engine}"
        if stage.reads:
            notes["dataflow.io/reads"] = stage.reads
        if stage.writes:
            notes["dataflow.io/writes"] = stage.writes
        if stage.index > 0:
            before = stages[stage.index - 1]
            notes["dataflow.io/after"] = f"{_kind(before)}/{_job_name(base, before)}"
    return notes


def _kind(stage: Stage) -> str:
    return "RayJob" if stage.engine == "ray" else "SparkApplication"


def _commit_sink(plan: LogicalPlan) -> str:
    """Return the sink URI the commit Job publishes, as the shard pods resolve it."""
    uri = plan.spec.sink.uri
    if _SECRET_PLACEHOLDER in uri:
        raise PlanError(
            "sink.uri: refers to a variable only a Secret provides, but the commit Job's command carries the "
            "sink in plain text; set that variable in the cluster config's env"
        )
    if storage_traits(uri).is_local:
        raise PlanError(
            f"sink.uri: {uri!r} is on the pod's own filesystem, and every pod of a Job has its own, so the commit "
            "Job would find no shards (expected shared storage such as s3://, gs:// or hdfs://; a ${VAR} in the "
            "pipeline can take it from the cluster config's env)"
        )
    return uri


def render_plan(
    plan: LogicalPlan, pipeline_text: str, config: ClusterConfig, *, config_file: str | None = None, target: str = "auto",
) -> Rendered:
    """Render an optimized plan whose pipeline file reads ``pipeline_text``.

    The cache volume is mounted where the pods' settings resolve the cache (``pod_settings``: the
    config's ``env``, else the pipeline's ``storage.cache.dir``, else the config's ``cache.dir``);
    the pods' ``DATAFLOW_CACHE_DIR`` names the same folder.

    Raises:
        PlanError: a stage's engine has no Kubernetes operator; with ``target="job"``, a global step
            or a sink the pods cannot share.
        PipelineSpecError: a cluster config setting contradicts another (e.g. borrow without a queue).
        ManifestError: listing every schema or controller rule an object breaks.
    """
    if target not in TARGETS:
        raise PlanError(f"target {target!r}: expected one of {', '.join(TARGETS)}")
    if plan.spec.source.in_memory:
        raise PlanError(
            f"source: '{plan.spec.source.in_memory}' is an in-memory source (from_pandas, from_ray, ...), held by this process only; "
            "a cluster cannot read it: write the data to storage the cluster reads (s3://, hdfs://) and read that"
        )
    if target == "job":
        check_map_only(plan)
    stages = plan_stages(plan)
    settings = pod_settings(plan, config)
    if settings.cache.dir != config.cache.dir:
        # NOTE: the pipeline (or the config's env) names its own cache folder: the volume and DATAFLOW_CACHE_DIR go there.
        config = config.model_copy(update={"cache": config.cache.model_copy(update={"dir": settings.cache.dir})})
    volcano = volcano_settings(config, config_file)
    base = config.name or dns_name(plan.spec.name)
    labels = _labels(config, base)
    objects: list[dict[str, Any]] = []
    if config.volcano.create_queue:
        objects.append(queue_object(config, labels))
    config_map = f"{base}-pipeline"
    data = {PIPELINE_KEY: pipeline_text}
    if target == "auto" and any(s.engine == "spark" for s in stages):
        data[ENTRYPOINT_FILE] = ENTRYPOINT_SCRIPT
    objects.append(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": config_map, "namespace": config.namespace, "labels": labels}, "data": data}
    )
    if target == "job":
        # NOTE: every pod runs all stages itself, so stages need no handoff annotations here.
        common = {"labels": labels, "annotations": dict(config.annotations), "volcano": volcano}
        objects.append(shard_job(stages, config, name=base, config_map=config_map, **common))
        objects.append(commit_job(config, shard_job_name=base, sink=_commit_sink(plan), **common))
    else:
        for stage in stages:
            builder = _BUILDERS.get(stage.engine)
            if builder is None:
                raise PlanError(f"stage {stage.index + 1} runs on '{stage.engine}', which has no Kubernetes operator (expected ray or spark)")
            pod_labels = {**labels, "dataflow.io/stage": stage.name} if stage.name else dict(labels)
            job_labels = {**pod_labels, **(ray_labels(volcano) if stage.engine == "ray" else {})}
            objects.append(
                builder(
                    stage, config, name=_job_name(base, stage), config_map=config_map, labels=job_labels, pod_labels=pod_labels,
                    annotations=_stage_annotations(stages, stage, base, config), volcano=volcano, command=_command(stage),
                )
            )
    _check(objects, named_by_config=config.name is not None)
    return Rendered(objects=tuple(objects), stages=stages)


def pod_settings(plan: LogicalPlan, config: ClusterConfig) -> RunSettings:
    """The run settings the pods resolve (``resolve_settings``): their environment is the config's ``env``,
    and the cache directory nothing else names is the config's ``cache.dir``; credentials come from its Secrets."""
    secrets = tuple({ref.secret for ref in config.secret_env.values()} | set(config.env_from_secrets))
    return resolve_settings(plan.spec, environ=config.env, default_cache_dir=config.cache.dir, secrets=secrets)


def _check(objects: list[dict[str, Any]], *, named_by_config: bool) -> None:
    problems = []
    for obj in objects:
        where = f"{obj['kind']}/{obj['metadata'].get('name')}"
        found = (schema_errors(obj) if kind_of(obj) else []) + object_rule_errors(obj)
        problems += [f"{where}: {p}" for p in found]
    if problems:
        if any("metadata.name:" in p for p in problems):
            source = "the cluster config's name:" if named_by_config else "the pipeline's name:"
            problems.append(f"hint: object names come from {source}; set a shorter DNS name with name: in the cluster config")
        raise ManifestError("\n".join(problems))


def _pod_environ(config: ClusterConfig, data: Any) -> dict[str, str]:
    """Return the variables the job's pods will have, Secret-provided ones as placeholders."""
    environ = {"DATAFLOW_CACHE_DIR": config.cache.dir, "TMPDIR": config.scratch.dir, **config.env}
    environ.update({name: _SECRET_PLACEHOLDER for name in config.secret_env})
    if config.env_from_secrets:  # any variable nothing else sets may come from those Secrets
        environ.update({name: _SECRET_PLACEHOLDER for name in referenced_variables(data) if name not in environ})
    return environ


def render_pipeline(path: str, config: ClusterConfig, *, config_file: str | None = None, target: str = "auto") -> Rendered:
    """Load, check and plan the pipeline at ``path``, then render it for the cluster.

    ``${VAR}`` references are resolved against the environment the pods will have (the
    config's ``env``, ``secret_env`` and ``env_from_secrets``), never against this process's.

    Args:
        path: The pipeline YAML file.
        config: The cluster config.
        config_file: Where ``config`` came from, for messages.
        target: ``auto`` (a RayJob / SparkApplication per stage) or ``job`` (plain Indexed Jobs).

    Raises:
        PipelineSpecError: the pipeline is invalid, inlines a credential, or refers to a variable the pods lack.
        PlanError: the plan is invalid, or cannot run as ``target``.
        ManifestError: an object breaks a schema or controller rule.
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise PipelineSpecError([SpecIssue(key="", message=f"cannot read pipeline file: {exc.strerror}", file=path)]) from exc
    data, lines = load(text, file=path)
    check_env(config.env, config_file)
    check_pipeline_credentials(data, lines, path, set(config.secret_env), bool(config.env_from_secrets))
    # The image runs the ops: their optional extras need not be installed here (see Rendered.extras).
    spec = parse_pipeline(data, file=path, lines=lines, environ=_pod_environ(config, data), installed=False)
    try:
        _, plan = plan_pipeline(spec, engine_caps(installed_only=False))
    except PlanError as exc:
        raise PlanError(issues=locate_issues(exc.issues, path, lines)) from exc
    rendered = render_plan(plan, text, config, config_file=config_file, target=target)
    return replace(rendered, extras=image_extras(plan))


def image_extras(plan: LogicalPlan) -> tuple[str, ...]:
    """The ``dataflow[...]`` extras the image needs for the plan's ops with their params (sorted)."""
    return tuple(sorted({extra for s in plan.steps() for _, extra in s.op.requirements(s.params.model_dump()) if extra}))
