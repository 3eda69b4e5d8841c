"""dataflow: one pipeline description, distributed multimodal data processing on Ray and Spark.

``Pipeline``, ``read``, ``op``, ``Resources`` and the ``from_*`` constructors import on first use, so ``import dataflow`` and
``dataflow --help`` stay fast.

Examples:
    >>> import dataflow
    >>> p = dataflow.read("./images", format="image").apply("image.decode")
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dataflow.errors import DataflowError, PipelineSpecError, PlanError, RowError, RunError

if TYPE_CHECKING:
    from dataflow.memory import from_arrow, from_huggingface, from_items, from_pandas, from_ray, from_spark
    from dataflow.ops.declare import op
    from dataflow.ops.resources import Resources
    from dataflow.pipeline import Pipeline, read

__version__ = "0.1.0"

__all__ = [
    "DataflowError", "Pipeline", "PipelineSpecError", "PlanError", "Resources", "RowError", "RunError", "__version__",
    "from_arrow", "from_huggingface", "from_items", "from_pandas", "from_ray", "from_spark", "op", "read",
]

_LAZY = {
    "Pipeline": "dataflow.pipeline", "read": "dataflow.pipeline", "op": "dataflow.ops.declare", "Resources": "dataflow.ops.resources",
    **dict.fromkeys(("from_arrow", "from_huggingface", "from_items", "from_pandas", "from_ray", "from_spark"), "dataflow.memory"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'dataflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
