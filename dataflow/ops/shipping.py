"""How an op and its validated params travel to a worker: by value, never as a registry name.

An op declared in an importable module travels as its import reference (``module:attr``), as
pickle sends any module-level function; an op declared in ``__main__`` or a notebook cell, or made
from a plain function by ``Pipeline.map_batches``, travels as its callable (or class) cloudpickled
by value, the way Ray ships ``map_batches`` functions, and is rebuilt on the worker without
touching its registry. Params travel as the op's param model and are not validated again there.
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import fields
from typing import Any

import pydantic

__all__ = ["import_reference", "rebuild_op", "rebuild_params", "reduce_op", "reference"]

_BY_VALUE_SKIP = ("target", "gpu_target", "params")


def reference(spec) -> str | None:
    """``module:attr`` naming ``spec`` in an importable module, or None (``__main__``, a notebook cell, a plain function)."""
    module = getattr(spec.target, "__module__", None)
    attr = getattr(spec.target, "__name__", None)
    if not module or module == "__main__" or not attr or module not in sys.modules:
        return None
    return f"{module}:{attr}" if getattr(sys.modules[module], attr, None) is spec else None


def import_reference(ref: str):
    """Import the op ``module:attr`` (what a worker does with an op declared in a module)."""
    module, attr = ref.split(":")
    return getattr(importlib.import_module(module), attr)


def reduce_op(spec) -> tuple:
    """``OpSpec.__reduce__``: by import reference when there is one, else by value."""
    ref = reference(spec)
    if ref is not None:
        return import_reference, (ref,)
    values = {f.name: getattr(spec, f.name) for f in fields(spec) if f.name not in _BY_VALUE_SKIP}
    model = spec.params
    params = {n: (f.annotation, f.default if not f.is_required() else ...) for n, f in model.model_fields.items()}
    return rebuild_op, (values, spec.target, spec.gpu_target, model.__name__, params)


def rebuild_op(values: dict[str, Any], target, gpu_target, model_name: str, params: dict[str, Any]):
    """Rebuild an op shipped by value; it is not registered in the worker."""
    from dataflow.ops.declare import OpSpec, Params

    model = pydantic.create_model(model_name, __base__=Params, **params)
    spec = OpSpec(target=target, gpu_target=gpu_target, params=model, **values)
    model.__dataflow_op__ = spec
    return spec


def rebuild_params(spec, values: dict[str, Any]) -> pydantic.BaseModel:
    """The step's params, validated at plan time, rebuilt from their values without validating again."""
    return spec.params.model_construct(**values)
