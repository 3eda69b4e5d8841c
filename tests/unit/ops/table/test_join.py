"""table.join: SQL joins with a named table; null keys never match, collisions get a suffix."""
from __future__ import annotations

import pyarrow as pa
import pydantic
import pytest

from dataflow.ops.table.join import join_tables
from dataflow.ops.table.named import bind_tables

LEFT = pa.table({"__source__": ["l1", "l2", "l3"], "link": ["a", "b", None], "rx": [1.0, 2.0, 3.0]})
RIGHT = pa.table({"__source__": ["r1", "r2"], "link": ["a", None], "rx": ["x", "y"], "label": ["gold", "none"]})


@pytest.mark.parametrize(
    "how, sources, labels",
    [("inner", ["l1"], ["gold"]), ("left", ["l1", "l2", "l3"], ["gold", None, None]), ("semi", ["l1"], None), ("anti", ["l2", "l3"], None)],
    ids=["inner", "left", "semi", "anti"],
)
def test_join_types_and_null_keys(how, sources, labels):
    with bind_tables(labels=RIGHT):
        out = join_tables(LEFT, right="labels", keys=["link"], how=how)
    rows = sorted(out.to_pylist(), key=lambda r: r["__source__"])
    assert [r["__source__"] for r in rows] == sources
    if labels is not None:
        assert out.column_names == ["__source__", "link", "rx", "rx_right", "label"]
        assert [r["label"] for r in rows] == labels
    else:
        assert out.column_names == LEFT.column_names


def test_an_unbound_table_names_the_ones_that_are():
    with bind_tables(other=RIGHT), pytest.raises(KeyError, match=r"no named table 'labels' is bound \(have: other\)"):
        join_tables(LEFT, right="labels", keys=["link"])


def test_how_is_checked():
    with pytest.raises(pydantic.ValidationError, match="'inner', 'left', 'right', 'full', 'semi' or 'anti'"):
        join_tables.params(right="labels", keys=["link"], how="outer")


def test_a_left_row_matched_several_times_gets_unique_identities():
    right = pa.table({"__source__": ["r2", "r1", "r3"], "link": ["a", "a", "z"], "label": ["two", "one", "lone"]})
    with bind_tables(labels=right):
        out = join_tables(LEFT, right="labels", keys=["link"], how="full")
    rows = sorted((r["__source__"], r["label"]) for r in out.to_pylist())
    # Matches ranked by the right row's identity; an unmatched right row keeps its own.
    assert rows == [("l1#match=1", "one"), ("l1#match=2", "two"), ("l2", None), ("l3", None), ("r3", "lone")]


def test_untyped_all_null_columns_pass_through_a_join():
    from dataflow.ops.table.join import join_arrow

    left = pa.table({"__source__": ["a", "b"], "k": [1, 2], "n": pa.nulls(2)})
    right = pa.table({"__source__": ["r"], "k": [1], "m": pa.nulls(1), "v": [5]})
    assert join_arrow(left, right, ["k"], "left", "_r").to_pylist() == [
        {"__source__": "a", "k": 1, "n": None, "m": None, "v": 5}, {"__source__": "b", "k": 2, "n": None, "m": None, "v": None}]
    assert join_arrow(left, right, ["k"], "semi", "_r").to_pylist() == [{"__source__": "a", "k": 1, "n": None}]
