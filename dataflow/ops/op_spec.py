"""``OpSpec``, what ``@op`` returns (a declared operator, still callable on a batch), and ``Params``, its param models' base."""
from __future__ import annotations

import importlib.util
import inspect
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import pydantic

from dataflow.errors import OpDefinitionError
from dataflow.ops.kinds import BatchFormat, ColumnType, Modality, OpKind
from dataflow.ops.resources import Needs, Resources

__all__ = ["TEMPLATE_RE", "OpSpec", "Params"]

TEMPLATE_RE = re.compile(r"^\{([a-z_][a-z0-9_]*)\}$")  # a column named by a parameter: ``{column}``


class Params(pydantic.BaseModel):
    """The base of every op's parameter model: validated once at plan time, shipped as is.

    An instance travels to a worker with its op (``OpSpec`` pickles by value) and is rebuilt there
    from its values without validating again.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    def __reduce__(self):
        from dataflow.ops.shipping import rebuild_params

        # Not dict(self): a field called ``keys`` would make dict() read the model as a mapping.
        return rebuild_params, (type(self).__dataflow_op__, {name: getattr(self, name) for name in type(self).model_fields})


@dataclass(frozen=True, eq=False)
class OpSpec:
    """A declared operator; calling it runs the CPU path on one batch (or row)."""

    name: str
    modality: Modality
    kind: OpKind
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    batch_format: BatchFormat
    resources: Resources
    target: Callable[..., Any]
    params: type[pydantic.BaseModel]
    summary: str
    doc: str
    param_docs: dict[str, str]
    stateful: bool = False
    extra: str | None = None
    requires: tuple[str, ...] = ()
    needs: tuple[Needs, ...] = ()
    output_columns: Callable[[frozenset[str] | None, pydantic.BaseModel], frozenset[str] | None] | None = None
    gpu_target: Callable[..., Any] | None = field(default=None, compare=False)
    gpu_resources: Resources | None = None
    input_types: tuple[tuple[str, ColumnType], ...] = ()
    reshapes: bool = False
    consumes: tuple[str, ...] = ()
    partition_by: str | None = None
    bucketing: Callable[[pydantic.BaseModel], Any] | None = field(default=None, compare=False)

    @property
    def drops_rows(self) -> bool:
        """Whether the input rows it does not pass on count as dropped: filters, and global ops that keep a subset (dedups)."""
        return self.kind is OpKind.FILTER or (self.kind is OpKind.GLOBAL and not self.reshapes)

    def __call__(self, batch: Any, **params: Any) -> Any:
        return self.bind(self.params(**params))(batch)

    def __reduce__(self):
        """Travel to a worker by value: by import reference when the op lives in a module, else its callable, cloudpickled."""
        from dataflow.ops.shipping import reduce_op

        return reduce_op(self)

    @property
    def gpu_capable(self) -> bool:
        """Whether the op has a GPU path: a ``.gpu()`` variant or a ``device`` parameter."""
        return self.gpu_target is not None or "device" in self.params.model_fields

    def requirements(self, params: dict[str, Any] | None = None) -> list[tuple[str, str | None]]:
        """Return (module, pip extra) for every module this op needs with ``params`` (raw values; defaults fill the rest)."""
        out = [(m, self.extra) for m in self.requires]
        fields_ = self.params.model_fields
        for need in self.needs:
            value = (params or {}).get(need.param, fields_[need.param].default)
            if value == need.value:
                out += [(m, need.extra) for m in need.modules]
        return out

    def missing(self, params: dict[str, Any] | None = None) -> tuple[list[str], str]:
        """Return the modules needed with ``params`` that do not import here, and the pip line installing them."""
        absent = [(m, e) for m, e in self.requirements(params) if importlib.util.find_spec(m.split(".")[0]) is None]
        extras = sorted({e for _, e in absent if e})
        if not absent:
            return [], ""
        if extras:
            return [m for m, _ in absent], f"pip install 'dataflow[{','.join(extras)}]'"
        return [m for m, _ in absent], f"pip install {' '.join(m for m, _ in absent)}"

    def impl(self, device: str = "cpu") -> Callable[..., Any]:
        """Return the raw function (or class) for ``device`` ("cpu" or "gpu")."""
        if device == "cpu":
            return self.target
        if device == "gpu" and self.gpu_target is not None:
            return self.gpu_target
        raise KeyError(f"op '{self.name}' has no '{device}' implementation")

    def bind(self, params: pydantic.BaseModel, device: str = "cpu") -> Callable[[Any], Any]:
        """Return a one-argument callable running this op with validated ``params``.

        A stateful op is instantiated here, once, so the engine calls ``bind`` once per worker.
        """
        target = self.impl(device)
        kwargs = params.model_dump()
        if self.stateful:
            return target(**kwargs)
        return lambda batch: target(batch, **kwargs)

    def columns(self, params: pydantic.BaseModel) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Return the (input, output) column names with ``{param}`` templates filled in."""
        values = params.model_dump()

        def fill(names: tuple[str, ...]) -> tuple[str, ...]:
            out = []
            for n in names:
                m = TEMPLATE_RE.match(n)
                out.append(str(values[m.group(1)]) if m else n)
            return tuple(out)

        return fill(self.inputs), fill(self.outputs)

    def consumed(self, params: pydantic.BaseModel) -> tuple[str, ...]:
        """The input columns this step turns into its outputs (``consumes``), templates filled in."""
        values = params.model_dump()
        return tuple(str(values[m.group(1)]) if (m := TEMPLATE_RE.match(n)) else n for n in self.consumes)

    def typed_inputs(self, params: pydantic.BaseModel) -> dict[str, ColumnType]:
        """Return input column -> expected kind, with ``{param}`` templates filled in."""
        values = params.model_dump()
        out = {}
        for name, kind in self.input_types:
            m = TEMPLATE_RE.match(name)
            out[str(values[m.group(1)]) if m else name] = kind
        return out

    def gpu(self, *, resources: Resources = Resources(num_gpus=1)) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register the GPU implementation of this op; it must equal the CPU path (tested)."""
        if not resources.num_gpus:
            raise OpDefinitionError(f"op '{self.name}': a .gpu() variant must request num_gpus > 0")

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            if inspect.signature(fn) != inspect.signature(self.target):
                raise OpDefinitionError(f"op '{self.name}': the GPU variant must have the CPU function's signature")
            object.__setattr__(self, "gpu_target", fn)
            object.__setattr__(self, "gpu_resources", resources)
            return fn

        return register
