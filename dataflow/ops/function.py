"""Ops made from a plain function or callable class (``Pipeline.map_batches``), as Ray Data's ``map_batches`` takes them.

They have a generated name (``udf.<function>``), register only in this process (not in
``dataflow ops``), declare no columns (what they write is known when they run) and travel to the
workers by value (``dataflow.ops.shipping``). A pipeline holding one cannot be written as YAML.
"""
from __future__ import annotations

import inspect
import re
from typing import Any, Callable

import pydantic

from dataflow.errors import OpDefinitionError
from dataflow.ops.declare import BatchFormat, Modality, OpKind, OpSpec, Params, Resources

__all__ = ["function_op"]


def _unknown_columns(columns: frozenset[str] | None, params: Any) -> None:
    """A function's output columns are known only when it runs."""
    return None


def _base_name(fn: Any) -> str:
    raw = getattr(fn, "__name__", None) or type(fn).__name__
    name = re.sub(r"[^a-z0-9_]", "_", re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", raw).lower()).strip("_") or "fn"
    return f"udf.{'f_' + name if name[0].isdigit() else name}"


def function_op(
    fn: Callable[..., Any] | type,
    *,
    batch_format: str = "numpy",
    resources: Resources | None = None,
    fn_kwargs: dict[str, Any] | None = None,
    fn_constructor_kwargs: dict[str, Any] | None = None,
) -> OpSpec:
    """Return a map op running ``fn`` on each batch, registered in this process under a free ``udf.*`` name.

    Args:
        fn: A function ``fn(batch, **fn_kwargs) -> batch``, or a class whose ``__init__(**fn_constructor_kwargs)``
            runs once per worker (load a model there) and whose instances are called on each batch.
        batch_format: numpy (a dict of arrays), pyarrow, pandas or row.
        resources: What one worker needs (CPUs, GPUs, actors, batch size).
        fn_kwargs: Keyword arguments of every call of a function.
        fn_constructor_kwargs: Keyword arguments of a class's constructor.
    """
    from dataflow.ops.registry import free_local_name, register_local

    if batch_format not in BatchFormat._value2member_map_:
        raise OpDefinitionError(f"map_batches: batch_format must be one of {[f.value for f in BatchFormat]}, got {batch_format!r}")
    stateful = inspect.isclass(fn)
    if not stateful and not callable(fn):
        raise OpDefinitionError(f"map_batches: expected a function or a callable class, got {type(fn).__name__}")
    kwargs = (fn_constructor_kwargs if stateful else fn_kwargs) or {}
    name = free_local_name(_base_name(fn))
    model = pydantic.create_model(f"{name.replace('.', '_')}_params", __base__=Params, **{k: (Any, v) for k, v in kwargs.items()})
    doc = inspect.cleandoc(getattr(fn, "__doc__", None) or "") if stateful or inspect.isfunction(fn) else ""
    spec = OpSpec(
        name=name, modality=Modality.TABLE, kind=OpKind.MAP, inputs=(), outputs=(), batch_format=BatchFormat(batch_format),
        resources=resources or Resources(), target=fn, params=model, summary=(doc.splitlines() or [f"map_batches({name[4:]})"])[0],
        doc=doc, param_docs={}, stateful=stateful, output_columns=_unknown_columns,
    )
    model.__dataflow_op__ = spec
    register_local(spec)
    return spec
