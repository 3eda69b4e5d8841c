"""Run pipelines on Kubernetes: KubeRay RayJobs, Spark Operator SparkApplications, Volcano queues.

Rendering is pure Python and validates every object against the vendored CRD schemas; submitting
needs the ``k8s`` extra (the kubernetes client).

Examples:
    >>> from dataflow.k8s import load_cluster_config, render_pipeline
    >>> rendered = render_pipeline("pipelines/thumbnails.yaml", load_cluster_config(None))
    >>> [o["kind"] for o in rendered.objects]
    ['ConfigMap', 'RayJob']
"""
from dataflow.k8s.config import ClusterConfig, load_cluster_config
from dataflow.k8s.render import ManifestError, Rendered, render_pipeline, render_plan

__all__ = ["ClusterConfig", "ManifestError", "Rendered", "load_cluster_config", "render_pipeline", "render_plan"]
