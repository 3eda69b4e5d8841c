"""Ray's ReadStream on compressed JSON lines (in this process, no Ray): UTF-8 lines go through the block readers, decompressed."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.mark.parametrize(("options", "reader"), [({"schema": {"n": "int", "level": "string"}}, "typed_jsonl"), ({"split": "line"}, "text")])
def test_a_gzip_file_of_utf8_lines_is_read_in_blocks_with_its_line_numbers(tmp_path, monkeypatch, options, reader):
    from connectors.formats import lines, typed_jsonl
    from dataflow.engines.ray.read import ReadStream
    from dataflow.runtime.stats import SideOutputs

    def line_by_line(*args, **kwargs):
        raise AssertionError("read line by line")

    monkeypatch.setattr(typed_jsonl, "jsonl_row", line_by_line)
    monkeypatch.setattr(typed_jsonl, "read_typed_jsonl", line_by_line)
    monkeypatch.setattr(lines, "read_text", line_by_line)
    fmt = "jsonl" if reader == "typed_jsonl" else "text"
    path = tmp_path / f"part.{fmt}.gz"
    body = "".join(json.dumps({"n": i, "level": "INFO"}) + "\n" + ("\n" if i == 2 else "") for i in range(5))
    path.write_bytes(gzip.compress(body.encode()))
    out = tmp_path / "out"
    side = SideOutputs(str(out), {}, str(out / "_stats"), str(out / "_errors"))
    stream = ReadStream(str(tmp_path), fmt, options, {}, None, side)
    blocks = list(stream({"uri": np.array([str(path)]), "info": np.array([""])}))
    table = pa.concat_tables(blocks)
    assert table.column("__source__").to_pylist() == [f"{path}#line={n}" for n in (1, 2, 3, 5, 6)]  # line 4 is empty


_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.sampled_from(["x", "y", "__source__", "z w"]), _VALUES, max_size=3), min_size=1, max_size=6))
def test_read_rows_become_the_block_ray_data_makes_of_their_columns(rows):
    """Rows of any JSON values (mixed kinds, nulls, nesting, NaN) give the block Ray Data's own conversion of ``from_rows`` gives."""
    from ray.data.block import BlockAccessor

    from dataflow.batch import from_rows
    from dataflow.columns import SOURCE
    from dataflow.engines.ray.read import rows_block

    rows = [{SOURCE: f"f#line={i}", **{k: v for k, v in r.items() if k != SOURCE}} for i, r in enumerate(rows)]
    try:
        want = BlockAccessor.batch_to_block(from_rows(rows, [SOURCE]))
    except (OverflowError, ValueError, TypeError):  # numpy cannot hold the column either way
        want = None
    got = rows_block(rows) if want is not None else None
    if isinstance(got, pa.Table):
        assert got.schema == want.schema and repr(got.to_pylist()) == repr(want.to_pylist())  # repr: NaN and -0.0 compared too
    elif want is not None:  # left to Ray: a column Arrow cannot type, which Ray keeps as Python objects
        assert any(isinstance(f.type, pa.ExtensionType) for f in want.schema), want.schema


def test_untyped_json_lines_give_the_same_blocks_and_errors_with_arrow_batches_as_line_by_line(tmp_path, monkeypatch):
    """Batches Arrow takes and lines Python parses (bad, blank and long lines, values of two kinds, a second file) give the blocks and row errors of parsing every line."""
    from connectors.formats import jsonl_runs
    from dataflow.engines.ray import read
    from dataflow.runtime.stats import SideOutputs

    monkeypatch.setattr(read, "LINES_PER_BATCH", 8)
    lines = [json.dumps({"n": i, "level": "INFO", "ctx": {"a": [i, None]}}) for i in range(100)]
    lines[11] = "not json"
    lines[12] = ""
    lines[19] = json.dumps({"n": "nineteen"})  # a string among ints: that batch keeps Python's objects
    lines[70] = '{"n": ' + "1" * 200 + "}"  # over max_line_bytes
    files = [tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"]
    files[0].write_text("\n".join(lines[:57]) + "\n")
    files[1].write_bytes(gzip.compress(("\n".join(lines[57:]) + "\n").encode()))
    batch = {"uri": np.array([str(f) for f in files]), "info": np.array(["", ""])}

    def run(name):
        out = tmp_path / name
        side = SideOutputs(str(out), {}, str(out / "_stats"), str(out / "_errors"))
        blocks = list(read.ReadStream(str(tmp_path), "jsonl", {"max_line_bytes": 150}, {}, None, side)(batch))
        errors = sorted(p.read_bytes() for p in (out / "_errors").rglob("*") if p.is_file())
        return [(str(b.schema), repr(b.to_pylist())) if isinstance(b, pa.Table) else ("columns", repr({k: list(v) for k, v in b.items()})) for b in blocks], errors

    taken = []
    monkeypatch.setattr(jsonl_runs, "arrow_batch", lambda *a, arrow=jsonl_runs.arrow_batch: taken.append(t := arrow(*a)) or t)
    got, got_errors = run("arrow")
    assert sum(t is not None for t in taken) >= 2
    monkeypatch.setattr(jsonl_runs, "arrow_batch", lambda *a: None)
    want, want_errors = run("python")
    assert got == want and ("columns" in dict(want))  # the batch of two kinds stays Python's objects
    assert got_errors == want_errors and len(want_errors) > 0
