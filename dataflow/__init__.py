"""dataflow: one pipeline description, distributed multimodal data processing on Ray and Spark.

Examples:
    >>> import dataflow
    >>> p = dataflow.read("./images", format="image").apply("image.decode")
"""
from dataflow.errors import DataflowError, PipelineSpecError, PlanError, RowError, RunError
from dataflow.ops import Resources, op
from dataflow.pipeline import Pipeline, read

__version__ = "0.1.0"

__all__ = ["DataflowError", "Pipeline", "PipelineSpecError", "PlanError", "Resources", "RowError", "RunError", "__version__", "op", "read"]
