"""LeaveOutConsumedInputs: a decode's raw bytes are not written unless something later wants them."""
from __future__ import annotations

from dataflow.dsl.parse import parse_pipeline
from dataflow.plan import build_plan
from dataflow.plan.nodes import Write
from dataflow.plan.rules_media import LeaveOutConsumedInputs


def _write(*steps, source="image", **sink) -> Write:
    spec = parse_pipeline({"name": "p", "source": {"uri": "/in", "format": source}, "steps": list(steps), "sink": {"uri": "/out", **sink}})
    return next(n for n in LeaveOutConsumedInputs().apply(build_plan(spec)).nodes if isinstance(n, Write))


RESIZE = {"op": "image.resize", "params": {"max_side": 64}}


def test_a_decode_leaves_its_bytes_out_and_the_write_lists_what_it_writes():
    write = _write({"op": "image.decode"}, RESIZE)
    assert write.leaves_out == ("bytes",)
    assert write.columns == ("__source__", "height", "image", "width")
    assert _write({"op": "audio.decode"}, source="audio").leaves_out == ("bytes",)
    assert _write({"op": "image.decode"}, lineage=False).columns == ("height", "image", "width")


def test_kept_when_a_later_step_reads_or_rewrites_it_or_the_sink_asks_for_it():
    assert _write({"op": "image.decode"}, {"op": "table.filter_rows", "params": {"where": "length(bytes) > 10"}}).leaves_out == ()
    assert _write({"op": "image.decode"}, RESIZE, {"op": "image.encode", "params": {"format": "webp"}}).leaves_out == ()
    assert _write({"op": "image.decode"}, RESIZE, keep=["bytes"]).leaves_out == ()
    assert _write({"op": "image.decode", "params": {"output": "bytes"}}).leaves_out == ()  # decoded in place: the column is new data


def test_a_sink_that_writes_the_bytes_as_files_keeps_them_and_other_sources_leave_nothing_out():
    assert _write({"op": "image.decode"}, format="files").leaves_out == ()
    assert _write({"op": "image.decode"}, format="webdataset").leaves_out == ()
    assert _write({"op": "image.decode", "params": {"column": "jpg"}}, format="webdataset").leaves_out == ("jpg",)
    table = _write({"op": "table.filter_rows", "params": {"where": "x > 1"}}, source="jsonl")
    assert (table.leaves_out, table.columns) == ((), None)
