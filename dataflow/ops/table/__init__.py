"""Table operators."""
from dataflow.ops.table import select  # noqa: F401
