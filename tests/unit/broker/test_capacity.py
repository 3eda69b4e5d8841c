"""Capacity probes through real HTTP clients against recorded API responses served on 127.0.0.1.

Ray: ``ray_cluster_status_1cpu.json`` was recorded from Ray 2.60's ``/api/cluster_status`` (``ray
start --head --num-cpus=1`` while a job held the CPU and another waited);
``ray_cluster_status_gpu.json`` has the same shape with the figures of a three-node GPU cluster
written in by hand. The integration tests probe live Ray clusters as well.

Kubernetes: no API server can run on these machines, so the node list, pod list and Volcano
Queue are recorded responses in the shape kube-apiserver and Volcano return them (trimmed to the
fields that matter), replayed on 127.0.0.1 to the real ``kubernetes`` client. Live scheduling,
quotas, taints/tolerations and Volcano's reclaim are therefore not exercised here.
"""
from __future__ import annotations

import json

import pytest

from dataflow.broker.capacity import Amount, probe
from dataflow.broker.clusters import KubernetesCluster, RayCluster
from tests.unit.broker.replay_server import RECORDED

GIB = 2**30


def _ray(url, tmp_path):
    token = tmp_path / "token"
    token.write_text("recorded-token")
    return RayCluster(name="a", kind="ray", address=url, token_file=str(token))


def test_ray_probe_reads_total_idle_and_pending_with_the_bearer_token(replay, tmp_path):
    replay.serve("/api/cluster_status", "ray_cluster_status_1cpu.json")
    cap = probe(_ray(replay.url, tmp_path))
    assert cap.error is None and cap.total == Amount(1.0, 0.0, 1e9) and cap.idle == Amount(0.0, 0.0, 1e9)
    assert cap.pending == 1 and cap.seconds < 5
    assert replay.requests[0][2]["Authorization"] == "Bearer recorded-token"


def test_ray_probe_counts_gpus_per_model_and_custom_resources(replay, tmp_path):
    replay.serve("/api/cluster_status", "ray_cluster_status_gpu.json")
    cap = probe(_ray(replay.url, tmp_path))
    assert cap.total.cpus == 96 and cap.idle.cpus == 76 and cap.total.gpus == 12 and cap.idle.gpus == 6
    assert cap.gpu_types() == {"A100": (2.0, 8.0), "L4": (4.0, 4.0)}
    assert cap.custom == {"ssd": (3.0, 4.0)}
    assert len(cap.nodes) == 3


def test_ray_probe_failures_are_reasons_not_exceptions(replay, tmp_path):
    replay.routes["/api/cluster_status"] = (401, {"error": "Unauthorized: Missing authentication token"})
    cap = probe(_ray(replay.url, tmp_path))
    assert cap.error.startswith("HTTP 401 from") and "check token_file / token_env" in cap.error and "recorded-token" not in cap.error
    gone = probe(RayCluster(name="b", kind="ray", address="http://127.0.0.1:9"))
    assert gone.error.startswith("unreachable at http://127.0.0.1:9")



def test_ray_probe_of_a_starting_cluster_says_no_nodes_yet_rather_than_zero(replay, tmp_path):
    """The recorded status with ``usageByNode`` emptied: what the GCS answers before its first load report."""
    body = json.loads((RECORDED / "ray_cluster_status_1cpu.json").read_text())
    body["data"]["clusterStatus"]["loadMetricsReport"]["usageByNode"] = {}
    replay.routes["/api/cluster_status"] = (200, body)
    cap = probe(_ray(replay.url, tmp_path))
    assert cap.error == f"{replay.url} reports no nodes yet; probe again in a few seconds"
    assert cap.total == Amount() and cap.idle == Amount() and cap.nodes == ()

@pytest.fixture
def kube(replay, tmp_path):
    """A kubeconfig pointing the real kubernetes client at the replay server, with recorded nodes and pods."""
    pytest.importorskip("kubernetes")
    replay.serve("/api/v1/nodes", "k8s_nodes.json")
    replay.serve("/api/v1/pods", "k8s_pods.json")
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: rec, cluster: {{server: '{replay.url}'}}}}]\n"
        "users: [{name: rec, user: {token: dummy}}]\n"
        "contexts: [{name: prod-b, context: {cluster: rec, user: rec}}]\ncurrent-context: prod-b\n"
    )
    return str(path)


def test_kubernetes_probe_is_allocatable_minus_requests_per_gpu_model(replay, kube):
    cluster = KubernetesCluster(name="k", kind="kubernetes", namespace="data", kubeconfig=kube, context="prod-b", node_selector={"pool": "train"})
    cap = probe(cluster)
    assert cap.error is None
    # The cordoned and the NotReady node are left out.
    assert [n.name for n in cap.nodes] == ["gpu-a100-1", "gpu-l4-1", "cpu-1"]
    a100 = cap.nodes[0]
    # trainer-0: max(32 + 0.5 containers, 40 init) + 0.25 overhead CPUs; 6 GPUs; 512 GiB + 256 MiB.
    assert a100.idle.cpus == pytest.approx(95.69 - 40.25) and a100.idle.gpus == 2
    assert a100.idle.memory == pytest.approx(1044876840 * 1024 - 512.25 * GIB)
    assert cap.nodes[2].idle.cpus == pytest.approx(31.75 - 24)  # a pod without requests takes nothing
    assert cap.gpu_types() == {"NVIDIA-A100-SXM4-80GB": (2.0, 8.0), "nvidia-l4": (3.0, 4.0)}
    assert cap.total.cpus == pytest.approx(95.69 + 47.5 + 31.75) and cap.pending == 1
    nodes_query = next(q for p, q, _ in replay.requests if p == "/api/v1/nodes")
    pods_query = next(q for p, q, _ in replay.requests if p == "/api/v1/pods")
    assert nodes_query["labelSelector"] == "pool=train" and pods_query["fieldSelector"] == "status.phase!=Succeeded,status.phase!=Failed"


def test_kubernetes_probe_reads_the_volcano_queue(replay, kube):
    replay.serve("/apis/scheduling.volcano.sh/v1beta1/queues/data-borrow", "volcano_queue_open.json")
    cap = probe(KubernetesCluster(name="k", kind="kubernetes", namespace="data", kubeconfig=kube, queue="data-borrow"))
    assert cap.queue["state"] == "Open" and cap.queue["allocated"]["cpus"] == 60
    assert cap.limit.cpus == 4 and cap.limit.gpus == 3 and cap.limit.memory == 128 * GIB
    replay.serve("/apis/scheduling.volcano.sh/v1beta1/queues/nope", "volcano_queue_not_found.json", status=404)
    missing = probe(KubernetesCluster(name="k", kind="kubernetes", namespace="data", kubeconfig=kube, queue="nope"))
    assert missing.queue["error"] == "Volcano queue 'nope' not found"
    no_crd = probe(KubernetesCluster(name="k", kind="kubernetes", namespace="data", kubeconfig=kube, queue="other"))
    assert no_crd.queue["error"] == "Volcano is not installed (no queues.scheduling.volcano.sh)"


def test_kubernetes_probe_without_configuration_says_so(tmp_path):
    pytest.importorskip("kubernetes")
    cap = probe(KubernetesCluster(name="k", kind="kubernetes", namespace="data", kubeconfig=str(tmp_path / "none")))
    assert cap.error.startswith(f"kubeconfig {tmp_path / 'none'}")
