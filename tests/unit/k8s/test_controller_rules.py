"""The operators' own rules that the CRD schemas do not carry, checked on rendered objects made invalid."""
from __future__ import annotations

import copy

import pytest

from dataflow.k8s.controller_rules import object_rule_errors
from tests.unit.k8s.rendering import TABLE_ONLY, THUMBNAILS, job, render


@pytest.fixture(scope="module")
def rayjob():
    return job(render(THUMBNAILS))


@pytest.fixture(scope="module")
def spark_app():
    return job(render(TABLE_ONLY))


def _broken(obj, change):
    obj = copy.deepcopy(obj)
    change(obj)
    return object_rule_errors(obj)


def test_rendered_objects_pass(rayjob, spark_app):
    assert object_rule_errors(rayjob) == [] and object_rule_errors(spark_app) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda o: o["spec"].update(clusterSelector={"ray.io/cluster": "c"}), "one of rayClusterSpec or clusterSelector must be set"),
        (lambda o: o["spec"].pop("rayClusterSpec"), "one of rayClusterSpec or clusterSelector must be set"),
        (lambda o: o["spec"].update(suspend=True, shutdownAfterJobFinishes=False), "spec.suspend: requires shutdownAfterJobFinishes: true"),
        (lambda o: o["spec"].update(submissionMode="K8sJobmode"), "spec.submissionMode: 'K8sJobmode' is not one of"),
        (lambda o: o["spec"].update(submissionMode="InteractiveMode", backoffLimit=2), "must be 0 in InteractiveMode"),
        (lambda o: o["spec"].update(activeDeadlineSeconds=0), "spec.activeDeadlineSeconds: must be at least 1"),
        (lambda o: o["metadata"].update(name="Thumbnails"), "is not a DNS-1035 name"),
        (lambda o: o["metadata"]["labels"].update({"volcano.sh/queue-name": "no spaces allowed"}), "is not a valid label value"),
        (
            lambda o: o["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(minReplicas=5, maxReplicas=2, replicas=5),
            "workerGroupSpecs[0]: minReplicas (5) is greater than maxReplicas (2)",
        ),
        (
            lambda o: o["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"].update(containers=[]),
            "headGroupSpec.template.spec.containers: needs at least one container",
        ),
    ],
    ids=["both", "neither", "suspend", "mode-typo", "interactive-retries", "deadline", "name-case", "label", "min-max", "no-container"],
)
def test_rayjob_rules(rayjob, change, message):
    assert any(message in p for p in _broken(rayjob, change)), _broken(rayjob, change)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda o: o["spec"].update(sparkConf={"spark.master": "local[2]"}), "spec.sparkConf.spark.master: denied by the Spark Operator webhook"),
        (
            lambda o: o["spec"].update(sparkConf={"spark.kubernetes.container.image": "x"}),
            "spark.kubernetes.container.image: denied by the Spark Operator webhook; use spark.image",
        ),
        (lambda o: o["spec"].update(sparkConf={"spark.kubernetes.namespace": "other"}), "must equal the application namespace 'default'"),
        (lambda o: o["spec"]["executor"].update(memory="4Gi"), "spec.executor.memory: '4Gi' is not a Spark size"),
        (lambda o: o["spec"].update(nodeSelector={"a": "b"}) or o["spec"]["driver"].update(nodeSelector={"c": "d"}), "not allowed together with spec.nodeSelector"),
        (lambda o: o["spec"]["dynamicAllocation"].update(maxExecutors=1), "the initial executor count 2 exceeds maxExecutors (1)"),
    ],
    ids=["master", "image", "namespace", "memory", "node-selector", "dynamic-allocation"],
)
def test_spark_application_rules(spark_app, change, message):
    assert any(message in p for p in _broken(spark_app, change)), _broken(spark_app, change)


def test_spark_secret_mount_conf_is_not_taken_for_a_credential(spark_app):
    assert _broken(spark_app, lambda o: o["spec"].update(sparkConf={"spark.kubernetes.driver.secrets.gcs-key": "/mnt/secrets"})) == []


def test_configmap_over_one_mebibyte_is_refused():
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p-pipeline"}, "data": {"pipeline.yaml": "x" * (1024 * 1024)}}
    assert object_rule_errors(config_map) == ["data: 1048589 bytes; a ConfigMap holds at most 1048576"]
