"""Operators: the ``@op`` decorator and every built-in op (importing this fills the registry)."""
from dataflow.errors import RowError
from dataflow.ops.declare import BatchFormat, Modality, Needs, OpKind, OpSpec, Resources, op
from dataflow.ops.registry import all_ops, get_op

__all__ = ["BatchFormat", "Modality", "Needs", "OpKind", "OpSpec", "Resources", "RowError", "all_ops", "get_op", "op"]

from dataflow.ops import audio, image, table, text  # noqa: E402,F401  (registers the built-in ops)
