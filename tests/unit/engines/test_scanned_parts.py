"""``fused_read``: the files a read task scans in one DuckDB query (``query_groups``), and in parts where one file fails it (``scanned_parts``)."""
from __future__ import annotations

from dataflow.engines.ray.fused_read import query_groups, scanned_parts


def _scan(bad: set[str], calls: list):
    def scan(files: dict[str, int]):
        calls.append(set(files))
        return None if bad & files.keys() else sum(files.values())
    return scan


def _check(files: dict[str, int], bad: set[str]) -> list:
    calls: list = []
    parts = scanned_parts(files, _scan(bad, calls))
    scanned = [f for part, _ in parts for f in part]
    assert sorted(scanned) == sorted(set(files) - bad)  # each good file in exactly one part, no bad one
    assert all(done == sum(part.values()) for part, done in parts)
    return calls


def test_clean_files_are_scanned_in_one_query():
    files = {f"f{i:03d}": i + 1 for i in range(50)}
    assert _check(files, set()) == [set(files)]


def test_a_bad_file_among_many_costs_a_few_scans_not_one_per_file():
    files = {f"f{i:03d}": 1 for i in range(200)}
    calls = _check(files, {"f117"})
    assert len(calls) <= 25 and {"f117"} in calls


def test_every_file_bad_is_tried_alone_and_none_is_scanned():
    files = {f"f{i}": 1 for i in range(5)}
    calls = _check(files, set(files))
    assert all({f} in calls for f in files)


def test_no_files_no_scan():
    assert _check({}, set()) == []


def test_a_query_takes_files_up_to_its_bytes_in_order_and_a_bigger_file_alone():
    sizes = {"a": 40, "b": 50, "c": 30, "d": 250, "e": 10, "f": 100}
    lines = {p: 1 for p in sizes}
    groups = list(query_groups(lines, sizes, limit=100))
    assert [list(g) for g in groups] == [["a", "b"], ["c"], ["d"], ["e"], ["f"]]
    assert list(query_groups({}, {}, limit=100)) == []
