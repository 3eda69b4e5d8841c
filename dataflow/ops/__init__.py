"""Operators: the ``@op`` decorator and the registry; built-in ops import on first lookup (see ``registry``)."""
from dataflow.errors import RowError
from dataflow.ops.declare import BatchFormat, Modality, Needs, OpKind, OpSpec, Resources, op
from dataflow.ops.registry import all_ops, get_op

__all__ = ["BatchFormat", "Modality", "Needs", "OpKind", "OpSpec", "Resources", "RowError", "all_ops", "get_op", "op"]
