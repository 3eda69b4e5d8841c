"""Typed op inputs against a known source schema (Parquet footers): plan errors name column, type and expectation."""
from __future__ import annotations

import pyarrow as pa
import pytest

from dataflow.dsl.spec import PipelineSpec
from dataflow.errors import OpDefinitionError, PlanError
from dataflow.ops.declare import ColumnType, op
from dataflow.plan.build import build_plan
from dataflow.plan.input_types import arrow_accepts, check_input_types

HF_IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def _plan(steps):
    return build_plan(PipelineSpec.model_validate({"name": "p", "source": {"uri": "/in", "format": "parquet"}, "steps": steps, "sink": {"uri": "/out"}}))


def test_list_column_for_a_text_op_is_a_plan_error_keyed_by_the_step():
    plan = _plan([{"op": "text.normalize"}, {"op": "text.filter_length", "params": {"column": "tags"}}])
    with pytest.raises(PlanError) as info:
        check_input_types(plan, pa.schema([("text", pa.string()), ("tags", pa.list_(pa.string()))]))
    [issue] = info.value.issues
    assert issue.key == "steps[1]"
    assert issue.message == "text.filter_length reads column 'tags' of type list<item: string>, but expects string"


def test_hugging_face_image_struct_is_accepted_by_image_decode_and_int_is_not():
    check_input_types(_plan([{"op": "image.decode", "params": {"column": "image"}}]), pa.schema([("image", HF_IMAGE)]))
    with pytest.raises(PlanError, match="image.decode reads column 'bytes' of type int64, but expects image_bytes"):
        check_input_types(_plan([{"op": "image.decode"}]), pa.schema([("bytes", pa.int64())]))


def test_columns_written_by_a_step_are_not_checked_against_the_source():
    plan = _plan([{"op": "table.with_columns", "params": {"columns": {"text": "CAST(n AS STRING)"}}}, {"op": "text.normalize"}])
    check_input_types(plan, pa.schema([("text", pa.int64()), ("n", pa.int64())]))


@pytest.mark.parametrize(("kind", "arrow", "ok"), [
    (ColumnType.STRING, pa.large_string(), True),
    (ColumnType.STRING, pa.dictionary(pa.int32(), pa.string()), True),
    (ColumnType.STRING, pa.binary(), False),
    (ColumnType.BINARY, pa.large_binary(), True),
    (ColumnType.BINARY, HF_IMAGE, False),
    (ColumnType.IMAGE_BYTES, pa.struct([("bytes", pa.string())]), False),
    (ColumnType.IMAGE_BYTES, pa.null(), True),
])
def test_arrow_types_accepted_per_kind(kind, arrow, ok):
    assert arrow_accepts(kind, arrow) is ok


def test_input_types_must_name_an_input_and_a_known_kind():
    with pytest.raises(OpDefinitionError, match="input_types must map entries of inputs"):
        @op(name="text.typed_wrong", modality="text", inputs=("text",), outputs=("text",), input_types={"text": "list"})
        def typed_wrong(batch):
            """Nothing."""
            return batch
