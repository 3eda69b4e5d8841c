"""``@op``: the one way to declare an operator, and the frozen types it uses."""
from __future__ import annotations

import enum
import importlib.util
import inspect
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import pydantic

from dataflow.errors import OpDefinitionError
from dataflow.ops.resources import Needs, Resources
from dataflow.ops.signature import param_fields, parse_args_doc

__all__ = ["BatchFormat", "ColumnType", "Modality", "Needs", "OpKind", "OpSpec", "Params", "Resources", "op"]

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
_COLUMN_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
_TEMPLATE_RE = re.compile(r"^\{([a-z_][a-z0-9_]*)\}$")


class Modality(str, enum.Enum):
    """What kind of data an op works on, whatever its namespace.

    The planner reads it: table ops may run on Spark, every other modality is media and runs on
    Ray Data with media-sized batches. A namespace that is a modality's name (``video.*``) must
    declare that modality; any other namespace (``doc.*``, ``myplugin.*``) declares the one its
    data is.
    """

    IMAGE = "image"
    AUDIO = "audio"
    VIDEO = "video"
    TEXT = "text"
    TABLE = "table"


class OpKind(str, enum.Enum):
    """How an op maps rows: one to one, keep or drop, one to many, or over the whole dataset."""

    MAP = "map"
    FILTER = "filter"
    FLAT_MAP = "flat_map"
    GLOBAL = "global"


class ColumnType(str, enum.Enum):
    """The kind of value an op expects in an input column (``@op(input_types=...)``).

    Checked against a Parquet source's schema at plan time, and per value when the run meets
    one of another kind (that row goes to ``_errors/``; the op never sees it).
    """

    BINARY = "binary"  # bytes
    STRING = "string"  # str
    IMAGE_BYTES = "image_bytes"  # encoded image bytes, or a Hugging Face ``Image`` struct {bytes, path}

    def accepts(self, value: Any) -> bool:
        """Whether a cell value is of this kind (None is left to the op: it knows what a missing value means)."""
        if value is None:
            return True
        if self is ColumnType.STRING:
            return isinstance(value, str)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return True
        if isinstance(value, dict) and self is ColumnType.IMAGE_BYTES:
            return set(value) <= {"bytes", "path"} and (value.get("bytes") is None or isinstance(value["bytes"], bytes))
        return False


class BatchFormat(str, enum.Enum):
    """The shape of the batch an op's function receives and returns."""

    NUMPY = "numpy"
    PYARROW = "pyarrow"
    PANDAS = "pandas"
    ROW = "row"


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
                m = _TEMPLATE_RE.match(n)
                out.append(str(values[m.group(1)]) if m else n)
            return tuple(out)

        return fill(self.inputs), fill(self.outputs)

    def consumed(self, params: pydantic.BaseModel) -> tuple[str, ...]:
        """The input columns this step turns into its outputs (``consumes``), templates filled in."""
        values = params.model_dump()
        return tuple(str(values[m.group(1)]) if (m := _TEMPLATE_RE.match(n)) else n for n in self.consumes)

    def typed_inputs(self, params: pydantic.BaseModel) -> dict[str, ColumnType]:
        """Return input column -> expected kind, with ``{param}`` templates filled in."""
        values = params.model_dump()
        out = {}
        for name, kind in self.input_types:
            m = _TEMPLATE_RE.match(name)
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


def op(
    *,
    name: str,
    modality: str,
    inputs: tuple[str, ...],
    outputs: tuple[str, ...],
    kind: str = "map",
    batch_format: str = "numpy",
    resources: Resources = Resources(),
    extra: str | None = None,
    requires: tuple[str, ...] = (),
    needs: tuple[Needs, ...] = (),
    output_columns: Callable[[frozenset[str] | None, Any], frozenset[str] | None] | None = None,
    input_types: dict[str, str] | None = None,
    reshapes: bool = False,
    consumes: tuple[str, ...] = (),
    partition_by: str | None = None,
    bucketing: Callable[[Any], Any] | None = None,
) -> Callable[[Callable[..., Any] | type], OpSpec]:
    """Declare an operator and register it.

    Args:
        name: Registry and YAML name, ``<namespace>.<verb>[_<object>]``: lower-case, dotted; the
            namespace is everything before the last dot (``video.scene_cut``, ``myplugin.doc.ocr``).
        modality: The kind of data: image, audio, video, text or table (see ``Modality``); must
            equal the namespace when the namespace is one of those.
        inputs: Columns read; ``{param}`` names a column given by a parameter.
        outputs: Columns written (added or replaced); ``{param}`` as for inputs.
        kind: map, filter (returns a keep mask), flat_map or global.
        batch_format: numpy, pyarrow, pandas or row.
        resources: Default resources of one worker.
        extra: The pip extra that installs what the op needs, if any.
        requires: Modules that must import for the op to run (checked at validation).
        needs: Modules needed only for some parameter values (checked at validation too).
        output_columns: For ops whose output schema depends on params (``table.select``):
            ``(input_columns, params) -> output_columns``.
        input_types: Entry of ``inputs`` -> the kind of value it must hold (a ``ColumnType``:
            binary, string, image_bytes). A column of another type is a plan error when the
            source's schema is known, else each such row is a row error.
        reshapes: A global op whose output rows are new rows, not a subset of its input
            (aggregations, joins): the run's row-conservation check does not hold it to
            ``rows_in == rows_out + dropped + errored``. Other global ops (dedups) count every
            input row they do not pass on as dropped.
        consumes: Entries of ``inputs`` whose data the outputs replace (a decode's encoded
            bytes): the sink leaves such a column out unless a later step reads it, a later step
            writes it anew, or ``sink.keep`` names it.
        partition_by: A global op whose rows group by the columns its parameter ``partition_by``
            lists (``keys``): engines hash-partition the rows on them and run the op per partition.
        bucketing: A global dedup's ``params -> dataflow.ops.dedup.Bucketing``: engines find the
            duplicates distributed, bucket by bucket. A global op with neither runs over all its
            rows at once (in one task, never on the driver).
    """
    from dataflow.ops.registry import register

    def decorate(target: Callable[..., Any] | type) -> OpSpec:
        if not _NAME_RE.match(name):
            raise OpDefinitionError(f"op '{name}': name must match <namespace>.<verb>[_<object>], lower-case and dotted (e.g. video.scene_cut)")
        if modality not in Modality._value2member_map_:
            raise OpDefinitionError(f"op '{name}': modality must be one of {', '.join(m.value for m in Modality)}, got {modality!r}")
        namespace = name.rsplit(".", 1)[0]
        if namespace in Modality._value2member_map_ and namespace != modality:
            raise OpDefinitionError(f"op '{name}': modality '{modality}' must equal the name's namespace '{namespace}'")
        if reshapes and kind != "global":
            raise OpDefinitionError(f"op '{name}': only a global op may reshape (got kind '{kind}')")
        if (partition_by or bucketing) and kind != "global":
            raise OpDefinitionError(f"op '{name}': only a global op declares how it shuffles (partition_by, bucketing; got kind '{kind}')")
        if not outputs and kind not in {"filter", "global"}:
            raise OpDefinitionError(f"op '{name}': outputs must not be empty")
        for col in (*inputs, *outputs):
            if not (_COLUMN_RE.match(col) or _TEMPLATE_RE.match(col)):
                raise OpDefinitionError(f"op '{name}': column '{col}' must be snake_case")
        stateful = inspect.isclass(target)
        call = target.__init__ if stateful else target
        fields_, names = param_fields(call, name, first=not stateful)
        if stateful:
            call_params = list(inspect.signature(target.__call__).parameters)
            if call_params[1:2] not in (["batch"], ["row"]):
                raise OpDefinitionError(f"op '{name}': __call__ must take 'batch' or 'row'")
        summary, arg_docs = parse_args_doc(target.__doc__ or "")
        if not summary:
            raise OpDefinitionError(f"op '{name}': needs a docstring")
        for n in names:
            if n not in arg_docs:
                raise OpDefinitionError(f"op '{name}': parameter '{n}' is not documented under 'Args:'")
        if partition_by is not None and partition_by not in names:
            raise OpDefinitionError(f"op '{name}': partition_by names no parameter '{partition_by}'")
        for need in needs:
            if need.param not in names:
                raise OpDefinitionError(f"op '{name}': needs names no parameter '{need.param}'")
        for col in (*inputs, *outputs):
            m = _TEMPLATE_RE.match(col)
            if m and m.group(1) not in names:
                raise OpDefinitionError(f"op '{name}': column template '{col}' names no parameter")
        if not set(consumes) <= set(inputs):
            raise OpDefinitionError(f"op '{name}': consumes must list entries of inputs, got {consumes!r}")
        for col, expected in (input_types or {}).items():
            if col not in inputs or expected not in ColumnType._value2member_map_:
                raise OpDefinitionError(f"op '{name}': input_types must map entries of inputs to one of {[t.value for t in ColumnType]}, got {col!r}: {expected!r}")
        model = pydantic.create_model(
            f"{name.replace('.', '_')}_params",
            __base__=Params,
            **{n: (t, pydantic.Field(d, description=arg_docs[n])) for n, (t, d) in fields_.items()},
        )
        spec = OpSpec(
            name=name,
            modality=Modality(modality),
            kind=OpKind(kind),
            inputs=tuple(inputs),
            outputs=tuple(outputs),
            batch_format=BatchFormat(batch_format),
            resources=resources,
            target=target,
            params=model,
            summary=summary,
            doc=inspect.cleandoc(target.__doc__ or ""),
            param_docs=arg_docs,
            stateful=stateful,
            extra=extra,
            requires=tuple(requires),
            needs=tuple(needs),
            output_columns=output_columns,
            input_types=tuple((col, ColumnType(expected)) for col, expected in (input_types or {}).items()),
            reshapes=reshapes,
            consumes=tuple(consumes),
            partition_by=partition_by,
            bucketing=bucketing,
        )
        model.__dataflow_op__ = spec
        register(spec)
        return spec

    return decorate
