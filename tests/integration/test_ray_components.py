"""Connected components on Ray without the driver: min-label propagation over shuffles (dataflow.engines.ray.components)."""
from __future__ import annotations

import pyarrow as pa
import pytest
import ray.data

from dataflow.engines.ray.components import MEMBERS, label_components


def _members(edges: list[tuple[str, str]]) -> pa.Table:
    rows = [(node, f"{a}|{b}") for a, b in edges for node in (a, b)]
    return pa.table({"node": [n for n, _ in rows], "edge": [e for _, e in rows], "label": [n for n, _ in rows], "changed": [0] * len(rows)}, schema=MEMBERS)


def test_every_node_gets_its_components_smallest_node_in_diameter_plus_one_rounds(ray_local):
    chain = [f"c{i:02d}" for i in range(12)]  # the smallest node at one end: its label walks 11 edges
    edges = list(zip(chain[1:], chain[:-1]))[::-1] + [("x2", "x1"), ("y", "x2"), ("p", "q")]
    table = _members(edges)
    blocks = [table.slice(i, 5) for i in range(0, table.num_rows, 5)]  # edges spread over many blocks
    labelled, rounds = label_components(ray.data.from_arrow(blocks), parts=3)
    labels = {r["node"]: r["label"] for b in labelled.iter_batches(batch_size=None, batch_format="pyarrow") for r in b.to_pylist()}
    assert labels == {**{n: "c00" for n in chain}, "x1": "x1", "x2": "x1", "y": "x1", "p": "p", "q": "p"}
    assert rounds == 12  # the longest chain (11 edges) + 1 round that changes nothing


def test_no_edges_take_one_round(ray_local):
    labelled, rounds = label_components(ray.data.from_arrow([MEMBERS.empty_table()]), parts=2)
    assert (labelled.count(), rounds) == (0, 1)


@pytest.mark.parametrize("name", ["join_left", "join_one_to_many", "join_anti"], ids=["left", "one-to-many", "anti"])
def test_a_join_gives_the_same_rows_broadcast_or_shuffled(ray_local, name, tmp_path, monkeypatch):
    from tests.contracts.engine import CASES, assert_same_rows, run_case

    case = CASES[name]
    data, broadcast, _, _ = run_case(case, "ray", tmp_path / "broadcast")
    monkeypatch.setenv("DATAFLOW_RAY_BROADCAST_BYTES", "-1")  # no right side is small enough: both sides shuffle
    _, shuffled, _, _ = run_case(case, "ray", tmp_path / "shuffled")
    expected = case.expected(data)
    assert_same_rows(broadcast, expected)
    assert_same_rows(shuffled, [{**r, "__source__": r["__source__"].replace(str(tmp_path / "broadcast"), str(tmp_path / "shuffled"))} for r in expected])
