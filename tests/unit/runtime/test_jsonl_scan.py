"""JSON-lines files scanned by DuckDB inside the fused query (``FusedAggregate.run_files``) give the states and counters
of their Arrow reads (``read_typed_jsonl_blocks``) run through the same query, or None where a read has a row error."""
from __future__ import annotations

import json
import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.formats import BadRecord
from connectors.formats.aligned import object_lines
from connectors.formats.compressed import decompressed
from connectors.formats.typed_jsonl import arrow_schema, read_typed_jsonl_blocks
from dataflow.ops.table.partial_aggregate import two_phase
from dataflow.ops.table.sql import parse_aggregation
from dataflow.runtime.fused_sql import FusedAggregate
from dataflow.runtime.jsonl_scan import JsonlScan
from dataflow.runtime.stage import StepCall

DECLARED = {"service": "string", "level": "string", "lat": "double", "msg": "string", "n": "int", "big": "bigint", "ok": "boolean",
            "spare": "double", "tries": "int", "ctx": "struct<region: string, attempt: int, inner: struct<w: double>>"}  # no step reads spare or tries
SCHEMA = arrow_schema(DECLARED)
AGGS = {"c": "count(*)", "mu": "avg(lat)", "p": "percentile_approx(lat, 0.5)", "errs": "count_if(code LIKE '5%')", "eu": "count_if(region = 'eu')",
        "sn": "sum(n)", "sb": "max(big)", "oks": "count_if(ok)", "w": "max(ctx.inner.w)", "m": "max(msg)"}
STEPS = [("table.filter_rows", {"where": "level <> 'DEBUG'"}),
         ("table.with_columns", {"columns": {"region": "ctx.region", "code": r"regexp_extract(msg, 'code=(\\d+)', 1)"}})]


def _fused() -> FusedAggregate:
    calls = [StepCall(index=i, op=op, params=params) for i, (op, params) in enumerate(STEPS)]
    return FusedAggregate(calls, [None] * len(calls), two_phase({k: parse_aggregation(v) for k, v in AGGS.items()}), ["service"])


def _arrow_way(path: str) -> tuple[pa.Table | None, list]:
    with open(path, "rb") as raw, decompressed(raw, path) as f:
        records = list(read_typed_jsonl_blocks(path, f, {"schema": DECLARED}))
    bad = [r for r in records if isinstance(r, BadRecord)]
    tables = [r for r in records if isinstance(r, pa.Table)]
    return (pa.concat_tables(tables) if tables else None), bad


def _same(a: pa.Table, b: pa.Table) -> None:
    assert a.schema == b.schema
    key = lambda r: str(r["service"])  # noqa: E731
    for x, y in zip(sorted(a.to_pylist(), key=key), sorted(b.to_pylist(), key=key), strict=True):
        for k in x:
            if isinstance(x[k], float):
                assert math.isclose(x[k], y[k], rel_tol=1e-12) or (math.isnan(x[k]) and math.isnan(y[k])), (k, x, y)
            elif isinstance(x[k], list):  # percentile_approx's partial state: the values, in any order
                assert sorted(x[k], key=repr) == sorted(y[k], key=repr), k
            else:
                assert x[k] == y[k], (k, x, y)


def _check(path: str) -> str:
    """Scan and Arrow way agree; returns which way the scan went ("scanned" or "fell back")."""
    lines = object_lines(path, cr=False)
    table, bad = _arrow_way(path)
    scan = JsonlScan.of({path: lines}) if lines else None
    done = _fused().run_files(scan, SCHEMA) if scan else None
    if done is None:
        return "fell back"
    assert not bad, f"the scan took a file whose Arrow read has row errors: {bad}"
    states, stats, partial = done
    want = _fused().run(table)
    assert want is not None
    _same(states, want[0])
    strip = lambda s: {k: {**v.as_dict(), "seconds": 0} for k, v in s.items()}  # noqa: E731
    assert strip(stats) == strip(want[1]) and partial.rows_in == want[2].rows_in
    assert stats[0].rows_in == lines == table.num_rows
    return "scanned"


def _row(i: int, **over) -> dict:
    row = {"service": "abc"[i % 3], "level": ["DEBUG", "INFO", "WARN"][i % 3 if i % 4 else 1], "lat": None if i % 7 == 0 else i * 1.25,
           "msg": f"code={[200, 500, 503][i % 3]}", "n": i, "big": 2**40 + i, "ok": i % 2 == 0, "host": "h",
           "ctx": {"region": ["eu", "us"][i % 2], "attempt": i % 3, "inner": {"w": i / 3}}}
    return {**row, **over}


GOOD = [_row(i) for i in range(30)]
ODD = {  # one line each; "scanned": DuckDB takes the file and gives what the Arrow way gives; "fell back": it must not take it
    "string fields holding other kinds": ({"msg": 5, "service": {"é": [1.5, None, True, "ü\n"]}, "level": 1e20}, "scanned"),
    "missing fields and nulls": ({"lat": None, "ctx": None, "n": None}, "scanned"),
    "extra fields": ({"extra": {"deep": [1]}}, "scanned"),
    "an integer for a double": ({"lat": 7}, "scanned"),
    "a huge double": ({"lat": 1e308}, "scanned"),
    "infinities for a double": ({"lat": float("inf"), "ctx": {"inner": {"w": float("-inf")}}}, "scanned"),
    "a negative int and bigint": ({"n": -(2**31), "big": -(2**63)}, "scanned"),
    "a string for a double, on a line the filter drops": ({"lat": "1.5", "level": "DEBUG"}, "fell back"),
    "a float for an int": ({"n": 1.5}, "fell back"),
    "an integral float for an int": ({"n": 2.0}, "fell back"),
    "an int out of range": ({"n": 2**31}, "fell back"),
    "a bigint out of range": ({"big": 2**63}, "fell back"),
    "a number for a boolean": ({"ok": 1}, "fell back"),
    "a string for a boolean": ({"ok": "true"}, "fell back"),
    "a float for an int in a struct, on a line the filter drops": ({"ctx": {"attempt": 1.5}, "level": "DEBUG"}, "fell back"),
    "a string for a struct": ({"ctx": "eu"}, "fell back"),
    "a string for a double in a nested struct": ({"ctx": {"inner": {"w": "x"}}}, "fell back"),
    "a string for a double no step reads": ({"spare": "1.5"}, "fell back"),
    "a boolean for a double no step reads": ({"spare": False}, "fell back"),
    "an int for a double no step reads": ({"spare": -3}, "scanned"),
    "a float for an int no step reads": ({"ctx": {"attempt": 1.5}}, "fell back"),
    "a string for an int no step reads": ({"ctx": {"attempt": "1"}}, "fell back"),
    "an int out of range no step reads": ({"tries": -(2**31) - 1}, "fell back"),
    "an int no step reads": ({"tries": 2**31 - 1}, "scanned"),
}


@pytest.mark.parametrize("name", list(ODD))
def test_an_odd_line_among_good_ones(tmp_path, name):
    over, way = ODD[name]
    path = tmp_path / "f.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [*GOOD[:10], _row(10, **over), *GOOD[11:]]), encoding="utf-8")
    assert _check(str(path)) == way


RAW = {  # file bodies: a lone CR, a blank line or another shape sends the file the Arrow way
    "a blank line": b"\n".join(json.dumps(r).encode() for r in GOOD[:3]) + b"\n\n" + json.dumps(GOOD[3]).encode() + b"\n",
    "a null line": json.dumps(GOOD[0]).encode() + b"\nnull\n",
    "a CRLF file": b"".join(json.dumps(r).encode() + b"\r\n" for r in GOOD[:5]),
    "a lone CR": json.dumps(GOOD[0]).encode() + b"\r" + json.dumps(GOOD[1]).encode() + b"\n",
    "a CR last": json.dumps(GOOD[0]).encode() + b"\r\n" + json.dumps(GOOD[1]).encode() + b"\r",
    "a bad line": json.dumps(GOOD[0]).encode() + b'\n{"service": \n',
    "two objects on a line": json.dumps(GOOD[0]).encode() + json.dumps(GOOD[1]).encode() + b"\n",
    "a duplicate key": b'{"service": "a", "service": "b", "level": "INFO"}\n',
    "a NaN literal": b'{"service": "a", "level": "INFO", "lat": NaN}\n{"service": "a", "level": "INFO", "lat": 2.0}\n',
    "an exponent for an int": b'{"service": "a", "level": "DEBUG", "n": 1e2}\n',
    "a capital exponent for an int": b'{"service": "a", "level": "DEBUG", "n": 1E2}\n',
    "a NaN for an int": b'{"service": "a", "level": "DEBUG", "n": NaN}\n',
    "a negative zero for an int": b'{"service": "a", "level": "DEBUG", "n": -0}\n',
    "an infinity for a bigint": b'{"service": "a", "level": "DEBUG", "big": -Infinity}\n',
    "no last line break": b"\n".join(json.dumps(r).encode() for r in GOOD[:4]),
    "bytes that are not UTF-8": b'{"service": "\xff", "level": "INFO"}\n',
}


@pytest.mark.parametrize("name", list(RAW))
def test_file_shapes(tmp_path, name):
    path = tmp_path / "f.jsonl"
    path.write_bytes(RAW[name])
    way = _check(str(path))
    assert way == ("scanned" if name in ("a CRLF file", "a NaN literal", "no last line break", "a negative zero for an int") else "fell back")


def test_a_path_duckdb_would_expand_falls_back(tmp_path):
    path = tmp_path / "logs[1].jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in GOOD), encoding="utf-8")
    assert _check(str(path)) == "fell back"


_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=5),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)
_FIELDS = st.sampled_from(["service", "level", "lat", "msg", "n", "big", "ok", "ctx"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 29), st.dictionaries(_FIELDS, _VALUES, max_size=2)), min_size=1, max_size=6))
def test_any_values_give_the_arrow_ways_states_or_fall_back(tmp_path, lines):
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(_row(i, **over), ensure_ascii=False) + "\n" for i, over in lines), encoding="utf-8")
    _check(str(path))


def test_files_scanned_together_give_the_states_of_their_arrow_reads(tmp_path):
    """One query over several files: a group's smallest source is found in whichever file holds it, its lines counted in that file."""
    bodies = {"a.jsonl": GOOD[:7], "a.jsonl.2": [_row(i, service="z") for i in range(12)], "b.jsonl": [*GOOD[3:25], _row(40, service="z")]}
    for name, rows in bodies.items():
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    paths = [str(tmp_path / name) for name in reversed(bodies)]
    scan = JsonlScan.of({p: object_lines(p, cr=False) for p in paths})
    states, stats, partial = _fused().run_files(scan, SCHEMA)
    want = _fused().run(pa.concat_tables(_arrow_way(p)[0] for p in paths))
    _same(states, want[0])
    assert states.to_pylist()[[r["service"] for r in states.to_pylist()].index("z")]["__source__"] == f"{tmp_path}/a.jsonl.2#line=1"
    strip = lambda s: {k: {**v.as_dict(), "seconds": 0} for k, v in s.items()}  # noqa: E731
    assert strip(stats) == strip(want[1]) and partial.rows_in == want[2].rows_in and stats[0].rows_in == 7 + 12 + 23


def test_a_value_of_another_kind_in_one_file_fails_the_files_scanned_with_it(tmp_path):
    for name, rows in {"a.jsonl": GOOD, "b.jsonl": [*GOOD[:5], _row(5, n=1.5)]}.items():
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    files = {str(tmp_path / n): object_lines(str(tmp_path / n), cr=False) for n in ("a.jsonl", "b.jsonl")}
    assert _fused().run_files(JsonlScan.of(files), SCHEMA) is None
    assert _fused().run_files(JsonlScan.of({str(tmp_path / "a.jsonl"): 30}), SCHEMA) is not None


@pytest.mark.parametrize(("other", "together"), [("/d/a.1", True), ("/d/b", True), ("/d/a b", False), ("/d/a#1", False), ("/d/a!", False)])
def test_files_are_scanned_together_only_where_their_ranks_sort_as_their_sources(other, together):
    """``/d/a#line=9`` sorts after ``/d/a b#line=1`` though ``/d/a`` sorts first: such files are scanned one by one."""
    assert (JsonlScan.of({"/d/a": 3, other: 3}) is not None) == together
    assert JsonlScan.of({other: 3}) is not None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["a", "a.1", "ab", "b"]), st.integers(0, 29), st.dictionaries(_FIELDS, _VALUES, max_size=1)), min_size=1, max_size=12))
def test_files_scanned_together_give_the_arrow_ways_states_or_fail_together(tmp_path, rows):
    """Rows spread over files whose names are prefixes of each other: one query gives what the files' Arrow reads give together."""
    for f in tmp_path.glob("*.jsonl*"):
        f.unlink()
    for name, i, over in rows:
        with open(tmp_path / f"{name}.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(_row(i, **over), ensure_ascii=False) + "\n")
    paths = sorted(str(p) for p in tmp_path.glob("*.jsonl"))
    reads = [_arrow_way(p) for p in paths]
    done = _fused().run_files(JsonlScan.of({p: object_lines(p, cr=False) for p in paths}), SCHEMA)
    if any(bad for _, bad in reads):
        assert done is None
        return
    want = _fused().run(pa.concat_tables(t for t, _ in reads))
    assert done is not None and want is not None
    _same(done[0], want[0])


def test_a_declared_field_named_like_the_readers_own_column_keeps_the_arrow_way():
    """DuckDB's ``file_index`` (the row's file) would be hidden by a top-level field of that name; one inside a struct hides nothing."""
    from dataflow.runtime.jsonl_scan import supported

    assert not supported(arrow_schema({**DECLARED, "file_index": "bigint"}))
    assert not supported(arrow_schema({**DECLARED, "File_Index": "string"}))
    assert supported(arrow_schema({**DECLARED, "ctx": "struct<file_index: int>"}))


@pytest.mark.parametrize("codec", ["gz", "zst"])
def test_gzip_and_zstd_files_are_scanned_as_their_lines(tmp_path, codec):
    """DuckDB decompresses them by their names (several members or frames): the states of the same lines read the Arrow way."""
    import gzip

    import zstandard

    compress = {"gz": gzip.compress, "zst": zstandard.ZstdCompressor().compress}[codec]
    lines = [json.dumps(r) + "\n" for r in GOOD]
    path = tmp_path / f"a.jsonl.{codec}"
    path.write_bytes(compress("".join(lines[:11]).encode()) + compress("".join(lines[11:]).encode()))
    assert _check(str(path)) == "scanned"
