"""``get_json_object`` by Spark's rules on Ray (``json_path``): the values Spark 4 gave for the same JSON text and path
(``get_json_object(j, p)`` over a column), through the DuckDB SQL the step runs, and DuckDB's fast path equal to the rules."""
from __future__ import annotations

import inspect
import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataflow.ops.table import duck
from dataflow.ops.table.json_path import duckdb_path, extract, steps
from dataflow.ops.table.sql import duckdb_sql, parse

#: (JSON text, path, Spark's value; None where Spark gives NULL).
SPARK = [
    # a wildcard: an array of the matches, one match alone (a string quoted), none NULL
    ('{"a":[{"b":1},{"b":2}]}', "$.a[*].b", "[1,2]"), ('{"a":[{"b":1}]}', "$.a[*].b", "1"), ('{"a":[{"b":"x"},{"b":"y"}]}', "$.a[*].b", '["x","y"]'),
    ('{"a":[{"b":"x"}]}', "$.a[*].b", '"x"'), ('{"a":[1,2,3]}', "$.a[*]", "[1,2,3]"), ('{"a":[1]}', "$.a[*]", "1"), ('{"a":["x"]}', "$.a[*]", '"x"'),
    ('{"a":[]}', "$.a[*]", None), ('{"a":[{"c":1},{"b":2}]}', "$.a[*].b", "2"), ('{"a":[{"c":1},{"d":2}]}', "$.a[*].b", None),
    ('{"a":[[1,2],[3]]}', "$.a[*][0]", "[1,3]"), ('{"a":[{"b":[1,2]},{"b":[3]}]}', "$.a[*].b", "[[1,2],[3]]"),
    ('{"a":[{"b":[1,2]},{"b":[3]}]}', "$.a[*].b[*]", "[[1,2],[3]]"), ('{"a":[{"b":[1,2]}]}', "$.a[*].b[*]", "[1,2]"), ('[{"b":1},{"b":2}]', "$[*].b", "[1,2]"),
    ('[1,2]', "$[*]", "[1,2]"), ('{"a":[1,null,2]}', "$.a[*]", "[1,null,2]"), ('{"a":[{"b":1},{"b":null}]}', "$.a[*].b", "1"),
    ('{"a":[{"b":"x\\"y"},{"b":"z"}]}', "$.a[*].b", '["x\\"y","z"]'), ('{"a":[{"b":1.50},{"b":2e3}]}', "$.a[*].b", "[1.5,2000.0]"),
    ('{"a":[{"b":{"c":1}},{"b":true}]}', "$.a[*].b", '[{"c":1},true]'), ('{"a":[[1,2],[3]]}', "$.a[*][*]", "[1,2,3]"), ('{"a":[[1,2],[3]]}', "$.a[*]", "[[1,2],[3]]"),
    ('{"a":[{"b":null}]}', "$.a[*].b", None), ('{"a":[null]}', "$.a[*]", "null"), ('{"a": [ 1 , 2 ]}', "$.a[*]", "[1,2]"),
    ('{"a":[{"b":"é"},{"b":"\\u00e9"}]}', "$.a[*].b", '["é","é"]'), ('{"a":[{"b":1},{"b":2}]}', "$.a[*].b[0]", None), ('{"a":{"b":[1,2]}}', "$.a.b[*]", "[1,2]"),
    ('{"a":[{"b":[]},{"b":[]}]}', "$.a[*].b[*]", None), ('{"a":[{"b":[]},{"b":[1]}]}', "$.a[*].b[*]", "[],[1]"), ('{"a":[{"b":"x"},{"b":2}]}', "$.a[*].b", '["x",2]'),
    ('{"a":"x"}', "$.a[*]", None), ('{"a":{"b":1}}', "$.a[*]", None), ('{"a":[{"b":1},{"b":2}]} xyz', "$.a[*].b", "[1,2]"),
    ('{"a":[{"b":1},{"b":2}]', "$.a[*].b", None), ('{"a":[{"b":1},{"b":2}], "c": }', "$.a[*].b", None), ('{"a":["x\ty","z"]}', "$.a[*]", '["x\\ty","z"]'),
    ('{"a":[1e400, 1e-5, 1e7, 123456789.0, 0.001, -0.0]}', "$.a[*]", '["Infinity",1.0E-5,1.0E7,1.23456789E8,0.001,-0.0]'),
    # paths: Spark's grammar
    ('{"*":1}', "$.*", None), ('{"a":{"b":1}}', "$.a.*", None), ('{"a":1}', "$..a", None), ('{"a b":1}', "$['a b']", "1"), ('{"a b":1}', "$.a b", "1"),
    ('{"a]":1}', "$.a]", "1"), ('{"a":1}', "$ .a", None), ('{"a":1}', " $.a", None), ('{"a":1}', "$.a ", None), ('{"a ":1}', "$.a ", "1"),
    ('{"a":[1,2]}', "$.a[01]", "2"), ('{"a":[1,2]}', "$.a[ 1]", "2"), ('{"a":[1,2]}', "$.a[1 ]", None), ('{"a":[1,2]}', "$.a[-1]", None),
    ('{"a":[1,2]}', "$.a[5]", None), ('{"a":1}', '$["a"]', None), ('{"":1}', "$['']", None), ('{"":1}', "$.", None), ('{"a":{"b":1}}', "$.a.b.", None),
    ('{"a":1}', "$$.a", None), ('{"a":[1]}', "$.a[0]x", None), ('{"a":1}', "$[a]", None), ('{"a":1}', "$[ 'a' ]", None), ('{"0":1}', "$.0", "1"),
    ('{"a":[5]}', "$.a[2147483648]", None), ('{"a.b":5}', "$['a.b']", "5"), ('{"a.b":1}', "$.a.b", None), ('{"a":1}', "a", None), ('{"a":1}', "", None),
    ('{"a":[1,2]}', "$.a['0']", None), ('{"a":{"0":5}}', "$.a['0']", "5"), ('[1,[2]]', "$[1][0]", "2"), ('{"a":1}', "$['a", None),
    # no wildcard: values as Spark writes them
    ('{"a":{"b":1.50,"c":2e3,"d":12345678901234567890123}}', "$.a", '{"b":1.5,"c":2000.0,"d":12345678901234567890123}'), ('{"a":1,"a":2}', "$.a", "1"),
    ('{"a":"x\ty"}', "$.a", "x\ty"), ('{"a":["x\ty"]}', "$.a", '["x\\ty"]'), ('{"a":1} xyz', "$.a", "1"), ('{"a":1} xyz', "$", '{"a":1}'),
    ('{"a":"\\u00e9\\n"}', "$.a", "é\n"), ('{"a":{"b":"\\u00e9\\n\\u0001/"}}', "$.a", '{"b":"é\\n\\u0001/"}'), ('{"a":-0}', "$.a", "0"), ('{"a":1.0}', "$.a", "1.0"),
    ('{"a":0.1e1}', "$.a", "1.0"), ('"str"', "$", "str"), ('5', "$", "5"), ('{a:1}', "$.a", None), ('{"a":01}', "$.a", None), ('{"a":"x"} ', "$.a", "x"),
    ('{"a":null}', "$.a", None), ('{"a":null}', "$", '{"a":null}'), ('{"a":1}', "$[0]", None),
    # a JSON null: the text 'null' at the root or an index, NULL at a field
    ("null", "$", "null"), ("  null ", "$", "null"), ("[null]", "$[0]", "null"), ('{"a":[[null]]}', "$.a[0][0]", "null"), ('{"a":{"b":null}}', "$.a.b", None),
    ('[{"a":null}]', "$[0].a", None), ("[1,null]", "$[*]", "[1,null]"), ("[null]", "$[*]", "null"),
]


def _ray(text: str, path: str) -> str | None:
    sql = duckdb_sql(parse("get_json_object(j, " + "'" + path.replace("\\", "\\\\").replace("'", "\\'") + "')"))
    return duck._connection().execute(f"SELECT {sql} FROM (SELECT CAST(? AS VARCHAR) AS j)", [text]).fetchall()[0][0]


@pytest.mark.parametrize(("text", "path", "spark"), SPARK)
def test_get_json_object_gives_sparks_value(text, path, spark):
    assert _ray(text, path) == spark


def test_json_nested_past_pythons_stack_is_null_not_a_failed_step():
    """How deep Python reads depends on the interpreter's recursion limit (libraries raise it): pinned low here."""
    deep = '{"a": ' + "[" * 300 + "1" + "]" * 300 + "}"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 100)
    try:
        assert extract(deep, ("a", None)) is None
    finally:
        sys.setrecursionlimit(limit)
    assert extract('{"a": [[[1]]]}', ("a", None)) == "[[1]]"


def test_the_path_is_read_by_sparks_grammar():
    assert steps("$.a[*]['b c'][ 2]") == ("a", None, "b c", 2)
    assert steps("$") == ()
    assert [steps(p) for p in ("a", "$.*", "$..a", "$['']", "$.a[-1]", "$.a[2147483648]", "$[a]")] == [None] * 7
    assert duckdb_path(("a b", 0)) == '$."a b"[0]' and duckdb_path(("a", None)) is None and duckdb_path(('a"b',)) is None


# Doubles where Java writes no exponent (DuckDB writes 1e7 as 10000000.0, Spark as 1.0E7: a difference the README lists).
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.text(max_size=5),
                     st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x == 0 or 1e-3 <= abs(x) < 1e7))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3), max_leaves=8)


@given(_VALUES, st.lists(st.sampled_from(["a", "b", 0, 1]), max_size=3))
@settings(max_examples=300, deadline=None)
def test_duckdbs_fast_path_gives_what_the_rules_give(value, path):
    """Valid JSON (unique names) without a wildcard is read by DuckDB's ``->>``: the same text as Spark's rules (``extract``)."""
    text = json.dumps(value)
    spark_path = "$" + "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in path)
    assert _ray(text, spark_path) == extract(text, tuple(path))
