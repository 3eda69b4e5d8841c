"""Pipeline files of the k8s tests and a one-call render with a cluster config written from text."""
from __future__ import annotations

import pathlib

from dataflow.k8s.config import load_cluster_config
from dataflow.k8s.render import render_pipeline

ROOT = pathlib.Path(__file__).parents[3]
HERE = pathlib.Path(__file__).parent
THUMBNAILS = str(ROOT / "pipelines" / "thumbnails.yaml")
TABLE_ONLY = str(HERE / "pipelines" / "table_only.yaml")
GPU_RESIZE = str(HERE / "pipelines" / "gpu_resize.yaml")
MIXED = str(HERE / "pipelines" / "mixed_stages.yaml")


def render(pipeline: str, config_yaml: str | None = None, tmp_path: pathlib.Path | None = None, **overrides):
    """Render ``pipeline`` with a cluster config written from ``config_yaml`` (into ``tmp_path``)."""
    config_file = None
    if config_yaml is not None:
        config_file = str(tmp_path / "k8s.yaml")
        pathlib.Path(config_file).write_text(config_yaml)
    return render_pipeline(pipeline, load_cluster_config(config_file, **overrides), config_file=config_file)


def job(rendered) -> dict:
    """The one job of a single-stage render."""
    (only,) = rendered.jobs
    return only
