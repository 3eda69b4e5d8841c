"""``@op``: the one way to declare an operator.

The types it uses are imported from here too: the vocabulary (``Modality``, ``OpKind``,
``BatchFormat``, ``ColumnType``) lives in ``ops.kinds``, ``OpSpec`` and ``Params`` in
``ops.op_spec``, ``Resources`` and ``Needs`` in ``ops.resources``.
"""
from __future__ import annotations

import inspect
import re
from typing import Any, Callable

import pydantic

from dataflow.errors import OpDefinitionError
from dataflow.ops.kinds import BatchFormat, ColumnType, Modality, OpKind
from dataflow.ops.op_spec import TEMPLATE_RE, OpSpec, Params
from dataflow.ops.resources import Needs, Resources
from dataflow.ops.signature import param_fields, parse_args_doc

__all__ = ["BatchFormat", "ColumnType", "Modality", "Needs", "OpKind", "OpSpec", "Params", "Resources", "op"]

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
_COLUMN_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


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
            if not (_COLUMN_RE.match(col) or TEMPLATE_RE.match(col)):
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
            m = TEMPLATE_RE.match(col)
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
