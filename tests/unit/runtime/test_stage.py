"""StageExecutor on real encoded images: row errors isolated, filters counted, formats converted."""
from __future__ import annotations

import numpy as np
import pytest

from dataflow.runtime.stage import StageExecutor, StepCall
from tests.datagen import encode, gradient


def _batch(*blobs):
    return {"__source__": np.array([f"s{i}" for i in range(len(blobs))], dtype=object), "bytes": np.array(list(blobs), dtype=object)}


def test_fused_steps_decode_filter_resize_and_route_bad_rows():
    batch = _batch(encode(gradient(300, 200), "JPEG"), b"garbage", encode(gradient(40, 30), "PNG"), encode(gradient(100, 400), "WEBP"))
    ex = StageExecutor([
        StepCall(0, "image.decode", {}),
        StepCall(1, "image.filter_size", {"min_side": 64}),
        StepCall(2, "image.resize", {"max_side": 50}),
        StepCall(3, "image.encode", {"format": "png"}),
    ])
    cols, errors, stats = ex(batch)
    assert list(cols["__source__"]) == ["s0", "s3"]
    assert [(int(w), int(h)) for w, h in zip(cols["width"], cols["height"])] == [(50, 33), (12, 50)]
    assert [e.source for e in errors] == ["s1"]
    assert errors[0].op == "image.decode" and "undecodable image" in errors[0].reason
    assert (stats[0].rows_in, stats[0].rows_out, stats[0].rows_errored) == (4, 3, 1)
    assert sum(stats[1].drops.values()) == 1 and all(k.startswith("image.filter_size") for k in stats[1].drops)
    assert cols["bytes"][0][:8] == b"\x89PNG\r\n\x1a\n"


def test_pyarrow_op_keeps_decoded_images_aligned():
    batch = _batch(encode(gradient(64, 64), "PNG"), encode(gradient(80, 64), "PNG"))
    ex = StageExecutor([StepCall(0, "image.decode", {}), StepCall(1, "table.select", {"columns": ["image", "width"]})])
    cols, _, _ = ex(batch)
    assert set(cols) == {"image", "width", "__source__"}
    assert [img.shape for img in cols["image"]] == [(64, 64, 3), (64, 80, 3)]


def test_select_drops_unlisted_decoded_columns():
    ex = StageExecutor([StepCall(0, "image.decode", {}), StepCall(1, "table.select", {"columns": ["width"]})])
    cols, _, _ = ex(_batch(encode(gradient(64, 64), "PNG")))
    assert set(cols) == {"width", "__source__"}


def test_empty_batch_after_filter_skips_later_steps():
    ex = StageExecutor([StepCall(0, "image.decode", {}), StepCall(1, "image.filter_size", {"min_side": 1000}), StepCall(2, "image.resize", {})])
    cols, errors, stats = ex(_batch(encode(gradient(64, 64), "PNG")))
    assert len(cols["__source__"]) == 0 and not errors
    assert (stats[2].rows_in, stats[2].rows_out) == (0, 0)


def test_image_and_text_ops_apply_to_the_same_rows():
    batch = _batch(encode(gradient(300, 200), "JPEG"), encode(gradient(120, 240), "PNG"), b"garbage", encode(gradient(64, 64), "PNG"))
    batch["caption"] = np.array(["  a red  ball ", "ok", "a corrupt file", "a   blue sky at dusk"], dtype=object)
    ex = StageExecutor([
        StepCall(0, "image.decode", {}),
        StepCall(1, "text.normalize", {"column": "caption"}),
        StepCall(2, "text.filter_length", {"column": "caption", "min_chars": 5}),
        StepCall(3, "image.resize", {"max_side": 60}),
    ])
    cols, errors, stats = ex(batch)
    # Each surviving row keeps its own image and its own (normalized) caption, in order.
    assert list(cols["__source__"]) == ["s0", "s3"]
    assert list(cols["caption"]) == ["a red ball", "a blue sky at dusk"]
    assert [img.shape for img in cols["image"]] == [(40, 60, 3), (60, 60, 3)]
    assert [e.source for e in errors] == ["s2"] and errors[0].op == "image.decode"
    assert (stats[2].rows_in, stats[2].rows_out) == (3, 2)


def test_values_of_the_wrong_type_are_row_errors_naming_column_and_type():
    """A list where text is expected and an int where bytes are expected: the op never sees them."""
    batch = {
        "__source__": np.array(["s0", "s1", "s2"], dtype=object),
        "text": np.array(["  fine  text ", ["a", "list"], "ok"], dtype=object),
        "bytes": np.array([encode(gradient(20, 10), "PNG"), encode(gradient(20, 10), "PNG"), 7], dtype=object),
    }
    cols, errors, stats = StageExecutor([StepCall(0, "text.normalize", {}), StepCall(1, "image.decode", {})])(batch)
    assert list(cols["__source__"]) == ["s0"] and cols["text"][0] == "fine text"
    assert [(e.source, e.op, e.reason) for e in errors] == [
        ("s1", "text.normalize", "wrong input type: column 'text' holds list, expected string"),
        ("s2", "image.decode", "wrong input type: column 'bytes' holds int, expected image_bytes"),
    ]
    assert [(stats[i].rows_in, stats[i].rows_out, stats[i].rows_errored) for i in (0, 1)] == [(3, 2, 1), (2, 1, 1)]


def test_image_decode_reads_hugging_face_image_structs():
    png = encode(gradient(30, 20), "PNG")
    batch = {"__source__": np.array(["s0", "s1"], dtype=object), "image": np.array([{"bytes": png, "path": "a.png"}, {"bytes": None, "path": "b.png"}], dtype=object)}
    cols, errors, _ = StageExecutor([StepCall(0, "image.decode", {"column": "image", "output": "pixels"})])(batch)
    assert list(cols["__source__"]) == ["s0"] and cols["pixels"][0].shape == (20, 30, 3)
    assert errors[0].source == "s1" and "Hugging Face Image without bytes (path='b.png')" in errors[0].reason


def test_the_same_op_twice_in_one_stage_keeps_each_steps_params():
    batch = {"__source__": np.array(["s0", "s1", "s2"], dtype=object), "n": np.array([1, 5, 9])}
    ex = StageExecutor([
        StepCall(0, "table.with_columns", {"columns": {"x": "n * 2"}}),
        StepCall(1, "table.with_columns", {"columns": {"y": "x + 1"}}),
        StepCall(2, "table.filter_rows", {"where": "n > 1"}),
        StepCall(3, "table.filter_rows", {"where": "y < 15"}),
    ])
    cols, errors, stats = ex(batch)
    assert not errors
    assert list(cols["__source__"]) == ["s1"] and list(cols["x"]) == [10] and list(cols["y"]) == [11]
    assert [(stats[i].rows_in, stats[i].rows_out, sum(stats[i].drops.values())) for i in range(4)] == [(3, 3, 0), (3, 3, 0), (3, 2, 1), (2, 1, 1)]


def test_a_dedup_counts_the_rows_it_leaves_out_as_dropped():
    batch = {"__source__": np.array(["s0", "s1", "s2"], dtype=object), "k": np.array([1, 1, 2])}
    _, _, stats = StageExecutor([StepCall(0, "table.dedup", {"keys": ["k"]})])(batch)
    assert (stats[0].rows_in, stats[0].rows_out, dict(stats[0].drops)) == (3, 2, {"table.dedup": 1})


def test_arrow_steps_hand_each_other_the_arrow_table(monkeypatch):
    import datetime as dt
    import decimal

    import pyarrow as pa

    import dataflow.runtime.stage as stage

    table = pa.table({
        "__source__": pa.array(["a", "b", "c"], pa.large_string()),
        "ts": pa.array([dt.datetime(2024, 1, d, tzinfo=dt.timezone.utc) for d in (1, 2, 3)], pa.timestamp("us", tz="UTC")),
        "price": pa.array([decimal.Decimal("1.10"), None, decimal.Decimal("3.30")], pa.decimal128(9, 2)),
        "n": pa.array([1, 2, 3], pa.int32()),
    })
    ex = StageExecutor([
        StepCall(0, "table.filter_rows", {"where": "n > 1"}),
        StepCall(1, "table.with_columns", {"columns": {"m": "n * 10"}}),
        StepCall(2, "table.select", {"columns": ["ts", "price", "m"]}),
    ])
    monkeypatch.setattr(stage, "from_arrow", lambda _: pytest.fail("an Arrow step's batch went through numpy"))
    out, errors, stats = ex.run(table)
    assert isinstance(out, pa.Table) and not errors
    assert out.column("__source__").to_pylist() == ["b", "c"] and out.column("m").to_pylist() == [20, 30]
    ts = out.schema.field("ts").type  # DuckDB names UTC Etc/UTC
    assert pa.types.is_timestamp(ts) and ts.tz in ("UTC", "Etc/UTC") and out.schema.field("price").type == pa.decimal128(9, 2)
    assert out.column("price").to_pylist() == [None, decimal.Decimal("3.30")]
    assert [(stats[i].rows_in, stats[i].rows_out) for i in range(3)] == [(3, 2), (2, 2), (2, 2)]


def test_a_numpy_step_after_an_arrow_step_gets_columns_and_the_call_returns_columns():
    import pyarrow as pa

    table = pa.table({"__source__": ["a", "b"], "bytes": [encode(gradient(64, 64), "PNG"), b"garbage"]})
    ex = StageExecutor([StepCall(0, "table.select", {"columns": ["bytes"]}), StepCall(1, "image.decode", {})])
    out, errors, _ = ex.run(table)
    assert isinstance(out, dict) and list(out["__source__"]) == ["a"] and out["image"][0].shape == (64, 64, 3)
    assert [e.source for e in errors] == ["b"]
    cols, _, _ = ex({"__source__": np.array(["x"], dtype=object), "bytes": np.array([encode(gradient(8, 8), "PNG")], dtype=object)})
    assert isinstance(cols, dict) and cols["image"][0].shape == (8, 8, 3)


def test_columns_no_later_step_reads_leave_the_batch_after_the_step():
    import pyarrow as pa

    batch = pa.table({"__source__": ["a", "b"], "text": ['{"x": 1, "y": 2}', '{"x": 3, "y": 4}'], "other": [1, 2]})
    calls = [StepCall(0, "table.with_columns", {"columns": {"(x, y)": "json_tuple(text, 'x', 'y')"}}),
             StepCall(1, "table.with_columns", {"columns": {"z": "cast(x AS int) * 2"}})]
    out, _, stats = StageExecutor(calls, keeps=[frozenset({"__source__", "x"}), None]).run(batch)
    assert out.column_names == ["__source__", "x", "z"] and out.column("z").to_pylist() == [2, 6]
    assert (stats[0].rows_in, stats[0].rows_out, stats[1].rows_out) == (2, 2, 2)
