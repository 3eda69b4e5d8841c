"""table.parse_json: typed columns from JSON text; bad JSON and wrong types are row errors."""
from __future__ import annotations

import pydantic
import pytest

from dataflow.errors import RowError
from dataflow.ops.table.parse_json import parse_json
from dataflow.batch import from_rows
from dataflow.runtime.stage import StageExecutor, StepCall

FIELDS = {"ts": "long", "link": "string", "rx": "double", "up": "boolean", "meta": "string"}


def test_fields_are_converted_like_spark_and_missing_ones_are_null():
    row = {"__source__": "f#line=1", "text": '{"ts": 5, "link": 7, "rx": -3, "up": true, "meta": {"a": [1, 2]}, "extra": 1}'}
    out = parse_json(row, fields=FIELDS)
    assert out == {**row, "ts": 5, "link": "7", "rx": -3.0, "up": True, "meta": '{"a":[1,2]}'}
    assert parse_json({"text": "{}"}, fields={"ts": "long"})["ts"] is None


@pytest.mark.parametrize(
    "text, reason, error_type",
    [
        ("not json", "invalid JSON: Expecting value at column 1", "JSONDecodeError"),
        ("[1]", "expected a JSON object, got a JSON list", "TypeError"),
        ('{"ts": "n/a"}', "field 'ts' is not a long", "TypeError"),
        ('{"ts": 1.5}', "field 'ts' is not a long", "TypeError"),
        ('{"ts": 1, "up": 1}', "field 'up' is not a boolean", "TypeError"),
        ('{"ts": 99999999999999999999}', "field 'ts' is not a long", "TypeError"),
    ],
    ids=["bad-json", "not-an-object", "string-ts", "float-ts", "int-for-bool", "long-overflow"],
)
def test_bad_rows_raise_row_errors(text, reason, error_type):
    with pytest.raises(RowError, match=reason.replace("[", r"\[")) as info:
        parse_json({"text": text}, fields=FIELDS)
    assert type(info.value.__cause__).__name__ == error_type


def test_bad_rows_go_to_the_error_records_of_a_stage():
    rows = [{"__source__": f"f#line={i}", "text": t} for i, t in enumerate(['{"ts": 1}', "oops", '{"ts": 2}'])]
    cols, errors, stats = StageExecutor([StepCall(0, "table.parse_json", {"fields": {"ts": "long"}})])(from_rows(rows))
    assert cols["ts"].tolist() == [1, 2]
    assert [(e.source, e.error_type) for e in errors] == [("f#line=1", "JSONDecodeError")]
    assert (stats[0].rows_in, stats[0].rows_out, stats[0].rows_errored) == (3, 2, 1)


def test_unknown_field_type_is_rejected():
    with pytest.raises(pydantic.ValidationError, match="unknown type 'timestamp'"):
        parse_json.params(fields={"ts": "timestamp"})
