"""Ray's ReadStream on compressed JSON lines (in this process, no Ray): UTF-8 lines go through the block readers, decompressed."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pytest


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
