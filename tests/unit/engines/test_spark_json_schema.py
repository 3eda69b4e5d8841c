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


def test_the_sample_skips_lines_longer_than_the_limit_and_keeps_to_its_bounds(tmp_path, monkeypatch):
    """A line of more than ``max_line_bytes`` is a row error of the read: the driver's sample counts it and never holds it
    (before, a gzip file of one 3 GiB line was read whole into the driver to infer a schema)."""
    import gzip

    from dataflow.engines.spark import json_schema

    monkeypatch.setattr(json_schema, "_SAMPLE_LINES", 4)
    long = json.dumps({"long": "z" * 5000})
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(f'{long}\r\n{{"n": 1}}\r\n{{"n": 2}}\n'.encode()))
    (tmp_path / "b.jsonl").write_text("")  # holds no line: not one of the files sampled
    (tmp_path / "c.jsonl").write_text("".join(f'{{"c{i}": {i}}}\n' for i in range(10)))  # four lines of it
    (tmp_path / "d.jsonl.gz").write_bytes(gzip.compress(b'{"d": 1}\n')[:-6])  # damaged: what could be read (nothing), no error
    files = [str(tmp_path / n) for n in ("a.jsonl.gz", "b.jsonl", "c.jsonl", "d.jsonl.gz")]
    got = json_schema.sample_lines(files, {}, max_line=1000)
    assert got == ['{"n": 1}', '{"n": 2}', *(f'{{"c{i}": {i}}}' for i in range(4))]
    assert "long" not in json_schema.infer_json_fields(got)
    monkeypatch.setattr(json_schema, "_SAMPLE_FILES", 1)
    assert json_schema.sample_lines(files, {}, max_line=1000) == ['{"n": 1}', '{"n": 2}']
    assert json_schema.sample_lines(files, {}, max_line=10_000)[0] == long  # within the limit: sampled
