"""The Ray Data engine."""
from dataflow.engines.ray.engine import RayEngine

__all__ = ["RayEngine"]
