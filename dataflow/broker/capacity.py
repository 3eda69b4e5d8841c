"""Probe what each cluster has and what is idle now: capacity arrives as data, no driver connects.

Ray: ``GET <address>/api/cluster_status`` on the dashboard, with the bearer token; per node it
lists ``[used, total]`` of every resource (CPU, GPU, memory, ``accelerator_type:<GPU model>``,
custom). The figures lag the cluster by the autoscaler report interval (about 1-2 s).

Kubernetes: node allocatable minus the requests of the pods bound to each node (Ready,
schedulable nodes only), per GPU model (``nvidia.com/gpu.product`` and the cloud labels), plus the
Volcano queue's status (state, allocated, capability) when the cluster names a queue.
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from dataflow.broker.clusters import ClustersFileError, Fleet, KubernetesCluster, RayCluster, auth_headers

__all__ = ["Amount", "Capacity", "NodeCapacity", "probe", "probe_all"]

PROBE_TIMEOUT_S = 5.0
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
GPU_TYPE_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator", "karpenter.k8s.aws/instance-gpu-name", "amd.com/gpu.product")
_RAY_SKIP = ("node:", "accelerator_type:")
_RAY_BUILTIN = {"CPU", "GPU", "memory", "objectStoreMemory", "object_store_memory"}


@dataclass(frozen=True)
class Amount:
    """CPUs, GPUs and bytes of memory."""

    cpus: float = 0.0
    gpus: float = 0.0
    memory: float = 0.0

    def minus(self, other: Amount) -> Amount:
        return Amount(self.cpus - other.cpus, self.gpus - other.gpus, self.memory - other.memory)

    def plus(self, other: Amount) -> Amount:
        return Amount(self.cpus + other.cpus, self.gpus + other.gpus, self.memory + other.memory)

    def describe(self) -> str:
        parts = [f"{_num(self.cpus)} CPU"]
        if self.gpus:
            parts.append(f"{_num(self.gpus)} GPU")
        if self.memory:
            parts.append(f"{self.memory / 2**30:.1f} GiB")
        return ", ".join(parts)


def _num(x: float) -> str:
    return f"{x:g}" if abs(x - round(x, 2)) < 1e-9 else f"{x:.2f}"


@dataclass(frozen=True)
class NodeCapacity:
    """One node's total and idle resources and its GPU model."""

    name: str
    total: Amount
    idle: Amount
    gpu_type: str | None = None


@dataclass(frozen=True)
class Capacity:
    """What one cluster has (``total``) and has free (``idle``) now, or why the probe failed (``error``)."""

    cluster: str
    kind: str
    total: Amount = Amount()
    idle: Amount = Amount()
    nodes: tuple[NodeCapacity, ...] = ()
    custom: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> (idle, total)
    pending: int = 0  # resource requests (Ray) or pods (Kubernetes) waiting for room
    queue: dict[str, Any] | None = None  # Volcano: {name, state, allocated, capability}
    limit: Amount | None = None  # what the Volcano queue still admits, when it has a capability
    error: str | None = None
    seconds: float = 0.0

    def gpu_types(self) -> dict[str, tuple[float, float]]:
        """GPU model -> (idle, total) GPUs, over the nodes that report a model."""
        out: dict[str, tuple[float, float]] = {}
        for n in self.nodes:
            if n.gpu_type and n.total.gpus:
                idle, total = out.get(n.gpu_type, (0.0, 0.0))
                out[n.gpu_type] = (idle + n.idle.gpus, total + n.total.gpus)
        return out

    def to_dict(self) -> dict[str, Any]:
        d = {"cluster": self.cluster, "kind": self.kind, "error": self.error, "seconds": round(self.seconds, 4), "pending": self.pending}
        d["total"], d["idle"] = vars(self.total), vars(self.idle)
        d["gpu_types"] = {k: {"idle": v[0], "total": v[1]} for k, v in self.gpu_types().items()}
        d["custom"] = {k: {"idle": v[0], "total": v[1]} for k, v in self.custom.items()}
        d["queue"] = self.queue
        return d


def _http_json(url: str, headers: dict[str, str]) -> Any:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as response:
        return json.load(response)


def _probe_ray(cluster: RayCluster) -> Capacity:
    url = f"{cluster.address.rstrip('/')}/api/cluster_status"
    try:
        body = _http_json(url, auth_headers(cluster))
    except urllib.error.HTTPError as exc:
        why = "authentication failed: check token_file / token_env" if exc.code in (401, 403) else exc.reason
        return Capacity(cluster.name, "ray", error=f"HTTP {exc.code} from {url}: {why}")
    except (urllib.error.URLError, OSError) as exc:
        return Capacity(cluster.name, "ray", error=f"unreachable at {cluster.address}: {getattr(exc, 'reason', exc)}")
    except ClustersFileError as exc:
        return Capacity(cluster.name, "ray", error=str(exc))
    report = ((body.get("data") or {}).get("clusterStatus") or {}).get("loadMetricsReport") or {}
    nodes, custom = [], {}
    for node_id, usage in (report.get("usageByNode") or {}).items():
        total = Amount(*(float(usage.get(k, [0, 0])[1]) for k in ("CPU", "GPU", "memory")))
        used = Amount(*(float(usage.get(k, [0, 0])[0]) for k in ("CPU", "GPU", "memory")))
        gpu_type = next((k.split(":", 1)[1] for k in usage if k.startswith("accelerator_type:")), None)
        nodes.append(NodeCapacity(node_id[:12], total, total.minus(used), gpu_type))
        for name, (used_n, total_n) in usage.items():
            if name not in _RAY_BUILTIN and not name.startswith(_RAY_SKIP):
                idle, tot = custom.get(name, (0.0, 0.0))
                custom[name] = (idle + float(total_n) - float(used_n), tot + float(total_n))
    if not nodes:  # the GCS has no load report yet (cluster starting, or between two reports): no figures, not zero
        return Capacity(cluster.name, "ray", error=f"{cluster.address} reports no nodes yet; probe again in a few seconds")
    total = idle = Amount()
    for n in nodes:
        total, idle = total.plus(n.total), idle.plus(n.idle)
    pending = sum(int(count) for _, count in report.get("resourceDemand") or []) + len(report.get("pgDemand") or [])
    return Capacity(cluster.name, "ray", total=total, idle=idle, nodes=tuple(nodes), custom=custom, pending=pending)


def _quantity(value: Any) -> float:
    from kubernetes.utils.quantity import parse_quantity

    return float(parse_quantity(value)) if value is not None else 0.0


def _amount(resources: dict[str, Any] | None) -> Amount:
    resources = resources or {}
    return Amount(_quantity(resources.get("cpu")), sum(_quantity(resources.get(g)) for g in GPU_RESOURCES), _quantity(resources.get("memory")))


def _pod_requests(pod) -> Amount:
    """What the scheduler reserves for a pod: max(sum of containers, largest init container) + overhead."""
    spec = pod.spec
    containers = Amount()
    for c in spec.containers or []:
        containers = containers.plus(_amount(c.resources.requests if c.resources else None))
    init = [_amount(c.resources.requests if c.resources else None) for c in spec.init_containers or []]
    need = Amount(max([containers.cpus, *(i.cpus for i in init)]), max([containers.gpus, *(i.gpus for i in init)]), max([containers.memory, *(i.memory for i in init)]))
    return need.plus(_amount(spec.overhead))


def _node_ready(node) -> bool:
    conditions = (node.status.conditions or []) if node.status else []
    return not (node.spec and node.spec.unschedulable) and any(c.type == "Ready" and c.status == "True" for c in conditions)


def _volcano_queue(api_client, name: str) -> tuple[dict[str, Any], Amount | None]:
    import kubernetes

    custom = kubernetes.client.CustomObjectsApi(api_client)
    try:
        obj = custom.get_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", name, _request_timeout=PROBE_TIMEOUT_S)
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            return {"name": name, "state": None, "error": _missing_queue(name, exc.body)}, Amount()
        raise
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    allocated = _amount(status.get("allocated"))
    queue = {"name": name, "state": status.get("state"), "allocated": vars(allocated), "running": status.get("running", 0), "pending": status.get("pending", 0)}
    if not spec.get("capability"):
        return queue, None
    capability = _amount(spec["capability"])
    queue["capability"] = vars(capability)
    headroom = capability.minus(allocated)
    # A capability that does not name a resource does not limit it.
    return queue, Amount(*(h if c else float("inf") for h, c in zip(vars(headroom).values(), vars(capability).values())))


def _missing_queue(name: str, body: str | None) -> str:
    """A 404 naming the queue means it does not exist; any other 404 means the Queue CRD is not served."""
    try:
        details = json.loads(body or "").get("details") or {}
    except (ValueError, AttributeError):
        details = {}
    if details.get("name") == name:
        return f"Volcano queue '{name}' not found"
    return "Volcano is not installed (no queues.scheduling.volcano.sh)"


def _kube_client(cluster: KubernetesCluster):
    import kubernetes

    return kubernetes.config.new_client_from_config(config_file=cluster.kubeconfig, context=cluster.context)


def _probe_kubernetes(cluster: KubernetesCluster) -> Capacity:
    try:
        import kubernetes
    except ImportError:
        return Capacity(cluster.name, "kubernetes", error="the kubernetes client is not installed (pip install 'dataflow[k8s]')")
    try:
        api = _kube_client(cluster)
        core = kubernetes.client.CoreV1Api(api)
        selector = ",".join(f"{k}={v}" for k, v in sorted(cluster.node_selector.items())) or None
        node_list = core.list_node(label_selector=selector, _request_timeout=PROBE_TIMEOUT_S)
        pods = core.list_pod_for_all_namespaces(field_selector="status.phase!=Succeeded,status.phase!=Failed", _request_timeout=PROBE_TIMEOUT_S)
        queue, limit = _volcano_queue(api, cluster.queue) if cluster.queue else (None, None)
    except kubernetes.config.ConfigException as exc:
        return Capacity(cluster.name, "kubernetes", error=f"kubeconfig {cluster.kubeconfig or '~/.kube/config'}: {exc}")
    except kubernetes.client.ApiException as exc:
        return Capacity(cluster.name, "kubernetes", error=f"API server answered {exc.status} {exc.reason}")
    except (OSError, ValueError) as exc:  # urllib3 connection errors are OSErrors
        return Capacity(cluster.name, "kubernetes", error=f"unreachable: {exc}")
    requested: dict[str, Amount] = {}
    pending = 0
    for pod in pods.items:
        if not pod.spec.node_name:
            pending += 1
            continue
        requested[pod.spec.node_name] = requested.get(pod.spec.node_name, Amount()).plus(_pod_requests(pod))
    nodes = []
    for node in node_list.items:
        if not _node_ready(node):
            continue
        labels = node.metadata.labels or {}
        total = _amount(node.status.allocatable)
        gpu_type = next((labels[k] for k in GPU_TYPE_LABELS if labels.get(k)), None)
        nodes.append(NodeCapacity(node.metadata.name, total, total.minus(requested.get(node.metadata.name, Amount())), gpu_type))
    total = idle = Amount()
    for n in nodes:
        total, idle = total.plus(n.total), idle.plus(n.idle)
    return Capacity(cluster.name, "kubernetes", total=total, idle=idle, nodes=tuple(nodes), pending=pending, queue=queue, limit=limit)


def probe(cluster: RayCluster | KubernetesCluster) -> Capacity:
    """Probe one cluster; a failure is returned as ``Capacity.error``, never raised."""
    start = time.monotonic()
    cap = _probe_ray(cluster) if isinstance(cluster, RayCluster) else _probe_kubernetes(cluster)
    return replace(cap, seconds=time.monotonic() - start)


def probe_all(fleet: Fleet) -> dict[str, Capacity]:
    """Probe every cluster of the fleet at once; name -> Capacity, in file order."""
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(fleet.clusters)))) as pool:
        return dict(zip(fleet.names(), pool.map(probe, fleet.clusters)))
