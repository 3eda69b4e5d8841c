"""Spark's JSON schema inference over a sample of lines (driver side, no Spark session)."""
from __future__ import annotations

import json

from dataflow.engines.spark.json_schema import infer_json_fields


def _nested(levels: int, leaf=1):
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def test_inference_types_structure_and_leaves_out_lines_it_cannot_read():
    sample = [
        json.dumps({"n": 1, "a": _nested(3), "m": {"k": [{"e": 1.5}]}}),
        json.dumps({"n": 2.5, "deep": _nested(63)}),  # 64 levels below the object: typed as such
        json.dumps({"deeper": _nested(64)}),  # 65: the value at the 65th level is a string (its JSON text)
        '{"n": ' + "[" * 200_000 + "]" * 200_000 + "}",  # deeper than Spark reads (and than Python's stack): left out
        "not json",
        "[1, 2]",
    ]
    fields = infer_json_fields(sample)
    assert fields["n"] == "double" and fields["a"] == "ARRAY<ARRAY<ARRAY<bigint>>>"
    assert fields["m"] == "STRUCT<`k`: ARRAY<STRUCT<`e`: double>>>"
    assert fields["deep"] == "ARRAY<" * 63 + "bigint" + ">" * 63
    assert fields["deeper"] == "ARRAY<" * 64 + "string" + ">" * 64
